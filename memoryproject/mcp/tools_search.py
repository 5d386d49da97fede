"""Search tools: the context block for a new session and full-text search (as the REST API does)."""

from typing import Annotated, Literal

from django.conf import settings
from mcp.types import CallToolResult, TextContent
from pydantic import Field, ValidationError

from memoryproject.errors import InvalidInput
from memoryproject.mcp.annotations import READ_ONLY, dump
from memoryproject.mcp.caller import (
    agent_for_read,
    agent_name_check,
    current_caller,
    nul_refuse,
    tool_adapter,
)
from memoryproject.mcp.tools_vault import AgentArg, CategoryFilter
from memoryproject.numbers import integer
from memoryproject.timestamps import SINCE, UNTIL, InstantBound
from search import selectors, services
from search.query import MAX_QUERY_CHARS
from search.schemas import ContextIn, ContextOut, SearchOut, search_out
from vault.models import TokenScope
from vault.text import TAG_FILTER_MAX, TAG_MAX_CHARS, tags_filter_check

Kind = Literal["entries", "messages", "files"]


def context_for(agent_slug: str | None, task: str, budget_tokens: int | None) -> dict:
    """The injection block (POST /agents/{agent}/context) for the current caller."""
    caller = current_caller()
    nul_refuse("task", task)  # the REST API's field is `command`; a refusal names the caller's argument
    try:
        payload = ContextIn(command=task, budget_tokens=budget_tokens)
    except ValidationError as exc:
        errors = [
            {"loc": ["task" if e["loc"] == ("command",) else ".".join(map(str, e["loc"]))], "msg": e["msg"]}
            for e in exc.errors()
        ]
        described = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in errors)
        raise InvalidInput(f"Invalid input: {described}", errors) from None
    caller.principal.require(TokenScope.READ)
    target = agent_for_read(caller, agent_slug)
    built = services.context_build(
        agent=target,
        command=payload.command,
        budget_tokens=payload.budget_tokens,
        created_by=caller.principal.label,
    )
    return dump(ContextOut, built)


@tool_adapter
def memory_context(
    task: Annotated[
        str, Field(description="What you are about to do, in the user's words", max_length=10000)
    ] = "",
    budget_tokens: Annotated[
        integer(ge=50, le=settings.MEMORY_CONTEXT_MAX_BUDGET) | None,
        Field(
            description=f"Most tokens the block may take (default {settings.MEMORY_TOKEN_BUDGET})",
        ),
    ] = None,
    agent: AgentArg = None,
) -> CallToolResult:
    built = context_for(agent, task, budget_tokens)
    return CallToolResult(content=[TextContent(type="text", text=built["text"])], structured_content=built)


@tool_adapter
def memory_search(
    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description='Words, "phrases", -exclusions, OR')
    ],
    category: CategoryFilter = None,
    kinds: Annotated[
        list[Kind] | None,
        Field(
            max_length=len(selectors.KINDS),
            description="What to search: vault entries, conversation messages, workspace files (default all)",
        ),
    ] = None,
    tags: Annotated[
        list[Annotated[str, Field(json_schema_extra={"maxLength": TAG_MAX_CHARS})]] | None,
        Field(
            max_length=TAG_FILTER_MAX,
            description=f"Only entries with any of these tags (at most {TAG_FILTER_MAX}, each 1-{TAG_MAX_CHARS} "
            "letters, digits, '_', '.' or '-')",
        ),
    ] = None,
    tags_mode: Annotated[
        Literal["any", "all"], Field(description="Entries with any (default) or all of the tags")
    ] = "any",
    since: Annotated[InstantBound | None, Field(description=SINCE)] = None,
    until: Annotated[InstantBound | None, Field(description=UNTIL)] = None,
    status: Annotated[
        Literal["active", "archived", "pending", "superseded", "rejected", "all"],
        Field(
            description="Entries with this status (default active); 'archived' also finds the messages of "
            "archived sessions; 'all' ranks non-active ones lower"
        ),
    ] = "active",
    limit: Annotated[
        integer(ge=1, le=100) | None,
        Field(description=f"Results to return (default {settings.MEMORY_SEARCH_DEFAULT_LIMIT})"),
    ] = None,
    offset: Annotated[integer(ge=0, le=10_000), Field(description="Results to skip (paging)")] = 0,
    mode: Annotated[
        Literal["hybrid", "lexical", "semantic"] | None,
        Field(
            description="Retrieval: lexical (words), semantic (meaning) or hybrid (both, fused); default "
            "hybrid when semantic search is on, else lexical. Each result's `arms` says which found it"
        ),
    ] = None,
    agent: AgentArg = None,
) -> dict:
    caller = current_caller()
    caller.principal.require(TokenScope.READ)
    agent_name_check(agent or caller.default_agent)
    nul_refuse("tags", *(tags or []))
    filters = selectors.SearchFilters(
        category=category,
        tags=tags_filter_check(tags),
        tags_mode=tags_mode,
        since=since,
        until=until,
        kinds=tuple(kinds) if kinds else selectors.KINDS,
        status=status,
        limit=limit or selectors.default_limit(),
        offset=offset,
        mode=mode,
    )
    outcome = selectors.search_for_principal(
        caller.principal, q=query, agent=agent or caller.default_agent, filters=filters
    )
    return dump(SearchOut, search_out(outcome))


def register(server) -> None:
    server.add_tool(
        memory_context,
        annotations=READ_ONLY,
        description=(
            "Call this first, at the start of every session or task: it returns the memory you should "
            "know (project context, your workspace files, the last handoff, relevant decisions and "
            "lessons) as one markdown block within a token budget."
        ),
    )
    server.add_tool(
        memory_search,
        annotations=READ_ONLY,
        description=(
            "Search long-term memory, past conversation messages and workspace files by words before "
            "answering from memory or repeating past work. Returns ranked results with ids, snippets, "
            "scores and provenance; fetch an entry in full with memory_get."
        ),
    )
