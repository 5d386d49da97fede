from typing import Literal

from django.http import FileResponse
from ninja import Query, Router, Status

from memoryproject.booleans import QueryBoolean
from memoryproject.errors import InvalidInput, NotFound
from memoryproject.llm import llm_deadline
from vault.api import agent_for_write
from vault.models import TokenScope
from vault.selectors import agent_get_for_principal
from vault.text import echoed
from vault.transfer import export

from . import recovery as recovery_reads
from . import selectors, services, session_files
from .schemas import (
    AppendOut,
    BranchIn,
    BranchOut,
    BufferOut,
    CheckoutIn,
    CheckoutOut,
    CheckpointIn,
    CheckpointOut,
    CompactIn,
    CompactOut,
    MessagePage,
    MessagesIn,
    RecoveryOut,
    RestoreOut,
    SessionOut,
    SessionStateOut,
    SessionStatsOut,
    SleepIn,
    SleepOut,
)

router = Router(tags=["sessions"])


# What a read of an archived session's conversation answers (selectors.session_listable_check).
ARCHIVED_SESSION_RESPONSE = {
    "description": "The session is archived (its messages in cold storage): restore it first",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
}


def _session_for_write(request, agent: str, session_id: str):
    request.auth.require(TokenScope.WRITE)
    return selectors.session_get_for_principal(request.auth, agent, session_id)


@router.post("/agents/{agent}/messages", response=AppendOut, summary="Append messages or save a conversation")
def messages_append(request, agent: str, payload: MessagesIn):
    target = agent_for_write(request, agent)
    if payload.agentId is not None and payload.agentId != target.slug:
        raise InvalidInput(
            f"agentId {echoed(payload.agentId)} does not match the agent in the path ({target.slug!r}).",
            [{"loc": ["agentId"], "msg": "does not match the path"}],
        )
    result = services.messages_append(
        agent=target,
        messages=[m.as_input() for m in payload.messages],
        session_key=payload.session_key,
        model_id=payload.model_id or "",
        full=payload.is_full,
        changed_by=request.auth.label,
        max_input_tokens=payload.max_input_tokens,
    )
    return result.as_dict()


@router.get(
    "/agents/{agent}/messages",
    response=MessagePage,
    summary="The conversation, oldest first",
    openapi_extra={"responses": {"409": ARCHIVED_SESSION_RESPONSE}},
)
def messages_list(
    request,
    agent: str,
    session: str | None = Query(None, max_length=200),
    limit: int | None = Query(None, ge=1, le=10_000),
    offset: int = Query(0, ge=0, le=10_000_000),
    order: Literal["asc", "desc"] = "asc",
    max_tokens: int | None = Query(None, ge=1, le=100_000_000),
    include_archived: QueryBoolean = False,
):
    target = agent_get_for_principal(request.auth, agent)
    found = selectors.session_find(target, session)
    if found is None and session:
        raise NotFound(f"Session {echoed(session)} of agent {echoed(agent)} not found.")
    if found is not None:
        selectors.session_listable_check(found, target.slug)
    conversation = selectors.session_conversation(found, active_only=not include_archived) if found else []
    items = selectors.messages_window(
        conversation, order=order, limit=limit, offset=offset, max_tokens=max_tokens
    )
    return {
        "session": found,
        "items": items,
        "count": len(conversation),
        "token_estimate": sum(selectors.message_tokens(m) for m in items),
    }


@router.get("/agents/{agent}/sessions", response=list[SessionOut], summary="Sessions and their chat ids")
def sessions_list(request, agent: str, limit: int = Query(50, ge=1, le=500)):
    target = agent_get_for_principal(request.auth, agent)
    return list(selectors.sessions_for_agent(target).select_related("active_branch")[:limit])


@router.get(
    "/agents/{agent}/session-state", response=SessionStateOut, summary="What the write-ahead scan recorded"
)
def session_state(request, agent: str, session: str | None = Query(None, max_length=200)):
    target = agent_get_for_principal(request.auth, agent)
    found = selectors.session_find(target, session)
    if found is None and session:
        raise NotFound(f"Session {echoed(session)} of agent {echoed(agent)} not found.")
    entries = list(selectors.session_state_list(found)) if found else []
    return {"session": found, "items": entries, "markdown": selectors.session_state_markdown(entries)}


@router.post("/agents/{agent}/checkpoint", response=CheckpointOut, summary="Save the session checkpoint")
def checkpoint_save(request, agent: str, payload: CheckpointIn):
    target = agent_for_write(request, agent)
    session = selectors.session_find(
        target, payload.session or payload.chat_id, field="session" if payload.session else "chat_id"
    )
    if payload.session and session is None:
        raise NotFound(f"Session {echoed(payload.session)} of agent {echoed(agent)} not found.")
    return services.checkpoint_save(
        agent=target,
        messages=[m.as_input() for m in payload.messages] if payload.messages is not None else None,
        session=session,
        chat_id=payload.chat_id or "",
        model_id=payload.model_id or "",
    )


@router.get("/agents/{agent}/checkpoint", response=CheckpointOut, summary="Recover the checkpoint")
def checkpoint_get(request, agent: str):
    target = agent_get_for_principal(request.auth, agent)
    checkpoint = selectors.checkpoint_get_valid(target)
    if checkpoint is None:
        raise NotFound(f"Agent {echoed(agent)} has no checkpoint younger than the validity window.")
    return checkpoint


@router.post(
    "/agents/{agent}/sleep", response=SleepOut, summary="Close the session: checkpoint, handoff, insights"
)
def sleep(request, agent: str, payload: SleepIn):
    target = agent_for_write(request, agent)
    result = services.session_close(
        agent=target,
        session_key=payload.session or payload.chat_id or "",
        messages=[m.as_input() for m in payload.messages] if payload.messages else None,
        summary=payload.summary,
        model_id=payload.model_id or "",
        changed_by=request.auth.label,
    )
    return {
        "session": result.session,
        "stored": len(result.appended.stored) if result.appended else 0,
        "checkpoint": result.checkpoint,
        "handoff": result.handoff,
        "decisions": result.decisions,
        "lessons": result.lessons,
        "warnings": result.appended.warnings if result.appended else [],
    }


@router.get(
    "/agents/{agent}/sessions/{session_id}/branches",
    response=list[BranchOut],
    summary="A session's branches",
    openapi_extra={"responses": {"409": ARCHIVED_SESSION_RESPONSE}},
)
def branches_list(request, agent: str, session_id: str):
    session = selectors.session_get_for_principal(request.auth, agent, session_id)
    selectors.session_listable_check(session, agent)
    return selectors.branches_list(session)


@router.post(
    "/agents/{agent}/sessions/{session_id}/branches",
    response={201: BranchOut},
    summary="Create a branch at a message (default: the head)",
)
def branch_create(request, agent: str, session_id: str, payload: BranchIn):
    session = _session_for_write(request, agent, session_id)
    message = None
    if payload.message:
        message = selectors.message_find(session, payload.message)
        if message is None:
            raise NotFound(f"Message {echoed(payload.message)} not found in this session.")
    branch = services.branch_create(session=session, name=payload.name, message=message)
    session.refresh_from_db()
    listed = next(b for b in selectors.branches_list(session) if b["name"] == branch.name)
    return Status(201, listed)


@router.post(
    "/agents/{agent}/sessions/{session_id}/checkout",
    response=CheckoutOut,
    summary="Check out a branch, or a message (time travel)",
)
def checkout(request, agent: str, session_id: str, payload: CheckoutIn):
    session = _session_for_write(request, agent, session_id)
    if bool(payload.branch) == bool(payload.message):
        raise InvalidInput(
            "Give exactly one of branch or message.", [{"loc": ["branch"], "msg": "branch xor message"}]
        )
    saved = None
    if payload.branch:
        branch = services.branch_checkout(session=session, name=payload.branch)
    else:
        message = selectors.message_find(session, payload.message)
        if message is None:
            raise NotFound(f"Message {echoed(payload.message)} not found in this session.")
        branch, preserved = services.message_checkout(session=session, message=message)
        saved = preserved.name if preserved else None
    session.refresh_from_db()
    return {
        "branch": branch.name,
        "head": branch.head_id,
        "saved_branch": saved,
        "conversation": selectors.session_conversation(session, active_only=True),
    }


@router.post(
    "/agents/{agent}/sessions/{session_id}/compact",
    response=CompactOut,
    summary="Compact the session's context window",
)
def compact(request, agent: str, session_id: str, payload: CompactIn):
    session = _session_for_write(request, agent, session_id)
    with llm_deadline():  # the summary's model waited for at most LLM_REQUEST_SECONDS
        return services.session_compact(
            session=session,
            max_input_tokens=payload.max_input_tokens,
            trigger_ratio=payload.trigger_ratio,
            emergency=payload.emergency,
            force=payload.force,
        )


# --- continuity and lifecycle -------------------------------------------------------------------


@router.get(
    "/agents/{agent}/sessions/{session_id}/buffer", response=BufferOut, summary="The session's working buffer"
)
def buffer(request, agent: str, session_id: str):
    session = selectors.session_get_for_principal(request.auth, agent, session_id)
    entries = list(selectors.buffer_entries(session))
    usage = recovery_reads.buffer_usage(session)
    return {
        "session": session,
        "active": session.buffer_started_at is not None,
        "started_at": session.buffer_started_at,
        **usage,
        "entries": entries,
        "markdown": recovery_reads.buffer_markdown(session, entries),
    }


@router.get(
    "/agents/{agent}/sessions/{session_id}/recovery",
    response=RecoveryOut,
    summary="Recovery block: working buffer, session state, today's daily note",
)
def recovery(request, agent: str, session_id: str, max_tokens: int | None = Query(None, ge=50, le=100_000)):
    session = selectors.session_get_for_principal(request.auth, agent, session_id)
    return recovery_reads.recovery_build(session, signals=["requested"], budget_tokens=max_tokens)


@router.post(
    "/agents/{agent}/sessions/{session_id}/archive", response=RestoreOut, summary="Archive a session now"
)
def archive(request, agent: str, session_id: str):
    session = _session_for_write(request, agent, session_id)
    stored = services.session_archive(session=session, reason="archived on demand", by=request.auth.label)
    session.refresh_from_db()
    return {"session": session, "messages": stored.message_count}


@router.post(
    "/agents/{agent}/sessions/{session_id}/restore",
    response=RestoreOut,
    summary="Restore an archived session",
)
def restore(request, agent: str, session_id: str):
    session = _session_for_write(request, agent, session_id)
    session = services.session_restore(session=session, by=request.auth.label)
    return {"session": session, "messages": session.messages.count()}


@router.get(
    "/agents/{agent}/sessions/{session_id}/stats", response=SessionStatsOut, summary="Statistics of a session"
)
def session_stats(request, agent: str, session_id: str):
    session = selectors.session_get_for_principal(request.auth, agent, session_id)
    return selectors.session_stats(session)


# GET /stats is served by memoryproject/api.py, which adds the embeddings status of search.


@router.get(
    "/agents/{agent}/export",
    summary="The agent's whole memory as a zip (.memory/ layout, sessions included)",
    description=(
        "What `export_memory_dir --agent A` writes, as one zip read from one snapshot: `.export.json`, "
        "`_project.md` with `.project-versions.json` (its earlier texts), the agent's category files "
        "with `.entries.json` (each entry's author, source, provenance, edit date and access count), "
        "`.review.json` and `.versions.json` (the edit history of its entries and workspace files), its "
        "workspace files, its sessions (`{agent}/sessions/{id}.json`: every message of the tree, "
        "branches, tool calls, archived ones, state rows, working buffer, status transitions) "
        "and its checkpoint (`.vault/checkpoints/{agent}.json`). Unzipped, `import_memory_dir` restores the "
        "agent from it."
    ),
    tags=["files"],
    # The id it had when vault served it: clients generated from the OpenAPI document name it so.
    operation_id="vault_files_api_agent_export",
    response={200: None},
    openapi_extra={
        "responses": {
            200: {
                "description": "A zip archive",
                "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
                "headers": {
                    "Content-Disposition": {
                        "description": 'attachment; filename="{project}-{agent}-memory.zip"',
                        "schema": {"type": "string"},
                    }
                },
            }
        }
    },
)
def agent_export(request, agent: str):
    target = agent_get_for_principal(request.auth, agent)
    archive = export.export_zip(
        project=target.project, agents=[target], extra=session_files.agent_session_files
    )
    return FileResponse(
        archive,
        as_attachment=True,
        filename=f"{target.project.slug}-{target.slug}-memory.zip",
        content_type="application/zip",
    )
