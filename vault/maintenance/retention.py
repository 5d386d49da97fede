"""Retention of entries: what is older than its category's retention is archived, and purged for good
(with an audit row) after a grace period unless it was restored."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.db.models.functions import Greatest

from vault import services
from vault.maintenance.runs import ACTOR, run_change, run_count, run_guarded
from vault.models import (
    WRITTEN_FROM_MESSAGES,
    CompactionRun,
    DeletionAudit,
    EntryStatus,
    EntryVersion,
    Project,
    RetentionMark,
    VaultEntry,
)
from vault.services.audit import deletion_audit_record
from vault.services.chains import chain_join, chain_neighbours_lock

RETENTION_ACTOR = f"{ACTOR}: retention"  # who an entry's archiving by retention is versioned as


def entry_erase(entry: VaultEntry, *, reason: str, criteria: dict, deleted_by: str, now: datetime) -> None:
    """Delete an entry for good, with its versions (so the content is really gone) and an audit row.
    Its supersede chain is joined over it, as a delete joins it (services.chain_join)."""
    predecessor, successor = chain_neighbours_lock(entry)
    versions = EntryVersion.objects.filter(entry_id=entry.pk)
    deletion_audit_record(
        project_id=entry.project_id,
        agent_slug=entry.agent.slug,
        kind="entry",
        object_id=entry.pk,
        category=entry.category,
        reason=reason,
        criteria=criteria,
        content=entry.content,
        versions_deleted=versions.count(),
        item_created_at=entry.created_at,
        deleted_by=deleted_by,
        now=now,
    )
    versions.delete()
    RetentionMark.objects.filter(kind=RetentionMark.Kind.ENTRY, object_id=entry.pk).delete()
    entry.delete()
    chain_join(predecessor, successor, changed_by=deleted_by)


def entries_from_message_erase(
    *, agent_id: int, message_id: int, deleted_by: str, now: datetime
) -> list[VaultEntry]:
    """Erase (entry_erase, audited as a forget naming the message) the entries written automatically
    from this message alone and never changed since: no version, so neither edited, approved, rejected,
    archived nor restored by anyone. One that names other messages too (a handoff) or that a person
    has touched holds knowledge of its own and stays, its provenance naming the erased id. Returns the
    erased entries (their content and tags, for the caller's copies of them). Call in the forget's
    transaction."""
    entries = (
        VaultEntry.objects.select_for_update(of=("self",))
        .select_related("agent")
        .filter(agent_id=agent_id, source__in=WRITTEN_FROM_MESSAGES, source_message_ids=[message_id])
        .exclude(Exists(EntryVersion.objects.filter(entry_id=OuterRef("pk"))))
        .order_by("pk")
    )
    erased = list(entries)
    for entry in erased:
        entry_erase(entry, reason=DeletionAudit.Reason.FORGET, criteria={"source_message_id": message_id},
                    deleted_by=deleted_by, now=now)  # fmt: skip
    return erased


def relevance(*, category: str, created_at: datetime, importance: float, access_count: int, now) -> float:
    """Decay used by the size limit: recency halves every half-life of the category, boosted by use and
    importance."""
    half_life = settings.MEMORY_HALF_LIFE_HOURS.get(category, 720)
    age_hours = max(0.0, (now - created_at).total_seconds() / 3600)
    return 0.5 ** (age_hours / half_life) * (1 + 0.1 * access_count) * (1 + 0.2 * importance)


def retention_step_expire_entries(run: CompactionRun, project: Project, now: datetime) -> None:
    """Archive the active entries older than their category's retention (counted from last update or
    use) and mark them, with the archived ones as old, for the purge after the grace period. Pending,
    superseded and rejected entries are left alone: retention never archives nor purges them."""
    if not settings.MEMORY_RETENTION_ENABLED:
        run.notes.append("retention is disabled (MEMORY_RETENTION_ENABLED)")
        return
    marked = RetentionMark.objects.filter(kind=RetentionMark.Kind.ENTRY).values("object_id")
    for category, days in settings.MEMORY_RETENTION_DAYS.items():
        if not days or category == "messages":
            continue
        cutoff = now - timedelta(days=days)
        expired = (
            VaultEntry.objects.filter(
                project=project, category=category, status__in=[EntryStatus.ACTIVE, EntryStatus.ARCHIVED]
            )
            .exclude(pk__in=marked)
            .annotate(last_used=Greatest("updated_at", "last_accessed_at", "created_at"))
            .filter(last_used__lt=cutoff)
            .order_by("pk")
            .values_list("pk", "status")
        )
        for entry_id, _ in list(expired):
            with transaction.atomic():
                status = _expired_entry_lock(entry_id, cutoff)
                # Another run (the schedule and the command at once) may have marked it while this
                # one waited for the lock: read now, after the lock, this statement sees its mark.
                if (
                    status is None
                    or RetentionMark.objects.filter(
                        kind=RetentionMark.Kind.ENTRY, object_id=entry_id
                    ).exists()
                ):
                    continue
                if status == EntryStatus.ACTIVE:
                    services.entry_update(
                        entry_id=entry_id,
                        changes=services.EntryChanges(status=EntryStatus.ARCHIVED),
                        changed_by=RETENTION_ACTOR,
                    )
                    done = "archived"
                else:
                    done = "already archived"
                RetentionMark.objects.create(
                    project=project, kind=RetentionMark.Kind.ENTRY, object_id=entry_id, marked_at=now
                )
            run_count(run, "entries_expired")
            run_change(
                run,
                "retention",
                "expire-entry",
                f"entry {entry_id}",
                f"{category} older than {days} days: {done}, purged after "
                f"{settings.MEMORY_PURGE_GRACE_DAYS} days unless restored",
            )


def _expired_entry_lock(entry_id: int, cutoff: datetime) -> str | None:
    """Lock the entry and return its status if it is still expired (active or archived, not updated nor
    used since `cutoff`); else None.

    The step lists a category's expired entries first and archives them one by one: an entry edited
    (or used) in between was archived all the same and marked for the purge, its fresh text with it.
    Checked under the row lock, which every edit takes."""
    return (
        VaultEntry.objects.select_for_update(of=("self",))
        .filter(pk=entry_id, status__in=[EntryStatus.ACTIVE, EntryStatus.ARCHIVED])
        .annotate(last_used=Greatest("updated_at", "last_accessed_at", "created_at"))
        .filter(last_used__lt=cutoff)
        .values_list("status", flat=True)
        .first()
    )


def retention_marks_due(project: Project, now: datetime, kind: str):
    """Retention marks of `kind` whose grace period is over, oldest first."""
    cutoff = now - timedelta(days=settings.MEMORY_PURGE_GRACE_DAYS)
    return RetentionMark.objects.filter(project=project, kind=kind, marked_at__lte=cutoff).order_by("pk")


def _entry_purge(run: CompactionRun, mark: RetentionMark, now: datetime) -> None:
    entry = (
        VaultEntry.objects.select_for_update(of=("self",)).select_related("agent").filter(pk=mark.object_id)
    )
    entry = entry.first()
    if entry is None or entry.status != EntryStatus.ARCHIVED or _changed_since(entry, mark):
        mark.delete()
        return
    entry_erase(entry, reason=DeletionAudit.Reason.PURGE, criteria={"retention": entry.category},
                deleted_by=f"{ACTOR}: retention purge", now=now)  # fmt: skip
    run_count(run, "entries_purged")
    run_change(run, "purge", "delete-entry", f"entry {mark.object_id}",
               f"archived by retention on {mark.marked_at:%Y-%m-%d}, grace period over")  # fmt: skip


def _changed_since(entry: VaultEntry, mark: RetentionMark) -> bool:
    """Whether anyone but retention changed the entry since retention marked it: restored (and archived
    again by hand), edited. Its status alone said nothing of that: an entry a curator restored, then
    archived again within the grace period, was purged as if retention had archived it."""
    versions = EntryVersion.objects.filter(entry_id=entry.pk)
    # After the version retention's archiving wrote, if it did (the mark's time is the run's start; an
    # edit just before the archiving is older than the archiving, not a change since).
    archived_by = versions.filter(changed_by=RETENTION_ACTOR).order_by("-pk").values_list("pk", flat=True)
    since = versions.filter(changed_at__gte=mark.marked_at, pk__gt=archived_by.first() or 0)
    return since.exclude(changed_by=RETENTION_ACTOR).exists()


def retention_step_purge_entries(run: CompactionRun, project: Project, now: datetime) -> None:
    """Delete the entries retention archived more than MEMORY_PURGE_GRACE_DAYS ago, each with an audit
    row. An entry restored in the meantime (made active again), or changed by anyone since (restored
    and archived again, edited), is no longer expired: its mark is dropped.

    Each entry is purged in a transaction of its own: its row is locked only while it is deleted, and
    one that fails is rolled back and noted (its mark stays, so the next run tries again) while the
    others are purged.
    """
    if not settings.MEMORY_RETENTION_ENABLED:
        return
    for mark in list(retention_marks_due(project, now, RetentionMark.Kind.ENTRY)):
        run_guarded(run, f"entry {mark.object_id}", lambda m=mark: _entry_purge(run, m, now))
