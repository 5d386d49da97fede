from typing import Annotated, Literal

from ninja import Field, Query, Router

from memoryproject.openapi import AGENT_PATH_SCHEMA
from memoryproject.timestamps import SINCE, UNTIL, InstantBound
from search import selectors, services
from search.query import MAX_QUERY_CHARS
from search.schemas import ContextIn, ContextOut, SearchOut, search_out
from vault.models import TokenScope
from vault.schemas import CategoryName
from vault.selectors import agent_get_for_principal
from vault.text import TAG_FILTER_MAX, TAG_MAX_CHARS, tags_filter_check

router = Router(tags=["search"])

# An agent's slug (AGENT_PATH_SCHEMA), or empty: no agent named. A name no agent can have is refused
# (422), not looked up and answered 404.
AGENT_FILTER_PATTERN = "^(" + AGENT_PATH_SCHEMA["pattern"][1:-1] + ")?$"

# A tag's length as the schema states it; tags_filter_check is the authority (and allows the '#').
TagFilter = Annotated[str, Field(json_schema_extra={"maxLength": TAG_MAX_CHARS})]


@router.get("/search", response=SearchOut, summary="Full-text search over entries, messages and files")
def search(
    request,
    q: str = Query(
        ..., min_length=1, max_length=MAX_QUERY_CHARS, description='Words, "phrases", -exclusions, OR'
    ),
    agent: str | None = Query(
        None,
        max_length=AGENT_PATH_SCHEMA["maxLength"],
        pattern=AGENT_FILTER_PATTERN,
        description="Only this agent's memory: its slug, 1-64 characters of a-z, 0-9, '.', '_' or '-', not "
        "only dots (empty or absent: every agent the token may read)",
    ),
    category: CategoryName | None = None,
    tag: list[TagFilter] = Query(
        None,
        max_length=TAG_FILTER_MAX,
        description=f"Entries with any (or all, see tags_mode) of these tags; at most {TAG_FILTER_MAX}, "
        f"each 1-{TAG_MAX_CHARS} letters, digits, '_', '.' or '-' (a leading '#' is ignored)",
    ),
    tags_mode: Literal["any", "all"] = "any",
    since: InstantBound | None = Query(None, description=SINCE),
    until: InstantBound | None = Query(None, description=UNTIL),
    kinds: str = Query("entries,messages,files", max_length=100),
    status: Literal["active", "archived", "pending", "superseded", "rejected", "all"] = Query(
        "active", description="Entries with this status; 'all' ranks non-active ones lower"
    ),
    limit: int = Query(None, ge=1, le=100),
    offset: int = Query(0, ge=0, le=10_000),
    mode: Literal["hybrid", "lexical", "semantic"] | None = Query(
        None, description="Default: hybrid when semantic search is on, else lexical"
    ),
):
    request.auth.require(TokenScope.READ)
    filters = selectors.SearchFilters(
        category=category,
        tags=tags_filter_check(tag, field="tag"),
        tags_mode=tags_mode,
        since=since,
        until=until,
        kinds=tuple(k.strip() for k in kinds.split(",") if k.strip()),
        status=status,
        limit=limit or selectors.default_limit(),
        offset=offset,
        mode=mode,
    )
    outcome = selectors.search_for_principal(request.auth, q=q, agent=agent, filters=filters)
    return search_out(outcome)


@router.post("/agents/{agent}/context", response=ContextOut, summary="Memory context for a new session")
def context(request, agent: str, payload: ContextIn):
    request.auth.require(TokenScope.READ)
    target = agent_get_for_principal(request.auth, agent)
    return services.context_build(
        agent=target,
        command=payload.command,
        budget_tokens=payload.budget_tokens,
        created_by=request.auth.label,
    )
