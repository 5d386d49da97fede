"""Compaction of the vault: each agent's category capped at MEMORY_VAULT_CAP active entries (the older
ones merged into summary entries), and entries nobody ever used proposed for archiving."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from vault import services
from vault.maintenance.runs import ACTOR, run_change, run_count, run_guarded
from vault.models import CompactionRun, EntryMerge, EntrySource, EntryStatus, Project, VaultEntry
from vault.text import hashtags_find, text_clip

PREVIEW_CHARS = 200
ARCHIVE_PROPOSALS_LISTED = 100


def _summary_chunks(entries: list[VaultEntry]) -> list[tuple[list[VaultEntry], str]]:
    """Group merged entries into summaries that each fit the entry size and tag limits (usually one)."""
    chunks: list[tuple[list[VaultEntry], list[str]]] = []
    members: list[VaultEntry] = []
    lines: list[str] = []
    tags: set[str] = {"compacted"}
    max_bytes = settings.MEMORY_MAX_ENTRY_BYTES - 100
    for entry in entries:
        line = (
            f"- [{timezone.localtime(entry.created_at):%Y-%m-%d}] {text_clip(entry.content, PREVIEW_CHARS)}"
        )
        line_tags = set(hashtags_find(line))
        size = sum(len(x.encode()) + 1 for x in lines) + len(line.encode())
        if members and (size > max_bytes or len(tags | line_tags) > settings.MEMORY_MAX_TAGS):
            chunks.append((members, lines))
            members, lines, tags = [], [], {"compacted"}
        members.append(entry)
        lines.append(line)
        tags |= line_tags
    if members:
        chunks.append((members, lines))
    return [
        (chunk, f"Compacted {len(chunk)} older entries:\n" + "\n".join(chunk_lines))
        for chunk, chunk_lines in chunks
    ]


def _category_cap(run: CompactionRun, agent_id: int, category: str, now: datetime) -> None:
    cap, keep = settings.MEMORY_VAULT_CAP, settings.MEMORY_VAULT_KEEP
    entries = list(
        VaultEntry.objects.select_for_update(of=("self",))
        .filter(agent_id=agent_id, category=category, status=EntryStatus.ACTIVE)
        .select_related("agent")
        .order_by("-created_at", "-id")
    )
    if len(entries) <= cap:
        return
    merged = entries[keep:]
    agent = entries[0].agent
    for chunk, content in _summary_chunks(merged):
        summary = services.entry_create(
            agent=agent,
            category=category,
            content=content,
            tags=["compacted"],
            importance=max(entry.importance for entry in chunk),
            source=EntrySource.COMPACTION,
            created_by=ACTOR,
            review=False,  # the merged entries are live: their summary must be too
        )
        for entry in chunk:
            services.entry_update(
                entry_id=entry.pk,
                changes=services.EntryChanges(status=EntryStatus.ARCHIVED),
                changed_by=f"{ACTOR}: merged into entry {summary.pk}",
            )
        EntryMerge.objects.bulk_create(
            [EntryMerge(summary=summary, entry=entry, run=run if run.pk else None) for entry in chunk]
        )
        run_count(run, "summaries_created")
        run_count(run, "entries_merged", len(chunk))
        run_change(
            run,
            "C",
            "merge-entries",
            f"{agent.slug}/{category}",
            f"{len(entries)} active entries is over MEMORY_VAULT_CAP={cap}: kept the {keep} newest, "
            f"merged {len(chunk)} older ones into summary entry {summary.pk} and archived them",
            summary_entry_id=summary.pk,
            merged_entry_ids=[entry.pk for entry in chunk],
        )
    run_count(run, "categories_capped")


def compaction_step_cap_categories(run: CompactionRun, project: Project, now: datetime) -> None:
    """Step C: each agent's category is capped at MEMORY_VAULT_CAP active entries."""
    groups = (
        VaultEntry.objects.filter(project=project, status=EntryStatus.ACTIVE)
        .values("agent_id", "category")
        .annotate(n=Count("id"))
        .filter(n__gt=settings.MEMORY_VAULT_CAP)
        .order_by("agent_id", "category")
    )
    for group in list(groups):
        agent_id, category = group["agent_id"], group["category"]
        run_guarded(
            run,
            f"agent {agent_id} {category}",
            lambda a=agent_id, c=category: _category_cap(run, a, c, now),
        )


def compaction_step_propose_archive(run: CompactionRun, project: Project, now: datetime) -> None:
    """Citations: active entries older than MEMORY_UNCITED_DAYS that no context build ever
    cited and nobody ever read (access_count 0, never accessed) are proposed for archiving, oldest
    first, as "propose_archive" changes in the run's record. Nothing is archived: a curator decides."""
    days = settings.MEMORY_UNCITED_DAYS
    stale = (
        VaultEntry.objects.filter(
            project=project,
            status=EntryStatus.ACTIVE,
            created_at__lt=now - timedelta(days=days),
            last_accessed_at__isnull=True,
            access_count=0,
        )
        .select_related("agent")
        .order_by("created_at", "id")
    )
    total = stale.count()
    run_count(run, "archive_proposed", total)
    for entry in stale[:ARCHIVE_PROPOSALS_LISTED]:
        run_change(
            run,
            "citations",
            "propose_archive",
            f"{entry.agent.slug}/{entry.category}/{entry.pk}",
            f"never cited in {days:g} days",
            entry_id=entry.pk,
            created_at=entry.created_at.isoformat(),
            preview=text_clip(entry.content, 80),
        )
    if total > ARCHIVE_PROPOSALS_LISTED:
        run.notes.append(
            f"citations: {total} entries never cited in {days:g} days; the oldest "
            f"{ARCHIVE_PROPOSALS_LISTED} are listed"
        )
