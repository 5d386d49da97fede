from typing import Literal

from django.http import HttpRequest, HttpResponse
from ninja import Header, Path, Query, Router, Status

from memoryproject.openapi import etag_responses
from vault import selectors, services
from vault.etags import entry_etag, if_match_expected, project_context_etag
from vault.models import Agent, TokenScope
from vault.schemas import (
    AgentOut,
    CategoryName,
    EntryIn,
    EntryOut,
    EntryPage,
    EntryPatch,
    EntryVersionOut,
    ProjectContextIn,
    ProjectContextOut,
    SourceName,
    WhoAmIOut,
)

router = Router(tags=["vault"])

ENTRY_ID = Path(..., ge=1, le=selectors.MAX_ID, description="Entry id")
IF_MATCH = Header(
    None,
    alias="If-Match",
    description="Write only if the resource is still in a state you read: one or more ETags (as the ETag "
    "header gave them, quoted, separated by commas) or `*`. Else 412 and nothing changes",
)


def agent_for_write(request: HttpRequest, slug: str) -> Agent:
    """The agent to write to: created on first use by a token that may write to the whole project."""
    principal = request.auth
    principal.require(TokenScope.WRITE)
    if principal.is_agent_bound:
        return selectors.agent_get_for_principal(principal, slug)
    project = selectors.project_for_principal(principal)
    return services.agent_ensure(project=project, slug=services.slug_check(slug, field="agent"))


@router.get("/me", response=WhoAmIOut, summary="Who this token is")
def whoami(request):
    principal = request.auth
    project = selectors.project_for_principal(principal)
    agent = selectors.agent_of_principal(principal)
    return {
        "project": project.slug,
        "agent": agent.slug if agent else None,
        "scope": principal.scope,
        "token": principal.label,
    }


@router.get("/agents", response=list[AgentOut], summary="Agents with entry counts per category")
def agent_list(request):
    return selectors.agent_list_with_counts(request.auth)


@router.post(
    "/agents/{agent}/entries",
    response={200: EntryOut, 201: EntryOut},
    summary="Create an entry",
    openapi_extra=etag_responses(200, 201),
)
def entry_create(request, response: HttpResponse, agent: str, payload: EntryIn):
    entry = services.entry_create_for_principal(
        request.auth,
        agent=agent_for_write(request, agent),
        category=payload.category,
        content=payload.content,
        tags=payload.tags,
        importance=payload.importance,
        confidence=payload.confidence,
        supersedes_id=payload.supersedes,
    )
    response["ETag"] = entry_etag(entry)
    # A duplicate is not stored again: the existing entry comes back, bumped, with duplicate_of.
    return Status(200 if entry.duplicate_of else 201, entry)


@router.get("/agents/{agent}/entries", response=EntryPage, summary="List an agent's entries, newest first")
def entry_list(
    request,
    agent: str,
    category: CategoryName | None = None,
    status: Literal["active", "archived", "pending", "superseded", "rejected", "all"] = "active",
    tag: str | None = Query(None, max_length=64),
    source: SourceName | None = Query(None, description="Entries written through this source"),
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=10_000_000),
):
    target = selectors.agent_get_for_principal(request.auth, agent)
    entries = selectors.entry_list(
        agent=target, category=category, status=None if status == "all" else status, tag=tag, source=source
    )
    return {
        "items": list(entries[offset : offset + limit]),
        "count": entries.count(),
        "limit": limit,
        "offset": offset,
    }


@router.get(
    "/entries/{entry_id}", response=EntryOut, summary="Get an entry", openapi_extra=etag_responses(200)
)
def entry_get(request, response: HttpResponse, entry_id: int = ENTRY_ID):
    entry = selectors.entry_get_for_principal(request.auth, entry_id)
    response["ETag"] = entry_etag(entry)
    return entry


@router.patch(
    "/entries/{entry_id}",
    response=EntryOut,
    summary="Edit an entry (the previous state is versioned)",
    description="An edit may move `status` between active and archived only; a pending, rejected or "
    "superseded entry keeps its status (409: POST /review/{id}/approve or /reject decides it). A new "
    "`category` is screened as a new write of that category, new content for instructions; either may "
    "put the entry back in the review queue (`status` pending, with its `review` items). With "
    "`If-Match`, the edit is made only if the entry is still in a state whose ETag it names (412 else).",
    openapi_extra=etag_responses(200, if_match=True),
)
def entry_update(
    request,
    response: HttpResponse,
    payload: EntryPatch,
    entry_id: int = ENTRY_ID,
    if_match: str | None = IF_MATCH,
):
    request.auth.require(TokenScope.WRITE)
    expected = if_match_expected(if_match)
    entry = selectors.entry_get_for_principal(request.auth, entry_id)
    fields = payload.dict(exclude_unset=True)
    supersedes = fields.pop("supersedes", None)
    if supersedes is not None:
        selectors.entry_named_for_principal(request.auth, supersedes, field="supersedes")
    changes = services.EntryChanges(**fields)
    entry = services.entry_update(
        entry_id=entry.pk,
        changes=changes,
        changed_by=request.auth.label,
        review=True,
        supersedes_id=supersedes,
        expected=expected,
    )
    response["ETag"] = entry_etag(entry)
    return entry


@router.delete(
    "/entries/{entry_id}",
    response={204: None},
    summary="Delete an entry (its last state is kept)",
    description="With `If-Match`, the entry is deleted only if it is still in a state whose ETag it "
    "names (412 else).",
    openapi_extra=etag_responses(if_match=True),
)
def entry_delete(request, entry_id: int = ENTRY_ID, if_match: str | None = IF_MATCH):
    request.auth.require(TokenScope.WRITE)
    expected = if_match_expected(if_match)
    entry = selectors.entry_get_for_principal(request.auth, entry_id)
    services.entry_delete(entry_id=entry.pk, deleted_by=request.auth.label, expected=expected)
    return Status(204, None)


@router.get(
    "/entries/{entry_id}/history", response=list[EntryVersionOut], summary="Earlier versions, newest first"
)
def entry_history(request, entry_id: int = ENTRY_ID):
    entry = selectors.entry_get_for_principal(request.auth, entry_id)
    return list(selectors.entry_history(entry))


@router.get("/entries/{entry_id}/chain", response=list[EntryOut], summary="The supersede chain, newest first")
def entry_chain(request, entry_id: int = ENTRY_ID):
    entry = selectors.entry_get_for_principal(request.auth, entry_id)
    return selectors.entry_chain(entry)


def _project_context_out(project, response: HttpResponse) -> dict:
    response["ETag"] = project_context_etag(project)
    return {"project": project.slug, "content": project.context, "updated_at": project.context_updated_at}


@router.get(
    "/project/context",
    response=ProjectContextOut,
    summary="The project context (_project.md)",
    openapi_extra=etag_responses(200),
)
def project_context_get(request, response: HttpResponse):
    return _project_context_out(selectors.project_for_principal(request.auth), response)


@router.put(
    "/project/context",
    response=ProjectContextOut,
    summary="Replace the project context",
    description="With `If-Match`, the context is replaced only if it is still in a state whose ETag it "
    "names (412 else).",
    openapi_extra=etag_responses(200, if_match=True),
)
def project_context_put(
    request, response: HttpResponse, payload: ProjectContextIn, if_match: str | None = IF_MATCH
):
    request.auth.require_project_wide(TokenScope.WRITE)
    expected = if_match_expected(if_match)
    project = selectors.project_for_principal(request.auth)
    project = services.project_context_set(
        project=project, content=payload.content, changed_by=request.auth.label, expected=expected
    )
    return _project_context_out(project, response)
