"""Maintenance runs across the apps: which steps make a compaction run and a retention run, the size
limit (entries and messages ranked together) and forgetting (entries and messages by id or criteria).

The steps live with the data they change (vault.maintenance, sessions_app.maintenance) and record
themselves on vault's run engine; this module, in the composition layer, is the only place that names
steps of both apps. The API, the curator page, the commands and the schedule call these."""

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet, Sum
from django.utils import timezone

from memoryproject.errors import InvalidInput
from memoryproject.timestamps import bound, time_range_check
from search.embedding_index import embeddings_stale_remove
from sessions_app import services as sessions_services
from sessions_app.maintenance.retention import (
    message_erase,
    message_sessions_lock,
    retention_step_expire_messages,
    retention_step_purge_messages,
)
from sessions_app.maintenance.trimming import (
    compaction_step_expired_checkpoints,
    compaction_step_trim_sessions,
)
from sessions_app.models import Message
from vault import services
from vault.etags import Expected, entry_precondition_check
from vault.maintenance.compaction import (
    compaction_step_cap_categories,
    compaction_step_propose_archive,
)
from vault.maintenance.retention import (
    entry_erase,
    relevance,
    retention_step_expire_entries,
    retention_step_purge_entries,
)
from vault.maintenance.runs import ACTOR, run_change, run_count, run_guarded, run_steps
from vault.models import (
    Agent,
    CompactionRun,
    DeletionAudit,
    EntryStatus,
    Project,
    RunKind,
    RunTrigger,
    VaultEntry,
)
from vault.stats import OctetLength
from vault.text import tags_filter_check

COMPACTION_COUNTERS = (
    "checkpoints_removed",
    "sessions_trimmed",
    "messages_archived",
    "sessions_mined",
    "insights_extracted",
    "handoffs_created",
    "categories_capped",
    "entries_merged",
    "summaries_created",
    "archive_proposed",
    "errors",
)

COMPACTION_STEPS = (
    compaction_step_expired_checkpoints,
    compaction_step_trim_sessions,
    compaction_step_cap_categories,
    compaction_step_propose_archive,
)


def compaction_run(
    *, project: Project, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.API
) -> CompactionRun:
    """Run the compaction steps for one project and record the run (a dry run is not stored)."""
    return run_steps(kind=RunKind.COMPACTION, project=project, trigger=trigger, dry_run=dry_run, now=now,
                     steps=COMPACTION_STEPS, counters=COMPACTION_COUNTERS)  # fmt: skip


def compaction_run_all(
    *, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.SCHEDULE
) -> list[CompactionRun]:
    """Compaction of every project, one recorded run each (what the schedule and the command run)."""
    return _every_project(compaction_run, dry_run=dry_run, now=now, trigger=trigger)


def _every_project(run, **options) -> list[CompactionRun]:
    return [run(project=project, **options) for project in Project.objects.order_by("pk")]


# --- Retention ---------------------------------------------------------------------------------


RETENTION_COUNTERS = (
    "entries_expired",
    "messages_expired",
    "entries_purged",
    "messages_purged",
    "agents_over_size",
    "entries_archived_for_size",
    "messages_archived_for_size",
    "errors",
)


def agent_stored_bytes(agent: Agent) -> int:
    """Active stored text of an agent: active entries and non-archived messages, in UTF-8 bytes (what
    MEMORY_AGENT_MAX_BYTES limits; counted in characters, CJK text held three times the limit)."""
    entries = VaultEntry.objects.filter(agent=agent, status=EntryStatus.ACTIVE).aggregate(
        n=Sum(OctetLength("content"))
    )["n"]
    messages = Message.objects.filter(agent=agent, archived=False).aggregate(n=Sum(OctetLength("text")))["n"]
    return (entries or 0) + (messages or 0)


def _agent_shrink(run: CompactionRun, agent: Agent, now: datetime) -> None:
    if agent_stored_bytes(agent) <= settings.MEMORY_AGENT_MAX_BYTES:
        return
    active = list(VaultEntry.objects.select_for_update().filter(agent=agent, status=EntryStatus.ACTIVE))
    # Measured again under the entries' locks: another run at once (the schedule and the command) that
    # held them has shrunk the agent already, and this one would archive a share of what it kept.
    before = agent_stored_bytes(agent)
    if before <= settings.MEMORY_AGENT_MAX_BYTES:
        return
    items = [
        (relevance(category=e.category, created_at=e.updated_at, importance=e.importance,
                    access_count=e.access_count, now=now), "entry", e.pk)
        for e in active
    ] + [
        (relevance(category="messages", created_at=m.created_at, importance=0.5, access_count=0, now=now),
         "message", m.pk)
        for m in Message.objects.filter(agent=agent, archived=False).only("pk", "created_at")
    ]  # fmt: skip
    items.sort(key=lambda item: (-item[0], -item[2]))
    keep = int(len(items) * settings.MEMORY_SIZE_KEEP_RATIO)
    dropped = items[keep:]
    entry_ids = [pk for _, kind, pk in dropped if kind == "entry"]
    message_ids = [pk for _, kind, pk in dropped if kind == "message"]
    for entry_id in entry_ids:
        services.entry_update(
            entry_id=entry_id,
            changes=services.EntryChanges(status=EntryStatus.ARCHIVED),
            changed_by=f"{ACTOR}: size limit",
        )
    Message.objects.filter(pk__in=message_ids).update(archived=True)
    after = agent_stored_bytes(agent)
    run_count(run, "agents_over_size")
    run_count(run, "entries_archived_for_size", len(entry_ids))
    run_count(run, "messages_archived_for_size", len(message_ids))
    run_change(
        run,
        "size",
        "archive-least-relevant",
        agent.slug,
        f"{before} bytes of active memory is over MEMORY_AGENT_MAX_BYTES="
        f"{settings.MEMORY_AGENT_MAX_BYTES}: kept the {keep} most relevant of {len(items)} items, "
        f"archived the rest ({after} bytes active now)",
        archived_entry_ids=entry_ids,
        archived_message_ids=message_ids,
        bytes_before=before,
        bytes_after=after,
    )


def retention_step_size(run: CompactionRun, project: Project, now: datetime) -> None:
    """Enforce the per-agent size limit by archiving the least relevant items (keeping
    MEMORY_SIZE_KEEP_RATIO of them)."""
    for agent in Agent.objects.filter(project=project).order_by("pk"):
        run_guarded(run, f"agent {agent.slug} size", lambda a=agent: _agent_shrink(run, a, now))


def retention_step_purge_messages_everywhere(run: CompactionRun, project: Project, now: datetime) -> None:
    """Purge the messages due (sessions_app), then drop the old vectors of the daily notes their text was
    erased from, so that semantic search cannot find it by its meaning until they are embedded again."""
    purged = run.counts.get("messages_purged", 0)
    retention_step_purge_messages(run, project, now)
    if run.counts.get("messages_purged", 0) > purged:
        embeddings_stale_remove("file", project_id=project.pk)


RETENTION_STEPS = (
    retention_step_expire_entries,
    retention_step_expire_messages,
    retention_step_purge_entries,
    retention_step_purge_messages_everywhere,
    retention_step_size,
)


def lifecycle_run(*, now: datetime | None = None) -> dict:
    """The session lifecycle (sessions_app's lifecycle_run); when it deleted sessions, whose exchanges
    it took out of the daily notes, those agents' notes lose their old vectors, as after a forget, so
    that semantic search cannot find them by the erased text's meaning until they are embedded again.
    Only the agents whose sessions were deleted: the statement reads every note of the agents it is
    given, and dropping the others' (their text unchanged) would only have them embedded again."""
    deleted_from: set[tuple[int, int]] = set()
    counts = sessions_services.lifecycle_run(now=now, deleted_from=deleted_from)
    agents_by_project: dict[int, list[int]] = {}
    for project_id, agent_id in sorted(deleted_from):
        agents_by_project.setdefault(project_id, []).append(agent_id)
    for project_id, agent_ids in agents_by_project.items():
        embeddings_stale_remove("file", project_id=project_id, agent_ids=agent_ids)
    return counts


def retention_run(
    *, project: Project, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.API
) -> CompactionRun:
    """Retention, purge and size limit for one project, recorded like a compaction run."""
    return run_steps(kind=RunKind.RETENTION, project=project, trigger=trigger, dry_run=dry_run, now=now,
                     steps=RETENTION_STEPS, counters=RETENTION_COUNTERS)  # fmt: skip


def retention_run_all(
    *, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.SCHEDULE
) -> list[CompactionRun]:
    """Retention of every project, one recorded run each (what the schedule and the command run)."""
    return _every_project(retention_run, dry_run=dry_run, now=now, trigger=trigger)


def run_report_lines(run: CompactionRun) -> list[str]:
    """A run as text for a terminal: its non-zero counts, one line per change with its reason, then its
    notes (what failed and why: the counts alone say only how many)."""
    counts = ", ".join(f"{key}={value}" for key, value in run.counts.items() if value)
    prefix = "[dry run] " if run.dry_run else ""
    lines = [f"{prefix}{run.project.slug}: {counts or 'nothing to do'} ({run.duration_ms} ms)"]
    lines += [f"  {c['step']} {c['action']} {c['target']}: {c['reason']}" for c in run.changes]
    lines += [f"  note: {note}" for note in run.notes]
    return lines


def runs_failure(runs: list[CompactionRun]) -> str | None:
    """What failed in these runs, in one line, or None when nothing did. A command ends with it as its
    error, so that a run with failed steps exits non-zero (the steps around them are still done)."""
    failed = [
        f"{run.counts['errors']} error{'s' if run.counts['errors'] > 1 else ''} in project {run.project.slug}"
        for run in runs
        if run.counts.get("errors")
    ]
    return "; ".join(failed) + " (see the notes above)" if failed else None


# --- Forgetting ---------------------------------------------------------------------------------


def _forget_criteria(*, by_id: bool, agent, category, tags, since, until, source, kinds) -> dict:
    """The criteria of a forget request as recorded in its audit rows; InvalidInput when the request
    mixes ids and criteria, names nothing, or asks for what does not apply."""
    criteria = {
        key: value
        for key, value in {
            "agent": agent.slug if agent else None,
            "category": category,
            "tags": tags or None,
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
            "source": source,
        }.items()
        if value is not None
    }
    if by_id and criteria:
        raise InvalidInput(
            "Give either ids / message_ids or criteria (agent, category, tags, time range, source), not both."
        )
    if not by_id and not criteria:
        raise InvalidInput(
            "Say what to forget: ids, message_ids, or at least one criterion "
            "(agent, category, tags, since, until, source)."
        )
    time_range_check(since, until)
    if "messages" in kinds and (category or tags or source):
        raise InvalidInput("category, tags and source apply to entries only; remove 'messages' from kinds.")
    return criteria


@transaction.atomic
def _forget_erase(
    entries, messages, *, criteria: dict, deleted_by: str, now: datetime, expected: Expected | None = None
):
    """Erase the selected entries and messages, each with its audit row; returns their ids, and those
    of the entries erased as written from an erased message alone. With `expected`, an entry changed
    since the caller read it is refused (PreconditionFailed), checked under its lock, and nothing is
    erased. The fourth list: the entries left in place without an erased message's quote (a handoff);
    the fifth: the compaction summaries rewritten without an erased message."""
    entry_ids, message_ids, derived_ids, rewritten_ids, summary_ids = [], [], [], set(), set()
    message_sessions_lock(messages)
    for entry in entries.select_for_update(of=("self",)).select_related("agent").order_by("pk"):
        entry_precondition_check(entry, expected)
        entry_ids.append(entry.pk)
        entry_erase(
            entry, reason=DeletionAudit.Reason.FORGET, criteria=criteria, deleted_by=deleted_by, now=now
        )
    for message in messages.select_for_update(of=("self",)).select_related("agent").order_by("pk"):
        message_ids.append(message.pk)
        erased_with = message_erase(
            message, reason=DeletionAudit.Reason.FORGET, criteria=criteria, deleted_by=deleted_by, now=now
        )
        derived_ids += erased_with.derived_entry_ids
        rewritten_ids |= set(erased_with.rewritten_entry_ids)
        summary_ids |= set(erased_with.summary_ids)
    summary_ids -= set(message_ids)  # a summary forgotten with its messages is counted as a message
    return entry_ids, message_ids, derived_ids, sorted(rewritten_ids - set(derived_ids)), sorted(summary_ids)


def _forget_filtered(
    entries: QuerySet,
    messages: QuerySet,
    *,
    agent: Agent | None,
    category: str | None,
    tags: list[str] | None,
    since: datetime | None,
    until: datetime | None,
    source: str | None,
    kinds: list[str],
) -> tuple[QuerySet, QuerySet]:
    """The entries and messages a forget by criteria deletes."""
    if agent:
        entries, messages = entries.filter(agent=agent), messages.filter(agent=agent)
    if category:
        entries = entries.filter(category=category)
    if tags:
        entries = entries.filter(tags__contains=tags)
    if source:
        entries = entries.filter(source=source)
    if since:
        entries, messages = entries.filter(created_at__gte=since), messages.filter(created_at__gte=since)
    if until:  # before `until`, as /search reads it: a forget deletes what the same search shows
        entries, messages = entries.filter(created_at__lt=until), messages.filter(created_at__lt=until)
    if "entries" not in kinds:
        entries = entries.none()
    if "messages" not in kinds:
        messages = messages.none()
    return entries, messages


def _forget_archived(
    project: Project, agent_ids: list[int] | None, messages: QuerySet, message_ids: list[int] | None, filters
) -> sessions_services.ArchiveFilter | None:
    """The messages of archived sessions (in cold storage, not in `messages`) a forget names: the
    named ids not found among the live messages, or the criteria's when they take in messages."""
    wanted = sessions_services.ArchiveFilter(project_id=project.pk, agent_ids=agent_ids)
    if message_ids is not None:
        wanted.message_ids = set(message_ids) - set(messages.values_list("pk", flat=True))
        return wanted if wanted.message_ids else None
    if "messages" not in filters["kinds"]:
        return None
    agent = filters["agent"]
    wanted.agent_id, wanted.since, wanted.until = (
        agent.pk if agent else None,
        filters["since"],
        filters["until"],
    )
    return wanted


def forget(
    *,
    project: Project,
    agent_ids: list[int] | None,
    deleted_by: str,
    ids: list[int] | None = None,
    message_ids: list[int] | None = None,
    agent: Agent | None = None,
    category: str | None = None,
    tags: list[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    source: str | None = None,
    kinds: list[str] | None = None,
    now: datetime | None = None,
    expected: Expected | None = None,
) -> dict:
    """Delete entries and/or messages by id or by criteria, for good, with one audit row each.

    `agent_ids` limits what may be touched (an agent token's own agent); None means the whole project.
    Ids that do not exist or may not be seen are reported in `not_found` and touch nothing. `expected`
    (MCP memory_forget's expected_updated_at) is a condition on one entry named by id: it is forgotten
    only if it has not changed since it was read.
    """
    now = now or timezone.now()
    kinds = kinds or ["entries"]
    since, until = bound(since), bound(until)
    # As stored (so that they match), each one checked; a blank one is refused, not dropped, which
    # would widen what is deleted.
    tags = tags_filter_check(tags, blank_ok=False) if tags else tags
    by_id = bool(ids) or bool(message_ids)
    if expected is not None and (len(ids or []) != 1 or message_ids):
        raise InvalidInput(
            "expected_updated_at is the state of one entry: name exactly one entry in `ids` (and no "
            "messages) with it.",
            [{"loc": ["expected_updated_at"], "msg": "needs exactly one entry id"}],
        )
    filters = {
        "agent": agent,
        "category": category,
        "tags": tags,
        "since": since,
        "until": until,
        "source": source,
        "kinds": kinds,
    }
    criteria = _forget_criteria(by_id=by_id, **filters)
    entries = VaultEntry.objects.filter(project=project)
    messages = Message.objects.filter(project=project)
    if agent_ids is not None:
        entries, messages = entries.filter(agent_id__in=agent_ids), messages.filter(agent_id__in=agent_ids)
    if by_id:
        wanted, wanted_messages = set(ids or []), set(message_ids or [])
        entries = entries.filter(pk__in=wanted)
        messages = messages.filter(pk__in=wanted_messages)
        audit_criteria = {"ids": sorted(wanted), "message_ids": sorted(wanted_messages)}
    else:
        entries, messages = _forget_filtered(entries, messages, **filters)
        audit_criteria = {**criteria, "kinds": kinds}
    archived = _forget_archived(project, agent_ids, messages, message_ids if by_id else None, filters)
    with transaction.atomic():
        thawed = sessions_services.archived_sessions_thaw(archived, by=deleted_by) if archived else []
        erased = _forget_erase(
            entries, messages, criteria=audit_criteria, deleted_by=deleted_by, now=now, expected=expected
        )
        deleted_entry_ids, deleted_message_ids, derived_entry_ids, rewritten_entry_ids, summary_ids = erased
        sessions_services.archived_sessions_refreeze(thawed, by=deleted_by)
    _forget_vectors_drop(project, agent_ids, deleted_message_ids, rewritten_entry_ids, summary_ids)
    missing = (set(ids or []) - set(deleted_entry_ids)) | (set(message_ids or []) - set(deleted_message_ids))
    return _forget_answer(
        deleted_entry_ids,
        deleted_message_ids,
        derived_entry_ids,
        rewritten_entry_ids,
        summary_ids,
        sorted(missing),
    )


def _forget_vectors_drop(project, agent_ids, message_ids, rewritten_entry_ids, summary_ids) -> None:
    """The erased messages' text was taken out of the daily notes, of entries quoting them (a handoff)
    and of compaction summaries: those rows' old vectors go, so semantic search cannot find it."""
    for kind, changed in (("file", message_ids), ("entry", rewritten_entry_ids), ("message", summary_ids)):
        if changed:
            embeddings_stale_remove(kind, project_id=project.pk, agent_ids=agent_ids)


def _forget_answer(
    entry_ids, message_ids, derived_ids, rewritten_ids, summary_ids, missing: list[int]
) -> dict:
    """A forget's answer (vault's ForgetOut). The entries written from a forgotten message alone are
    deleted too, each with its audit row: counted with the entries (they were left out, and the answer
    said less than the audit)."""
    entries = len(entry_ids) + len(derived_ids)
    return {
        "count": entries + len(message_ids),
        "entries": entries,
        "derived_entries": len(derived_ids),
        "entries_rewritten": len(rewritten_ids),
        "messages": len(message_ids),
        "summaries_rewritten": len(summary_ids),
        "not_found": missing,
    }
