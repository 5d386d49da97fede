"""The curator's pages. Thin: parse input, fetch through a user-aware selector, call one service.

Each view renders its full page, or only the named partial htmx asked for, so every page also
works as plain navigation without JavaScript.
"""

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from memoryproject.errors import DomainError, NotFound
from sessions_app import selectors as session_selectors
from vault import selectors, services
from vault.forms import (
    EntryFilterForm,
    EntryForm,
    ProjectContextForm,
    SearchForm,
    TaskToggleForm,
    TokenCreateForm,
)
from vault.models import Category, EntrySource, EntryStatus
from vault.render import bar_chart, diff_html, highlight

UNPROCESSABLE = 422
DASHBOARD_GROWTH_DAYS = 14


def is_htmx(request) -> bool:
    return request.headers.get("HX-Request") == "true"


def actor(request) -> str:
    return f"user:{request.user.get_username()}"


def curator_required(view):
    """Login (anonymous → login page), then staff or curator group (else 403); NotFound → 404."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            if is_htmx(request):
                response = HttpResponse(status=204)
                response["HX-Redirect"] = f"{reverse(settings.LOGIN_URL)}?next={request.get_full_path()}"
                return response
            return redirect_to_login(request.get_full_path())
        if not selectors.user_is_curator(request.user):
            raise PermissionDenied("Curator pages need staff status or the curator group.")
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.detail) from None

    return wrapper


def _form_errors(form, exc: DomainError) -> None:
    """Put a service's error on the form fields it names, or on the form as a whole."""
    placed = False
    for error in exc.errors:
        field = (error.get("loc") or [None])[-1]
        if field in form.fields:
            form.add_error(field, exc.detail)
            placed = True
            break
    if not placed:
        form.add_error(None, exc.detail)


# --- Dashboard and search --------------------------------------------------------------------------


@curator_required
def dashboard(request):
    projects = selectors.projects_for_user(request.user)
    agents = selectors.dashboard_agents(request.user)
    pending = selectors.review_counts_for_user(request.user)
    last_runs = selectors.last_compaction_runs_for_user(request.user)
    by_project = {
        project.pk: {
            "project": project,
            "agents": [],
            "pending": pending.get(project.pk, 0),
            "last_run": last_runs.get(project.pk),
            "stats": session_selectors.project_stats(project.pk, days=DASHBOARD_GROWTH_DAYS),
        }
        for project in projects
    }
    for row in agents:
        by_project[row["agent"].project_id]["agents"].append(row)
    for group in by_project.values():
        growth = group["stats"]["growth"]
        group["growth_chart"] = bar_chart(
            [(day["date"], day["entries"] + day["messages"]) for day in growth], height=60
        )
        group["growth_sessions"] = sum(day["sessions"] for day in growth)
        group["growth_entries"] = sum(day["entries"] for day in growth)
    return render(
        request,
        "vault/dashboard.html",
        {
            "projects": list(by_project.values()),
            "categories": Category.choices,
            "recent": selectors.entries_recent_for_user(request.user, limit=10),
            "chart": bar_chart(selectors.entries_created_per_day(request.user, days=30)),
        },
    )


@curator_required
def search(request):
    form = SearchForm(request.GET)
    query = form.cleaned_data["q"].strip() if form.is_valid() else ""
    results = [
        {"entry": entry, "snippet": highlight(entry.content, query)}
        for entry in selectors.entries_search_for_user(request.user, query)
    ]
    template = "vault/search.html#results" if is_htmx(request) else "vault/search.html"
    return render(request, template, {"form": form, "query": query, "results": results})


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
            _form_errors(form, exc)
        else:
            messages.success(request, f"Entry #{entry.pk} created.")
            url = reverse("vault-agent", args=[agent.project.slug, agent.slug])
            return redirect(f"{url}?category={entry.category}")
    context = _vault_context(request, agent, create_form=form)
    context["create_open"] = True
    return render(request, "vault/agent.html", context, status=UNPROCESSABLE)


# --- One entry -------------------------------------------------------------------------------------


def _card(request, entry, *, status=200, note=""):
    return render(request, "vault/agent.html#entry-card", {"entry": entry, "note": note}, status=status)


@curator_required
def entry_detail(request, entry_id):
    entry = selectors.entry_get_for_user(request.user, entry_id)
    versions = list(selectors.entry_history(entry))
    # Each version is diffed against the state that replaced it: the next newer version, or now.
    # Versions are numbered per entry, oldest 1 (their ids are global and mean nothing here).
    history = []
    newer, newer_label = entry, "current"
    for index, version in enumerate(versions):
        number = len(versions) - index
        label = f"version {number} ({version.get_action_display().lower()})"
        history.append(
            {
                "version": version,
                "number": number,
                "diff": diff_html(
                    version.content, newer.content, before_label=label, after_label=newer_label
                ),
                "changed": version.content != newer.content,
                "fields_changed": [
                    field
                    for field in ("category", "importance", "tags", "status")
                    if getattr(version, field) != getattr(newer, field)
                ],
            }
        )
        newer, newer_label = version, label
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
    if request.method == "POST":
        form = EntryForm(request.POST)
        if form.is_valid():
            try:
                entry = services.entry_update(
                    entry_id=entry.pk,
                    changes=services.EntryChanges(
                        category=form.cleaned_data["category"],
                        content=form.cleaned_data["content"],
                        tags=form.cleaned_data["tags"],
                        importance=form.cleaned_data["importance"],
                        status=form.cleaned_data["status"],
                    ),
                    changed_by=actor(request),
                )
            except DomainError as exc:
                _form_errors(form, exc)
            else:
                if is_htmx(request):
                    return _card(request, entry, note="Saved; the previous text is in the history.")
                messages.success(request, f"Entry #{entry.pk} saved.")
                return redirect("vault-entry-detail", entry.pk)
        status = UNPROCESSABLE
    else:
        form = EntryForm.for_entry(entry)
    context = {"entry": entry, "form": form, "project": entry.project, "agent": entry.agent}
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
        messages.success(request, f"Entry #{entry.pk} deleted; its last text is kept in the history.")
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
    if form.is_valid():
        try:
            entry = services.entry_task_toggle(
                entry_id=entry.pk,
                line=form.cleaned_data["line"],
                done=form.cleaned_data["done"],
                changed_by=actor(request),
            )
        except DomainError as exc:
            note, status = exc.detail, UNPROCESSABLE
    else:
        note, status = "That task could not be read; reload and try again.", UNPROCESSABLE
    if is_htmx(request):
        return _card(request, entry, status=status, note=note)
    if note:
        messages.error(request, note)
    return redirect("vault-entry-detail", entry.pk)


@curator_required
@require_POST
def entry_restore(request, entry_id, version_id):
    entry = selectors.entry_get_for_user(request.user, entry_id)
    version = selectors.entry_version_get(entry, version_id)
    newest_first = list(selectors.entry_history(entry).values_list("pk", flat=True))
    number = len(newest_first) - newest_first.index(version.pk)  # per entry, oldest 1
    services.entry_restore(entry_id=entry.pk, version_id=version.pk, changed_by=actor(request))
    messages.success(request, f"Restored version {number}; the text it replaced is in the history.")
    return redirect("vault-entry-detail", entry.pk)


# --- Project settings ------------------------------------------------------------------------------


def _settings_page(request, project, *, context_form=None, token_form=None, new_secret=None, status=200):
    return render(
        request,
        "vault/project_settings.html",
        {
            "project": project,
            "context_form": context_form or ProjectContextForm(initial={"content": project.context}),
            "context_versions": selectors.project_context_history(project),
            "token_form": token_form or TokenCreateForm(project=project),
            "tokens": selectors.token_list_for_project(project),
            "new_secret": new_secret,
        },
        status=status,
    )


@curator_required
def project_settings(request, project):
    project = selectors.project_get_for_user(request.user, project)
    return _settings_page(request, project)


@curator_required
@require_POST
def project_context_update(request, project):
    project = selectors.project_get_for_user(request.user, project)
    form = ProjectContextForm(request.POST)
    if form.is_valid():
        try:
            services.project_context_set(
                project=project, content=form.cleaned_data["content"], changed_by=actor(request)
            )
        except DomainError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, "Project context saved; the previous text is kept as a version.")
            return redirect("vault-project-settings", project.slug)
    return _settings_page(request, project, context_form=form, status=UNPROCESSABLE)


@curator_required
@require_POST
def token_create(request, project):
    project = selectors.project_get_for_user(request.user, project)
    form = TokenCreateForm(request.POST, project=project)
    if form.is_valid():
        try:
            token, secret = services.token_create(
                project=project,
                agent=form.cleaned_data["agent"],
                scope=form.cleaned_data["scope"],
                name=form.cleaned_data["name"],
            )
        except DomainError as exc:
            _form_errors(form, exc)
        else:
            # The secret is shown on this response only: it is not stored and not redirected with.
            return _settings_page(request, project, new_secret={"token": token, "secret": secret}, status=201)
    return _settings_page(request, project, token_form=form, status=UNPROCESSABLE)


@curator_required
@require_POST
def token_revoke(request, project, token_id):
    project = selectors.project_get_for_user(request.user, project)
    token = selectors.token_get_for_user(request.user, project, token_id)
    services.token_revoke(token=token)
    messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("vault-project-settings", project.slug)
