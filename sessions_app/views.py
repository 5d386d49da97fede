"""The curator's session pages: an agent's sessions, one session (its branches, scan state, checkpoint,
buffer and stats), archive and restore. Thin: parse, select, call one service, render."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memoryproject.errors import DomainError
from sessions_app import recovery, selectors, services
from sessions_app.models import SessionStatus
from vault import selectors as vault_selectors
from vault.views.access import actor, curator_required


@curator_required
def sessions_list(request, project, agent):
    agent = vault_selectors.agent_get_for_user(request.user, project, agent)
    sessions = selectors.sessions_with_counts(agent)
    return render(
        request,
        "sessions_app/sessions.html",
        {
            "agent": agent,
            "project": agent.project,
            "sessions": sessions,
            "checkpoint": selectors.checkpoint_get_valid(agent),
        },
    )


@curator_required
def session_detail(request, project, agent, session_id):
    agent = vault_selectors.agent_get_for_user(request.user, project, agent)
    session = selectors.session_get_for_agent(agent, session_id)
    branches = selectors.branches_list(session)
    branch_name = request.GET.get("branch", "")
    chosen = next((b for b in branches if b["name"] == branch_name), None)
    if chosen is None:
        chosen = next((b for b in branches if b["active"]), None)
    conversation = (
        selectors.message_path(chosen["head"]) if chosen else selectors.session_conversation(session)
    )
    checkpoint = selectors.checkpoint_get_valid(agent)
    archived = session.status == SessionStatus.ARCHIVED
    buffer_entries = list(selectors.buffer_entries(session))
    usage = recovery.buffer_usage(session)
    return render(
        request,
        "sessions_app/session_detail.html",
        {
            "agent": agent,
            "project": agent.project,
            "session": session,
            "archived": archived,
            "archived_messages": selectors.archive_conversation(session) if archived else [],
            "branches": branches,
            "branch": chosen,
            "conversation": conversation,
            "state_entries": selectors.session_state_list(session),
            "checkpoint": checkpoint if checkpoint and checkpoint.session_id == session.pk else None,
            "handoff": vault_selectors.handoff_latest(agent),
            "buffer_entries": buffer_entries,
            "buffer_usage": None if usage["archived"] else usage,
            "buffer_markdown": recovery.buffer_markdown(session, buffer_entries),
            "stats": selectors.session_stats(session),
        },
    )


def _session_lifecycle(request, project, agent, session_id, *, action: str):
    agent = vault_selectors.agent_get_for_user(request.user, project, agent)
    session = selectors.session_get_for_agent(agent, session_id)
    url = reverse("session-detail", args=[agent.project.slug, agent.slug, session.pk])
    if request.POST.get("back") == "list":
        url = reverse("session-list", args=[agent.project.slug, agent.slug])
    label = session.external_id or session.pk
    try:
        if action == "restore":
            services.session_restore(session=session, by=actor(request))
            note = f"Session {label} restored: its messages are back."
        else:
            stored = services.session_archive(
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
