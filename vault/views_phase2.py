"""Curator pages, phase 2: search over every kind, the review queue, sessions, workspace files,
maintenance and review/retention settings. Thin like vault.views: parse, select, call one service."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST

from memoryproject.errors import Conflict, DomainError
from sessions_app.models import SessionStatus
from vault import selectors, services
from vault.forms import (
    FileForm,
    FileSettingsForm,
    ReviewActionForm,
    ReviewBulkForm,
    ReviewPolicyForm,
    SearchFilterForm,
)
from vault.models import Category, RunTrigger
from vault.render import diff_html, highlight, markdown_html, snippet_markdown
from vault.views import UNPROCESSABLE, actor, curator_required, is_htmx

SEARCH_LIMIT = 30
PREVIEW_MAX_CHARS = 200_000

# --- Search ----------------------------------------------------------------------------------------


@curator_required
def search(request):
    from search.selectors import KINDS, SearchFilters

    form = SearchFilterForm(request.GET)
    query, results, error = "", [], ""
    if form.is_valid():
        data = form.cleaned_data
        query = data["q"].strip()
        if query:
            filters = SearchFilters(
                category=data["category"] or None,
                status=data["status"] or "active",
                kinds=(data["kind"],) if data["kind"] else KINDS,
                limit=SEARCH_LIMIT,
            )
            try:
                rows = selectors.search_for_user(
                    request.user, q=query, filters=filters, agent_slug=data["agent"] or None
                )
            except DomainError as exc:
                error = exc.detail
            else:
                results = [_result(row, query) for row in rows]
    else:
        error = "; ".join(f"{field}: {' '.join(errs)}" for field, errs in form.errors.items())
    context = {
        "form": form,
        "query": query,
        "results": results,
        "error": error,
        "agents": selectors.agents_for_user(request.user).order_by("project__slug", "slug"),
    }
    template = "vault/search.html#results" if is_htmx(request) else "vault/search.html"
    return render(request, template, context, status=UNPROCESSABLE if error else 200)


def _result(row: dict, query: str) -> dict:
    kind = row["kind"]
    if kind == "entry":
        url = reverse("vault-entry-detail", args=[row["id"]])
        title = f"Entry #{row['id']}"
    elif kind == "message":
        url = reverse("vault-session", args=[row["project"], row["agent"], row["session_id"]])
        url += f"#message-{row['id']}"
        title = f"{row['role']} message in session {row['session'] or row['session_id']}"
    else:
        url = reverse("vault-file", args=[row["project"], row["agent"]]) + f"?path={row['path']}"
        title = row["path"]
    # Entries and files are markdown and read as on their own pages; messages are plain text there.
    snippet = highlight if kind == "message" else snippet_markdown
    return {**row, "url": url, "title": title, "highlighted": snippet(row["text"], query)}


# --- Review queue ----------------------------------------------------------------------------------


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
            f'<p class="note{" error" if error else ""}" role="status">{escape(note)}</p>'
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
        return _review_done(request, project, "Choose approve, reject or merge.", error=True)
    data, by = form.cleaned_data, actor(request)
    try:
        if data["action"] == "approve":
            services.review_approve(
                entry_id=entry.pk,
                by=by,
                content=data["content"] if data["content"].strip() else None,
                supersede_conflicting=data["supersede_conflicting"],
            )
            note = f"Entry #{entry.pk} approved."
        elif data["action"] == "reject":
            services.review_reject(entry_id=entry.pk, by=by, reason=data["reason"])
            note = f"Entry #{entry.pk} rejected (kept for the audit)."
        else:
            if not data["into"]:
                return _review_done(request, project, "Give the id of the entry to merge into.", error=True)
            target = selectors.entry_get_for_user(request.user, data["into"])
            services.review_merge(entry_id=entry.pk, into_id=target.pk, by=by)
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
        try:
            if form.cleaned_data["action"] == "approve":
                services.review_approve(entry_id=entry_id, by=actor(request))
            else:
                services.review_reject(entry_id=entry_id, by=actor(request))
            done += 1
        except DomainError as exc:
            failed.append(f"#{entry_id}: {exc.detail}")
    verb = "approved" if form.cleaned_data["action"] == "approve" else "rejected"
    messages.success(request, f"{done} entr{'y' if done == 1 else 'ies'} {verb}.")
    if failed:
        messages.error(request, "Not done: " + "; ".join(failed))
    return redirect("vault-review", project.slug)


# --- Sessions --------------------------------------------------------------------------------------


@curator_required
def sessions_list(request, project, agent):
    from sessions_app import selectors as session_selectors

    agent = selectors.agent_get_for_user(request.user, project, agent)
    sessions = selectors.sessions_with_counts(agent)
    return render(
        request,
        "vault/sessions.html",
        {
            "agent": agent,
            "project": agent.project,
            "sessions": sessions,
            "checkpoint": session_selectors.checkpoint_get_valid(agent),
        },
    )


@curator_required
def session_detail(request, project, agent, session_id):
    from sessions_app import selectors as session_selectors

    agent = selectors.agent_get_for_user(request.user, project, agent)
    session = selectors.session_get_for_agent(agent, session_id)
    branches = session_selectors.branches_list(session)
    branch_name = request.GET.get("branch", "")
    chosen = next((b for b in branches if b["name"] == branch_name), None)
    if chosen is None:
        chosen = next((b for b in branches if b["active"]), None)
    conversation = (
        session_selectors.message_path(chosen["head"])
        if chosen
        else session_selectors.session_conversation(session)
    )
    checkpoint = session_selectors.checkpoint_get_valid(agent)
    archived = session.status == SessionStatus.ARCHIVED
    buffer_entries = list(session_selectors.buffer_entries(session))
    usage = None if archived else session_selectors.buffer_usage(session)
    if usage:
        usage["percent"] = round(100 * usage["context_tokens"] / max(usage["max_input_tokens"], 1), 1)
    return render(
        request,
        "vault/session_detail.html",
        {
            "agent": agent,
            "project": agent.project,
            "session": session,
            "archived": archived,
            "archived_messages": session_selectors.archive_messages(session) if archived else [],
            "can_archive": session.status in (SessionStatus.IDLE, SessionStatus.CLOSED),
            "branches": branches,
            "branch": chosen,
            "conversation": conversation,
            "state_entries": session_selectors.session_state_list(session),
            "checkpoint": checkpoint if checkpoint and checkpoint.session_id == session.pk else None,
            "handoff": selectors.handoff_latest(agent),
            "buffer_entries": buffer_entries,
            "buffer_usage": usage,
            "buffer_markdown": session_selectors.buffer_markdown(session, buffer_entries),
            "stats": session_selectors.session_stats(session),
        },
    )


def _session_lifecycle(request, project, agent, session_id, *, action: str):
    from sessions_app import services as session_services

    agent = selectors.agent_get_for_user(request.user, project, agent)
    session = selectors.session_get_for_agent(agent, session_id)
    url = reverse("vault-session", args=[agent.project.slug, agent.slug, session.pk])
    if request.POST.get("back") == "list":
        url = reverse("vault-sessions", args=[agent.project.slug, agent.slug])
    label = session.external_id or session.pk
    try:
        if action == "restore":
            session_services.session_restore(session=session, by=actor(request))
            note = f"Session {label} restored: its messages are back."
        elif session.status == SessionStatus.ACTIVE:
            raise Conflict("An active session is not archived; close it or wait until it is idle.")
        else:
            stored = session_services.session_archive(
                session=session, reason="archived by a curator", by=actor(request)
            )
            note = f"Session {label} archived ({stored.message_count} messages compressed)."
    except DomainError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, note)
    return redirect(url)


@curator_required
@require_POST
def session_archive(request, project, agent, session_id):
    return _session_lifecycle(request, project, agent, session_id, action="archive")


@curator_required
@require_POST
def session_restore(request, project, agent, session_id):
    return _session_lifecycle(request, project, agent, session_id, action="restore")


# --- Workspace files -------------------------------------------------------------------------------


def _file_context(agent, file, form=None):
    versions = list(selectors.file_history(file)[:20]) if file else []
    history, newer, newer_label = [], file.content if file else "", "current"
    total = selectors.file_history(file).count() if len(versions) == 20 else len(versions)
    for index, version in enumerate(versions):
        number = total - index  # per file, oldest 1: version ids are global
        label = f"version {number}"
        history.append(
            {
                "version": version,
                "number": number,
                "diff": diff_html(version.content, newer, before_label=label, after_label=newer_label),
            }
        )
        newer, newer_label = version.content, label
    return {
        "agent": agent,
        "project": agent.project,
        "files": selectors.files_list(agent=agent),
        "file": file,
        "form": form or (FileForm(initial={"path": file.path, "content": file.content}) if file else None),
        "preview": mark_safe(markdown_html(file.content)) if file else "",  # noqa: S308 - sanitised by nh3
        "history": history,
    }


@curator_required
@require_http_methods(["GET", "POST"])
def files(request, project, agent):
    agent = selectors.agent_get_for_user(request.user, project, agent)
    path = request.GET.get("path") or request.POST.get("path") or ""
    file = selectors.file_get(agent=agent, path=path) if path else None
    if request.method == "POST":
        form = FileForm(request.POST)
        if form.is_valid():
            try:
                services.file_write(
                    agent=agent, path=path, content=form.cleaned_data["content"], changed_by=actor(request)
                )
            except DomainError as exc:
                form.add_error(None, exc.detail)
            else:
                messages.success(request, f"{path} saved; the previous text is in the history.")
                return redirect(
                    reverse("vault-file", args=[agent.project.slug, agent.slug]) + f"?path={path}"
                )
        return render(request, "vault/files.html", _file_context(agent, file, form), status=UNPROCESSABLE)
    return render(request, "vault/files.html", _file_context(agent, file))


@curator_required
@require_POST
def file_preview(request, project, agent):
    selectors.agent_get_for_user(request.user, project, agent)
    content = request.POST.get("content", "")[:PREVIEW_MAX_CHARS]
    preview = mark_safe(markdown_html(content))  # noqa: S308 - sanitised by nh3
    return render(request, "vault/files.html#preview", {"preview": preview})


@curator_required
@require_POST
def file_settings(request, project, agent):
    agent = selectors.agent_get_for_user(request.user, project, agent)
    path = request.POST.get("path", "")
    selectors.file_get(agent=agent, path=path)
    form = FileSettingsForm(request.POST)
    url = reverse("vault-file", args=[agent.project.slug, agent.slug])
    if form.is_valid():
        try:
            services.file_settings_set(
                agent=agent,
                path=path,
                enabled=form.cleaned_data["enabled"],
                sort_order=form.cleaned_data["sort_order"],
            )
        except DomainError as exc:
            messages.error(request, exc.detail)
        else:
            messages.success(request, f"{path}: settings saved.")
    else:
        messages.error(request, "Sort order must be a whole number.")
    return redirect(f"{url}?path={path}" if request.POST.get("back") == "file" else url)


# --- Maintenance -----------------------------------------------------------------------------------


@curator_required
def maintenance(request, project):
    project = selectors.project_get_for_user(request.user, project)
    return render(
        request,
        "vault/maintenance.html",
        {
            "project": project,
            "runs": selectors.compaction_runs_for_project(project),
            "schedules": selectors.maintenance_schedules(),
            "audits": selectors.deletion_audits_for_project(project),
        },
    )


@curator_required
def maintenance_run(request, project, run_id):
    project = selectors.project_get_for_user(request.user, project)
    run = selectors.compaction_run_get(project, run_id)
    return render(request, "vault/maintenance_run.html", {"project": project, "run": run})


@curator_required
@require_POST
def compaction_start(request, project):
    project = selectors.project_get_for_user(request.user, project)
    dry_run = request.POST.get("dry_run") == "1"
    run = services.compaction_run(project=project, dry_run=dry_run, trigger=RunTrigger.ADMIN)
    if dry_run:
        context = {"project": project, "run": run, "preview": True}
        template = (
            "vault/maintenance_run.html#run-record" if is_htmx(request) else "vault/maintenance_run.html"
        )
        return render(request, template, context)
    messages.success(request, f"Compaction run {run.pk} finished: {len(run.changes)} change(s).")
    return redirect("vault-maintenance-run", project.slug, run.pk)


# --- Review policies and retention/redaction -------------------------------------------------------


@curator_required
@require_http_methods(["GET", "POST"])
def project_policies(request, project):
    project = selectors.project_get_for_user(request.user, project)
    status = 200
    if request.method == "POST":
        form = ReviewPolicyForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Unknown category or setting.")
            status = UNPROCESSABLE
        elif form.cleaned_data["redaction"]:
            services.project_redaction_set(project=project, enabled=form.cleaned_data["redaction"] == "1")
            messages.success(request, "Redaction " + ("on." if project.redaction_enabled else "off."))
            return redirect("vault-project-policies", project.slug)
        else:
            data = form.cleaned_data
            try:
                services.review_policy_set(
                    project=project,
                    category=data["category"],
                    hold_agent_writes=data["hold_agent_writes"],
                    hold_extracted=data["hold_extracted"],
                )
            except DomainError as exc:
                messages.error(request, exc.detail)
                status = UNPROCESSABLE
            else:
                messages.success(request, "Review policy saved.")
                return redirect("vault-project-policies", project.slug)
    policies = selectors.review_policies_for_project(project)
    rows = [
        {"category": value, "label": label, "policy": policies.get(value)}
        for value, label in [("", "All categories (default)"), *Category.choices]
    ]
    return render(
        request,
        "vault/policies.html",
        {
            "project": project,
            "rows": rows,
            "retention_enabled": settings.MEMORY_RETENTION_ENABLED,
            "retention_days": settings.MEMORY_RETENTION_DAYS,
            "redaction_patterns": settings.MEMORY_REDACTION_PATTERNS,
            "redaction_extra": settings.MEMORY_REDACTION_EXTRA_REGEX,
        },
        status=status,
    )
