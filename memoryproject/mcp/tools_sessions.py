"""Session tools: log messages, checkpoint, recover and close a session (as the REST API does)."""

from typing import Annotated

from pydantic import Field

from memoryproject.errors import NotFound
from memoryproject.mcp.annotations import (
    ADDITIVE,
    ADDITIVE_IDEMPOTENT,
    DESTRUCTIVE_IDEMPOTENT,
    READ_ONLY,
    dump,
)
from memoryproject.mcp.caller import agent_for_read, agent_for_write, current_caller, tool_adapter
from memoryproject.mcp.tools_vault import AgentArg, EntryText
from memoryproject.numbers import integer
from sessions_app import selectors, services
from sessions_app.schemas import APPEND_MAX_ITEMS, AppendOut, CheckpointOut, MessageIn, SleepOut

SessionArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description=(
            "Your client's chat/session id; 'current' for your most recently active open session "
            "(session_log starts a new one when none is open)"
        ),
    ),
]


@tool_adapter
def session_log(
    session: SessionArg,
    messages: Annotated[
        list[MessageIn],
        Field(
            min_length=1,
            max_length=10_000,
            description="Messages in order: {role: user|assistant|tool|system, text, id?}; an id makes a retry safe",
            json_schema_extra=APPEND_MAX_ITEMS,  # MEMORY_APPEND_MAX_MESSAGES, refused beyond by the service
        ),
    ],
    model_id: Annotated[
        str | None, Field(max_length=200, description="The model you run on, remembered on the session")
    ] = None,
    max_input_tokens: Annotated[
        integer(ge=1000, le=100_000_000) | None,
        Field(
            description="Your model's context window in tokens, remembered on the session: past half of it "
            "every exchange is also kept in the working buffer, for recovery after a context loss"
        ),
    ] = None,
    agent: AgentArg = None,
) -> dict:
    caller = current_caller()
    target = agent_for_write(caller, agent)
    result = services.messages_append(
        agent=target,
        messages=[m.as_input() for m in messages],
        session_key=session,
        model_id=model_id or "",
        changed_by=caller.principal.label,
        max_input_tokens=max_input_tokens,
    )
    out = dump(AppendOut, result.as_dict())
    out.pop("items")  # the caller sent them; ids and counts are what it needs back
    return out


@tool_adapter
def session_checkpoint(session: SessionArg, agent: AgentArg = None) -> dict:
    caller = current_caller()
    target = agent_for_write(caller, agent)
    found = selectors.session_find(target, session)
    if found is None:
        raise NotFound(f"Session {session!r} of agent {target.slug!r} not found.")
    return dump(CheckpointOut, services.checkpoint_save(agent=target, session=found))


@tool_adapter
def session_recover(agent: AgentArg = None) -> dict:
    target = agent_for_read(current_caller(), agent)
    checkpoint = selectors.checkpoint_get_valid(target)
    if checkpoint is None:
        raise NotFound(f"Agent {target.slug!r} has no checkpoint younger than the validity window.")
    return dump(CheckpointOut, checkpoint)


@tool_adapter
def session_close(
    session: SessionArg,
    summary: Annotated[
        EntryText, Field(description="What was done and what is next, for the next session")
    ] = "",
    agent: AgentArg = None,
) -> dict:
    caller = current_caller()
    target = agent_for_write(caller, agent)
    result = services.session_close(
        agent=target, session_key=session, summary=summary, changed_by=caller.principal.label
    )
    return dump(
        SleepOut,
        {
            "session": result.session,
            "stored": len(result.appended.stored) if result.appended else 0,
            "checkpoint": result.checkpoint,
            "handoff": result.handoff,
            "decisions": result.decisions,
            "lessons": result.lessons,
        },
    )


def register(server) -> None:
    server.add_tool(
        session_log,
        annotations=ADDITIVE_IDEMPOTENT,
        description=(
            "Append the latest conversation messages to the session's log as you go, so a later session "
            "can recover them. Messages with an `id` already logged are skipped. Returns the session, how "
            "many were stored and any state the scan recorded. Needs a write token."
        ),
    )
    server.add_tool(
        session_checkpoint,
        annotations=DESTRUCTIVE_IDEMPOTENT,
        description=(
            "Save a checkpoint of the session's last messages before a risky step or a context reset; "
            "session_recover brings it back. Replaces the previous checkpoint. Needs a write token."
        ),
    )
    server.add_tool(
        session_recover,
        annotations=READ_ONLY,
        description=(
            "After a crash, context loss or restart, fetch the last checkpoint (the recent messages, chat "
            "id and model) to pick up where you left off. Fails when no checkpoint is recent enough."
        ),
    )
    server.add_tool(
        session_close,
        annotations=ADDITIVE,
        description=(
            "Call at the end of a session: stores a checkpoint and a handoff note (your summary) for the "
            "next session and extracts decisions and lessons into long-term memory. Returns the handoff "
            "and the extracted entries. Needs a write token."
        ),
    )
