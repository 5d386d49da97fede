"""An agent's vault page and its entries: create, read, edit, delete, tick tasks, restore versions.

Each view renders its full page, or only the named partial htmx asked for, so every page also works as
plain navigation without JavaScript.
"""

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from memoryproject.errors import DomainError, NotFound
from vault import selectors, services
from vault.forms import (
    EntryEditForm,
    EntryFilterForm,
    EntryForm,
    TaskToggleForm,
)
from vault.models import Category, EntrySource, EntryStatus
from vault.render import version_diffs
from vault.views.access import UNPROCESSABLE, actor, curator_required, form_errors, is_htmx

# --- Agent vault -----------------------------------------------------------------------------------


def _vault_context(request, agent, *, create_form=None):
    filters = EntryFilterForm(request.GET)
    cleaned = filters.cleaned_data if filters.is_valid() else {}
    status = cleaned.get("status") or EntryStatus.ACTIVE
    counts = selectors.category_counts(agent, status=None if status == "all" else status)
    # No category asked for: open the first tab that has entries rather than an empty one.
    category = cleaned.get("category") or next(
        (value for value in Category.values if counts[value]), Category.DECISIONS
    )
    entries = selectors.entry_list(
        agent=agent,
        category=category,
        status=None if status == "all" else status,
        tag=cleaned.get("tag") or None,
        source=cleaned.get("source") or None,
    )
    page = Paginator(entries, settings.MEMORY_UI_PAGE_SIZE).get_page(request.GET.get("page"))
    return {
        "agent": agent,
        "project": agent.project,
        "vault_url": reverse("vault-agent", args=[agent.project.slug, agent.slug]),
        "filters": filters,
        "category": category,
        "status": status,
        "tabs": [(value, label, counts[value]) for value, label in Category.choices],
        "page": page,
        "tags": selectors.agent_tags(agent),
        "sources": EntrySource.choices,
        "create_form": create_form or EntryForm(initial={"category": category}),
    }


@curator_required
def agent_vault(request, project, agent):
    agent = selectors.agent_get_for_user(request.user, project, agent)
    context = _vault_context(request, agent)
    template = "vault/agent.html#vault-panel" if is_htmx(request) else "vault/agent.html"
    return render(request, template, context)


@curator_required
@require_POST
def entry_create(request, project, agent):
    agent = selectors.agent_get_for_user(request.user, project, agent)
    form = EntryForm(request.POST)
    if form.is_valid():
        try:
            entry = services.entry_create(
                agent=agent,
                category=form.cleaned_data["category"],
                content=form.cleaned_data["content"],
                tags=form.cleaned_data["tags"],
                importance=form.cleaned_data["importance"],
                status=form.cleaned_data["status"],
                source=EntrySource.UI,
                created_by=actor(request),
            )
        except DomainError as exc:
            form_errors(form, exc)
        else:
            messages.success(request, f"Entry #{entry.pk} created.")
            url = reverse("vault-agent", args=[agent.project.slug, agent.slug])
            return redirect(f"{url}?category={entry.category}")
    context = _vault_context(request, agent, create_form=form)
    context["create_open"] = True
    return render(request, "vault/agent.html", context, status=UNPROCESSABLE)


# --- One entry -------------------------------------------------------------------------------------


# Where the keyboard focus goes once a card is swapped in (data-focus, static/js/app.js).
CARD_EDIT_BUTTON = ".entry-actions a"


def _card(request, entry, *, status=200, note="", focus=CARD_EDIT_BUTTON):
    return render(
        request,
        "vault/agent.html#entry-card",
        {"entry": entry, "note": note, "focus": focus},
        status=status,
    )


def _history(entry, *, live: bool):
    """The entry's versions, each with its diff against what replaced it (the live entry's text for
    the newest, when the entry is not deleted)."""
    versions = list(selectors.entry_history(entry))
    return version_diffs(
        entry if live else None,
        versions,
        total=len(versions),
        describe=lambda v: f" ({v.get_action_display().lower()})",
        fields=("category", "importance", "tags", "status"),
    )


def _deleted_detail(request, entry_id):
    """A deleted entry's page: its history, each version restorable."""
    entry = selectors.entry_deleted_get_for_user(request.user, entry_id)
    history = _history(entry, live=False)
    context = {"entry": entry, "project": entry.project, "agent": entry.agent, "history": history}
    return render(request, "vault/entry_deleted.html", context)


@curator_required
def entry_detail(request, entry_id):
    try:
        entry = selectors.entry_get_for_user(request.user, entry_id)
    except NotFound:
        return _deleted_detail(request, entry_id)
    history = _history(entry, live=True)
    return render(
        request,
        "vault/entry_detail.html",
        {
            "entry": entry,
            "project": entry.project,
            "agent": entry.agent,
            "history": history,
            "chain": selectors.entry_chain(entry),
            "superseded_by": selectors.entry_superseded_by(entry),
            "review_items": selectors.entry_review_items(entry),
        },
    )


@curator_required
def entry_card(request, entry_id):
    entry = selectors.entry_get_for_user(request.user, entry_id)
    if not is_htmx(request):
        return redirect("vault-entry-detail", entry.pk)
    return _card(request, entry)


@curator_required
@require_http_methods(["GET", "POST"])
def entry_edit(request, entry_id):
    entry = selectors.entry_get_for_user(request.user, entry_id)
    status = 200
    newer = None
    if request.method == "POST":
        form = EntryEditForm(request.POST)
        if form.is_valid():
            try:
                entry = services.entry_curator_update(
                    entry_id=entry.pk,
                    changes=services.EntryChanges(
                        category=form.cleaned_data["category"],
                        content=form.cleaned_data["content"],
                        tags=form.cleaned_data["tags"],
                        importance=form.cleaned_data["importance"],
                        status=form.cleaned_data["status"],
                    ),
                    changed_by=actor(request),
                    seen_updated_at=form.cleaned_data["seen_updated_at"],
                )
            except DomainError as exc:
                if exc.errors and exc.errors[0].get("loc") == [services.STALE_FORM_LOC]:
                    entry = newer = selectors.entry_get_for_user(request.user, entry_id)
                    form = EntryEditForm.over_newer(request.POST, entry)
                    form.add_error(None, exc.detail)
                else:
                    form_errors(form, exc)
            else:
                if is_htmx(request):
                    return _card(request, entry, note="Saved; the previous text is in the history.")
                messages.success(request, f"Entry #{entry.pk} saved.")
                return redirect("vault-entry-detail", entry.pk)
        status = UNPROCESSABLE
    else:
        form = EntryEditForm.for_entry(entry)
    context = {"entry": entry, "form": form, "project": entry.project, "agent": entry.agent, "newer": newer}
    template = "vault/agent.html#entry-edit" if is_htmx(request) else "vault/entry_edit.html"
    return render(request, template, context, status=status)


@curator_required
@require_http_methods(["GET", "POST"])
def entry_delete(request, entry_id):
    entry = selectors.entry_get_for_user(request.user, entry_id)
    if request.method == "POST":
        services.entry_delete(entry_id=entry.pk, deleted_by=actor(request))
        if is_htmx(request):
            return render(request, "vault/agent.html#entry-deleted", {"entry": entry})
        messages.success(
            request,
            f"Entry #{entry.pk} deleted; its last text is kept in the history, from where it can be restored.",
        )
        url = reverse("vault-agent", args=[entry.project.slug, entry.agent.slug])
        return redirect(f"{url}?category={entry.category}")
    context = {"entry": entry, "project": entry.project, "agent": entry.agent}
    template = "vault/agent.html#entry-delete-confirm" if is_htmx(request) else "vault/entry_delete.html"
    return render(request, template, context)


@curator_required
@require_POST
def entry_task_toggle(request, entry_id):
    entry = selectors.entry_get_for_user(request.user, entry_id)
    form = TaskToggleForm(request.POST)
    note = ""
    status = 200
    focus = CARD_EDIT_BUTTON
    if form.is_valid():
        focus = f'.task-toggle [name=line][value="{form.cleaned_data["line"]}"] ~ button'
        try:
            entry = services.entry_task_toggle(
                entry_id=entry.pk,
                line=form.cleaned_data["line"],
                done=form.cleaned_data["done"],
                changed_by=actor(request),
                task=form.cleaned_data["task"],
            )
        except NotFound:
            raise  # deleted meanwhile: the page's 404
        except DomainError as exc:
            note, status = exc.detail, UNPROCESSABLE
    else:
        note, status = "That task could not be read; reload and try again.", UNPROCESSABLE
    if is_htmx(request):
        return _card(request, entry, status=status, note=note, focus=focus)
    if note:
        messages.error(request, note)
    return redirect("vault-entry-detail", entry.pk)


@curator_required
@require_POST
def entry_restore(request, entry_id, version_id):
    try:
        entry, deleted = selectors.entry_get_for_user(request.user, entry_id), False
    except NotFound:
        entry, deleted = selectors.entry_deleted_get_for_user(request.user, entry_id), True
    version = selectors.entry_version_get(entry, version_id)
    newest_first = list(selectors.entry_history(entry).values_list("pk", flat=True))
    number = len(newest_first) - newest_first.index(version.pk)  # per entry, oldest 1
    try:
        services.entry_restore(entry_id=entry.pk, version_id=version.pk, changed_by=actor(request))
    except DomainError as exc:  # restored by someone else meanwhile, say
        messages.error(request, exc.detail)
    else:
        if deleted:
            messages.success(request, f"Entry #{entry.pk} restored from version {number}.")
        else:
            messages.success(request, f"Restored version {number}; the text it replaced is in the history.")
    return redirect("vault-entry-detail", entry.pk)


# --- Project settings ------------------------------------------------------------------------------
