"""The review queue (admin scope): approve, edit-and-approve, reject, merge, in bulk; review policies."""

from typing import Literal

from ninja import Path, Query, Router

from vault import selectors, services
from vault.models import TokenScope
from vault.schemas import (
    CategoryName,
    EntryOut,
    ReviewApproveIn,
    ReviewBulkIn,
    ReviewBulkOut,
    ReviewMergeIn,
    ReviewPolicyIn,
    ReviewPolicyOut,
    ReviewRejectIn,
)

router = Router(tags=["review"])
ENTRY_ID = Path(..., ge=1, le=selectors.MAX_ID, description="Entry id")


def _pending_for(request, entry_id: int):
    request.auth.require_project_wide(TokenScope.ADMIN)
    return selectors.entry_get_for_principal(request.auth, entry_id)


@router.get("/review", response=list[EntryOut], summary="Pending entries, oldest first, with why they wait")
def review_list(
    request,
    category: CategoryName | None = None,
    kind: Literal["policy", "duplicate", "conflict", "poisoning"] | None = None,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=10_000_000),
):
    request.auth.require_project_wide(TokenScope.ADMIN)
    return list(selectors.review_queue(request.auth, category=category, kind=kind)[offset : offset + limit])


@router.get("/review/counts", response=dict[str, int], summary="Pending entries per category")
def review_counts(request):
    request.auth.require_project_wide(TokenScope.ADMIN)
    return selectors.review_counts(request.auth)


@router.post("/review/{entry_id}/approve", response=EntryOut, summary="Approve (optionally edited)")
def review_approve(request, payload: ReviewApproveIn, entry_id: int = ENTRY_ID):
    entry = _pending_for(request, entry_id)
    return services.review_approve(
        entry_id=entry.pk,
        by=request.auth.label,
        content=payload.content,
        supersede_conflicting=payload.supersede_conflicting,
    )


@router.post(
    "/review/{entry_id}/reject", response=EntryOut, summary="Reject (kept for the audit, never active)"
)
def review_reject(request, payload: ReviewRejectIn, entry_id: int = ENTRY_ID):
    entry = _pending_for(request, entry_id)
    return services.review_reject(entry_id=entry.pk, by=request.auth.label, reason=payload.reason)


@router.post(
    "/review/{entry_id}/merge",
    response=EntryOut,
    summary="Merge into an existing entry",
    description="Appends the pending entry's text to `into`, an active entry of the same agent (409 "
    "otherwise; 422 when the project has no such entry), and returns it. The merged entry becomes superseded by it and joins its supersede chain "
    "just below it, so its `superseded_by` and `/entries/{id}/chain` lead to where its text went.",
)
def review_merge(request, payload: ReviewMergeIn, entry_id: int = ENTRY_ID):
    entry = _pending_for(request, entry_id)
    target = selectors.entry_named_for_principal(request.auth, payload.into, field="into")
    return services.review_merge(entry_id=entry.pk, into_id=target.pk, by=request.auth.label)


@router.post("/review/bulk", response=ReviewBulkOut, summary="Approve or reject many entries")
def review_bulk(request, payload: ReviewBulkIn):
    request.auth.require_project_wide(TokenScope.ADMIN)
    result = services.review_bulk(
        project_id=request.auth.project_id,
        entry_ids=payload.ids,
        action=payload.action,
        by=request.auth.label,
    )
    return {"done": result["done"], "errors": {str(key): value for key, value in result["errors"].items()}}


@router.get("/review/policies", response=list[ReviewPolicyOut], summary="Which writes wait for review")
def review_policy_list(request):
    request.auth.require_project_wide(TokenScope.ADMIN)
    project = selectors.project_for_principal(request.auth)
    return list(project.review_policies.order_by("category"))


@router.put(
    "/review/policies", response=ReviewPolicyOut, summary="Set the review policy of a category (or all)"
)
def review_policy_put(request, payload: ReviewPolicyIn):
    request.auth.require_project_wide(TokenScope.ADMIN)
    project = selectors.project_for_principal(request.auth)
    return services.review_policy_set(
        project=project,
        category=payload.category,
        hold_agent_writes=payload.hold_agent_writes,
        hold_extracted=payload.hold_extracted,
    )
