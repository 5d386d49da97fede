"""The review queue: approve, edit and approve, reject, merge, in bulk."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.html import escape
from django.views.decorators.http import require_POST

from memoryproject.errors import DomainError
from vault import selectors, services
from vault.forms import (
    ReviewActionForm,
    ReviewBulkForm,
)
from vault.models import Category
from vault.views.access import UNPROCESSABLE, actor, curator_required, is_htmx


@curator_required
def review_queue(request, project):
    project = selectors.project_get_for_user(request.user, project)
    category = request.GET.get("category") or None
    if category not in Category.values:
        category = None
    queue = list(selectors.review_queue_for_user(request.user, project, category=category)[:500])
    for entry in queue:  # "Merge into #" starts at the other side of an open duplicate or conflict
        entry.merge_target = next(
            (i.other_entry_id for i in entry.review_items.all() if i.other_entry_id and not i.resolved_at),
            "",
        )
    return render(
        request,
        "vault/review.html",
        {"project": project, "queue": queue, "category": category, "categories": Category.choices},
    )


def _review_done(request, project, note: str, *, error: bool = False):
    if is_htmx(request):
        response = HttpResponse(
            f'<p class="note error" role="alert">{escape(note)}</p>'
            if error
            else f'<p class="note" role="status">{escape(note)}</p>'
        )
        if error:
            response.status_code = UNPROCESSABLE
        return response
    (messages.error if error else messages.success)(request, note)
    return redirect("vault-review", project.slug)


@curator_required
@require_POST
def review_act(request, project, entry_id):
    project = selectors.project_get_for_user(request.user, project)
    entry = selectors.entry_get_for_user(request.user, entry_id)
    if entry.project_id != project.pk:
        return _review_done(request, project, f"Entry {entry_id} is not in this project.", error=True)
    form = ReviewActionForm(request.POST)
    if not form.is_valid():
        if "action" not in form.errors and "into" in form.errors:
            into = request.POST.get("into", "")[:20]
            note = f"Cannot merge into #{into}: not a valid entry id (a whole number from 1)."
            return _review_done(request, project, note, error=True)
        return _review_done(request, project, "Choose approve, reject or merge.", error=True)
    data, by = form.cleaned_data, actor(request)
    try:
        if data["action"] == "approve":
            services.review_approve(
                entry_id=entry.pk,
                by=by,
                content=data["content"] if data["content"].strip() else None,
                supersede_conflicting=data["supersede_conflicting"],
                seen_updated_at=data["seen_updated_at"],
            )
            note = f"Entry #{entry.pk} approved."
        elif data["action"] == "reject":
            services.review_reject(
                entry_id=entry.pk, by=by, reason=data["reason"], seen_updated_at=data["seen_updated_at"]
            )
            note = f"Entry #{entry.pk} rejected (kept for the audit)."
        else:
            if not data["into"]:
                return _review_done(request, project, "Give the id of the entry to merge into.", error=True)
            target = selectors.entry_get_for_user(request.user, data["into"])
            services.review_merge(
                entry_id=entry.pk, into_id=target.pk, by=by, seen_updated_at=data["seen_updated_at"]
            )
            note = f"Entry #{entry.pk} merged into #{target.pk}."
    except DomainError as exc:
        return _review_done(request, project, exc.detail, error=True)
    return _review_done(request, project, note)


@curator_required
@require_POST
def review_bulk(request, project):
    project = selectors.project_get_for_user(request.user, project)
    form = ReviewBulkForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Select entries and approve or reject.")
        return redirect("vault-review", project.slug)
    pending = {e.pk for e in selectors.review_queue_for_user(request.user, project)}
    done, failed = 0, []
    for entry_id in form.cleaned_data["ids"]:
        if entry_id not in pending:
            failed.append(f"#{entry_id}: not pending in this project")
            continue
        seen = form.seen_updated_at(entry_id)
        try:
            if form.cleaned_data["action"] == "approve":
                services.review_approve(entry_id=entry_id, by=actor(request), seen_updated_at=seen)
            else:
                services.review_reject(entry_id=entry_id, by=actor(request), seen_updated_at=seen)
            done += 1
        except DomainError as exc:
            failed.append(f"#{entry_id}: {exc.detail}")
    verb = "approved" if form.cleaned_data["action"] == "approve" else "rejected"
    messages.success(request, f"{done} entr{'y' if done == 1 else 'ies'} {verb}.")
    if failed:
        messages.error(request, "Not done: " + "; ".join(failed))
    return redirect("vault-review", project.slug)
