"""Maintenance endpoints: compaction, retention, consolidation, forgetting (API.md "Maintenance")."""

from ninja import Query, Router

from memoryproject import maintenance
from memoryproject.booleans import QueryBoolean
from memoryproject.errors import NotFound
from memoryproject.llm import llm_deadline
from vault import selectors
from vault.maintenance.consolidation import consolidation_run_one
from vault.maintenance_schemas import CompactionRunOut, ConsolidationOut, ForgetIn, ForgetOut
from vault.models import CompactionRun, RunKind, RunTrigger, TokenScope

router = Router(tags=["maintenance"])


def _last_run(request, kind: str) -> CompactionRun:
    request.auth.require_project_wide(TokenScope.ADMIN)
    run = selectors.compaction_run_last(request.auth.project_id, kind)
    if run is None:
        raise NotFound(f"No {kind} run has been recorded for this project yet.")
    return run


@router.post("/maintenance/compact", response=CompactionRunOut, summary="Run compaction now")
def compact(
    request, dry_run: QueryBoolean = Query(False, description="report what would change, change nothing")
):
    request.auth.require_project_wide(TokenScope.ADMIN)
    project = selectors.project_for_principal(request.auth)
    with llm_deadline():  # a request waits for the model at most LLM_REQUEST_SECONDS
        return maintenance.compaction_run(project=project, dry_run=dry_run, trigger=RunTrigger.API)


@router.get("/maintenance/compact", response=CompactionRunOut, summary="The last compaction run")
def compact_last(request):
    return _last_run(request, RunKind.COMPACTION)


@router.post(
    "/maintenance/retention", response=CompactionRunOut, summary="Run retention, purge and size limit now"
)
def retention(
    request, dry_run: QueryBoolean = Query(False, description="report what would change, change nothing")
):
    request.auth.require_project_wide(TokenScope.ADMIN)
    project = selectors.project_for_principal(request.auth)
    return maintenance.retention_run(project=project, dry_run=dry_run, trigger=RunTrigger.API)


@router.get("/maintenance/retention", response=CompactionRunOut, summary="The last retention run")
def retention_last(request):
    return _last_run(request, RunKind.RETENTION)


@router.post(
    "/agents/{agent}/consolidate", response=ConsolidationOut, summary="Fold recent daily notes into MEMORY.md"
)
def consolidate(request, agent: str):
    target = selectors.agent_get_for_principal(request.auth, agent)
    request.auth.require_project_wide(TokenScope.ADMIN)
    with llm_deadline():  # a request waits for the model at most LLM_REQUEST_SECONDS
        return consolidation_run_one(agent=target, trigger=RunTrigger.API)


@router.post("/forget", response=ForgetOut, summary="Delete memory by ids or criteria, with an audit row")
def forget(request, payload: ForgetIn):
    principal = request.auth
    if principal.is_agent_bound:
        principal.require(TokenScope.WRITE)
    else:
        principal.require(TokenScope.ADMIN)
    agent = selectors.agent_get_for_principal(principal, payload.agent) if payload.agent else None
    return maintenance.forget(
        project=selectors.project_for_principal(principal),
        agent_ids=[principal.agent_id] if principal.is_agent_bound else None,
        deleted_by=principal.label,
        ids=payload.ids,
        message_ids=payload.message_ids,
        agent=agent,
        category=payload.category,
        tags=payload.tags,
        since=payload.since,
        until=payload.until,
        source=payload.source,
        kinds=payload.kinds,
    )
