"""Vault tools: save, update, get, list and forget long-term memory entries (as the REST API does)."""

from datetime import datetime
from typing import Annotated, Literal

from django.conf import settings
from pydantic import Field

from memoryproject import maintenance
from memoryproject.booleans import Boolean
from memoryproject.errors import InvalidInput
from memoryproject.mcp.annotations import ADDITIVE, DESTRUCTIVE, DESTRUCTIVE_IDEMPOTENT, READ_ONLY, dump
from memoryproject.mcp.caller import (
    agent_for_read,
    agent_for_write,
    agent_name_check,
    current_caller,
    tool_adapter,
)
from memoryproject.numbers import integer, number
from memoryproject.openapi import AGENT_PATH_SCHEMA
from memoryproject.timestamps import SINCE, UNTIL, InstantBound
from vault import selectors, services
from vault.etags import updated_at_expected
from vault.maintenance_schemas import FORGET_MAX_IDS, FORGET_MAX_TAGS, ForgetIn, ForgetOut, RowId
from vault.models import EntrySource, EntryStatus, TokenScope
from vault.schemas import EntryIn, EntryOut, EntryPatch

AgentArg = Annotated[
    str | None,
    Field(
        description="Agent name; only for a project-wide token (an agent token always acts as its agent)",
        json_schema_extra={
            "maxLength": AGENT_PATH_SCHEMA["maxLength"],
            "pattern": AGENT_PATH_SCHEMA["pattern"],
        },
    ),
]
Category = Literal["decisions", "lessons", "tasks", "projects", "handoffs"]
CategoryArg = Annotated[Category, Field(description="The kind of memory")]
CategoryFilter = Annotated[Category | None, Field(description="Only entries of this category")]
EntryId = Annotated[
    integer(ge=1, le=selectors.MAX_ID), Field(description="The entry's id, as the tools return it")
]
Importance = Annotated[
    number(ge=0.0, le=1.0) | None, Field(description="How much it matters, 0 to 1 (0.5 when not given)")
]
# The limits the services enforce (vault.text), advertised as the REST API's EntryIn does; the services
# refuse beyond them with their own messages (413 in REST), so they are not validated here.
EntryText = Annotated[str, Field(json_schema_extra={"maxLength": settings.MEMORY_MAX_ENTRY_BYTES})]
Tags = Annotated[
    list[str] | None,
    Field(
        description="Tags (letters, digits, '_', '.', '-'); #hashtags in the content become tags too",
        json_schema_extra={"maxItems": settings.MEMORY_MAX_TAGS},
    ),
]


@tool_adapter
def memory_save(
    category: CategoryArg,
    content: Annotated[EntryText, Field(description="The memory, in markdown: one fact, decision or lesson")],
    tags: Tags = None,
    importance: Importance = None,
    supersedes: Annotated[
        integer(ge=1, le=selectors.MAX_ID) | None,
        Field(description="Id of an entry of the same agent this one replaces"),
    ] = None,
    agent: AgentArg = None,
) -> dict:
    caller = current_caller()
    payload = EntryIn(
        category=category, content=content, tags=tags or [], importance=importance, supersedes=supersedes
    )
    entry = services.entry_create_for_principal(
        caller.principal,
        agent=agent_for_write(caller, agent),
        category=payload.category,
        content=payload.content,
        tags=payload.tags,
        importance=payload.importance,
        supersedes_id=payload.supersedes,
        source=EntrySource.MCP,
    )
    out = dump(EntryOut, entry)
    if entry.duplicate_of:
        out["outcome"] = f"duplicate: not stored again; entry {entry.pk} already holds it"
    elif entry.status == EntryStatus.PENDING:
        out["outcome"] = "held for review: a curator must approve it before it is used"
    else:
        out["outcome"] = "saved"
    return out


@tool_adapter
def memory_update(
    id: EntryId,
    content: Annotated[
        EntryText | None, Field(description="The new content, in place of the old (kept as a version)")
    ] = None,
    tags: Annotated[Tags, Field(description="The new tags, in place of the old ones")] = None,
    importance: Importance = None,
    expected_updated_at: Annotated[
        datetime | None,
        Field(
            description="The entry's `updated_at` as you read it (ISO 8601, as the tools return it): the "
            "update is made only if the entry has not changed since, else an error says what is current"
        ),
    ] = None,
) -> dict:
    caller = current_caller()
    expected = updated_at_expected(expected_updated_at)
    fields = {
        k: v for k, v in {"content": content, "tags": tags, "importance": importance}.items() if v is not None
    }
    payload = EntryPatch(**fields)
    caller.principal.require(TokenScope.WRITE)
    entry = selectors.entry_get_for_principal(caller.principal, id)
    entry = services.entry_update(
        entry_id=entry.pk,
        changes=services.EntryChanges(**payload.dict(exclude_unset=True)),
        changed_by=caller.principal.label,
        review=True,
        expected=expected,
    )
    return dump(EntryOut, entry)


@tool_adapter
def memory_get(id: EntryId) -> dict:
    caller = current_caller()
    caller.principal.require(TokenScope.READ)
    return dump(EntryOut, selectors.entry_get_for_principal(caller.principal, id))


@tool_adapter
def memory_list(
    category: CategoryFilter = None,
    limit: Annotated[integer(ge=1, le=500), Field(description="Entries in this page")] = 50,
    offset: Annotated[
        integer(ge=0, le=10_000_000), Field(description="Entries to skip, for the next page")
    ] = 0,
    agent: AgentArg = None,
) -> dict:
    target = agent_for_read(current_caller(), agent)
    entries = selectors.entry_list(agent=target, category=category, status=EntryStatus.ACTIVE)
    return {
        "items": [dump(EntryOut, entry) for entry in entries[offset : offset + limit]],
        "count": entries.count(),
        "limit": limit,
        "offset": offset,
    }


@tool_adapter
def memory_forget(
    ids: Annotated[
        list[RowId] | None, Field(max_length=FORGET_MAX_IDS, description="Entry ids to delete")
    ] = None,
    category: CategoryFilter = None,
    tags: Annotated[
        list[str] | None,
        Field(
            max_length=FORGET_MAX_TAGS,
            description="Only entries with all of these tags (each 1-64 letters, digits, '_', '.' or '-')",
        ),
    ] = None,
    since: Annotated[InstantBound | None, Field(description=SINCE)] = None,
    until: Annotated[InstantBound | None, Field(description=UNTIL)] = None,
    agent: AgentArg = None,
    all_agents: Annotated[
        Boolean,
        Field(
            description="Project-wide token only: apply the criteria to every agent of the project "
            "(without it, name the agent)"
        ),
    ] = False,
    expected_updated_at: Annotated[
        datetime | None,
        Field(
            description="With one id in `ids`: the entry's `updated_at` as you read it (ISO 8601, as the "
            "tools return it); it is forgotten only if it has not changed since, else an error says what "
            "is current"
        ),
    ] = None,
) -> dict:
    caller = current_caller()
    principal = caller.principal
    expected = updated_at_expected(expected_updated_at)
    payload = ForgetIn(ids=ids, category=category, tags=tags, since=since, until=until, agent=agent)
    # As POST /forget: an agent token forgets its own memory; a project-wide token needs admin scope.
    principal.require(TokenScope.WRITE if principal.is_agent_bound else TokenScope.ADMIN)
    named = payload.agent or (caller.default_agent if not (principal.is_agent_bound or payload.ids) else None)
    agent_name_check(named)
    if not (principal.is_agent_bound or payload.ids or named or all_agents):
        # As every other tool: a project-wide token names the agent. Criteria alone would reach every
        # agent of the project, which a model asked to forget "my tasks" does not mean.
        raise InvalidInput(
            "Name the agent whose memory to forget: pass `agent` (or configure the URL as "
            "/mcp?agent=NAME), or all_agents=true to forget what matches in every agent of the project.",
            [{"loc": ["agent"], "msg": "required for a project-wide token, or all_agents=true"}],
        )
    target = selectors.agent_get_for_principal(principal, named) if named else None
    result = maintenance.forget(
        project=selectors.project_for_principal(principal),
        agent_ids=[principal.agent_id] if principal.is_agent_bound else None,
        deleted_by=principal.label,
        ids=payload.ids,
        message_ids=None,
        agent=target,
        category=payload.category,
        tags=payload.tags,
        since=payload.since,
        until=payload.until,
        source=None,
        kinds=payload.kinds,
        expected=expected,
    )
    return dump(ForgetOut, result)


def register(server) -> None:
    server.add_tool(
        memory_save,
        annotations=ADDITIVE,
        description=(
            "Save one durable memory (a decision, lesson, task, project fact or handoff) when you learn "
            "something worth keeping beyond this session. Duplicates are not stored twice and text that "
            "looks like instructions is held for review; the reply's `outcome` says which happened. "
            "Needs a write token."
        ),
    )
    server.add_tool(
        memory_update,
        annotations=DESTRUCTIVE_IDEMPOTENT,
        description=(
            "Correct an existing memory entry by id (content, tags or importance) when it is outdated or "
            "wrong; the previous text is kept as a version. Pass the `updated_at` you read as "
            "`expected_updated_at` so that an edit made meanwhile (by another agent) is not overwritten. "
            "Returns the updated entry. Needs a write token."
        ),
    )
    server.add_tool(
        memory_get,
        annotations=READ_ONLY,
        description=(
            "Fetch one memory entry by id, e.g. a search result you want in full. Returns its content, "
            "tags, status, provenance and supersede links."
        ),
    )
    server.add_tool(
        memory_list,
        annotations=READ_ONLY,
        description=(
            "List the agent's active memory entries, newest first, optionally of one category, to browse "
            "what is stored. Returns a page of entries and the total count; use memory_search to find by "
            "content."
        ),
    )
    server.add_tool(
        memory_forget,
        annotations=DESTRUCTIVE,
        description=(
            "Delete memory for good: entries by id, or every entry matching criteria (category, tags, "
            "time range). Call it only when the user asks to forget something; an audit row records what "
            "was deleted. Returns how many were deleted and which ids were not found. Needs a write token "
            "(agent tokens) or an admin token (project-wide, which names the agent for criteria, or sets "
            "all_agents)."
        ),
    )
