"""Writes of trust: supersede chains, the review queue, review policies, access counts."""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memoryproject.errors import Conflict, DomainError, InvalidInput, NotFound
from vault import trust
from vault.models import (
    EntryStatus,
    Project,
    ReviewItem,
    ReviewKind,
    ReviewPolicy,
    VaultEntry,
)
from vault.services.entries import EntryChanges, _category_check, entry_supersede, entry_update

# --- Supersede and review (trust) ----------------------------------------------------------------


def _review_resolve(entry: VaultEntry, *, resolution: str, by: str) -> None:
    ReviewItem.objects.filter(entry=entry, resolved_at__isnull=True).update(
        resolved_at=timezone.now(), resolution=resolution, resolved_by=by[:200]
    )


def _pending_get(entry_id: int) -> VaultEntry:
    entry = VaultEntry.objects.select_for_update().filter(pk=entry_id).first()
    if entry is None:
        raise NotFound(f"Entry {entry_id} not found.")
    if entry.status != EntryStatus.PENDING:
        raise Conflict(f"Entry {entry_id} is {entry.status}, not pending review.")
    return entry


def review_approve(
    *, entry_id: int, by: str, content: str | None = None, supersede_conflicting: bool = False
) -> VaultEntry:
    """Approve a pending entry, optionally editing it first (edit-and-approve). With
    supersede_conflicting, the entries it conflicts with become superseded by it."""
    with transaction.atomic():
        entry = _pending_get(entry_id)
        if content is not None:
            entry_update(entry_id=entry.pk, changes=EntryChanges(content=content), changed_by=by)
            entry.refresh_from_db()
        entry.status = EntryStatus.ACTIVE
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "updated_at"])
        if entry.supersedes_id is not None:  # the supersede the writer asked for takes effect now
            entry_supersede(new_id=entry.pk, old_id=entry.supersedes_id, changed_by=by)
        if supersede_conflicting and entry.supersedes_id is None:
            others = ReviewItem.objects.filter(
                entry=entry, kind=ReviewKind.CONFLICT, resolved_at__isnull=True, other_entry__isnull=False
            ).values_list("other_entry_id", flat=True)
            for other_id in list(others)[:1]:
                entry_supersede(new_id=entry.pk, old_id=other_id, changed_by=by)
        _review_resolve(entry, resolution="approved", by=by)
    entry.refresh_from_db()
    return entry


def review_reject(*, entry_id: int, by: str, reason: str = "") -> VaultEntry:
    """Reject a pending entry: it stays stored (audit), never active, never injected."""
    with transaction.atomic():
        entry = _pending_get(entry_id)
        entry.status = EntryStatus.REJECTED
        entry.supersedes_id = None  # a refused replacement leaves the old entry as it was
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "supersedes", "updated_at"])
        _review_resolve(entry, resolution=f"rejected: {reason}"[:32] if reason else "rejected", by=by)
    return entry


def review_merge(*, entry_id: int, into_id: int, by: str) -> VaultEntry:
    """Fold a pending entry into an existing one (its text appended unless already there, tags
    united); the pending entry becomes superseded by the target. Returns the target."""
    if entry_id == into_id:
        raise InvalidInput("An entry cannot be merged into itself.")
    with transaction.atomic():
        entry = _pending_get(entry_id)
        target = (
            VaultEntry.objects.select_for_update().filter(pk=into_id, project_id=entry.project_id).first()
        )
        if target is None:
            raise NotFound(f"Entry {into_id} (merge target) not found.")
        merged = target.content
        if trust.text_normalise(entry.content) not in trust.text_normalise(target.content):
            merged = f"{target.content.rstrip()}\n\n{entry.content.strip()}"
        entry_update(
            entry_id=target.pk,
            changes=EntryChanges(content=merged, tags=[*target.tags, *entry.tags]),
            changed_by=by,
        )
        entry.status = EntryStatus.SUPERSEDED
        entry.supersedes_id = None  # folded into the target, it replaces nothing itself
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "supersedes", "updated_at"])
        _review_resolve(entry, resolution=f"merged into {target.pk}", by=by)
    target.refresh_from_db()
    return target


def review_policy_set(
    *, project: Project, category: str = "", hold_agent_writes: bool, hold_extracted: bool
) -> ReviewPolicy:
    if category:
        _category_check(category)
    policy, _ = ReviewPolicy.objects.update_or_create(
        project=project,
        category=category,
        defaults={"hold_agent_writes": hold_agent_writes, "hold_extracted": hold_extracted},
    )
    return policy


def entries_mark_accessed(entry_ids: list[int]) -> int:
    """Count a retrieval of these entries (context injection cites them): one UPDATE, returns rows."""
    ids = sorted({int(i) for i in entry_ids})
    if not ids:
        return 0
    return VaultEntry.objects.filter(pk__in=ids).update(
        access_count=F("access_count") + 1, last_accessed_at=timezone.now()
    )


def review_bulk(*, project_id: int, entry_ids: list[int], action: str, by: str) -> dict:
    """Approve or reject many pending entries of one project; each that cannot be done is reported in
    `errors` (entry id → why) and the rest go on. Returns {"done": [ids], "errors": {id: detail}}."""
    if action not in ("approve", "reject"):
        raise InvalidInput(f"Unknown action {action!r}; use approve or reject.")
    done, errors = [], {}
    for entry_id in entry_ids:
        try:
            entry = VaultEntry.objects.filter(pk=entry_id, project_id=project_id).only("status").first()
            if entry is None:
                raise NotFound("not found in this project")
            if entry.status != EntryStatus.PENDING:
                raise Conflict(f"not pending review (it is {entry.status})")
            if action == "approve":
                review_approve(entry_id=entry_id, by=by)
            else:
                review_reject(entry_id=entry_id, by=by)
            done.append(entry_id)
        except DomainError as exc:
            errors[entry_id] = exc.detail
    return {"done": done, "errors": errors}
