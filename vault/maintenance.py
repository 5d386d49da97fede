"""Keeping memory small and useful (issue 5): compaction, extraction, consolidation, retention, forgetting.

These are services (writes), reached through the thin wrappers at the end of vault/services.py and called
by the API, management commands and django-q2 tasks alike. Principles:

- Nothing is lost by compaction: trimmed messages and merged entries are archived (still searchable when
  asked for), never deleted, and every summary links to what it merged (EntryMerge).
- Each run is recorded as a CompactionRun with counts per step and the list of changes with reasons.
  A dry run executes the very same code inside a transaction that is rolled back, so it reports exactly
  what a real run would do and changes nothing.
- Locks are in the database (row locks, advisory locks), never in a process, so concurrent web workers,
  job workers and agents writing at the same time lose nothing.
"""

import hashlib
import logging
import re
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.db.models.functions import Greatest, Length
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput
from memoryproject.llm import LLMError, llm_configured, llm_json, prompt_render
from sessions_app.models import Message, Role, Session
from sessions_app.scan import DURABLE_CATEGORIES, scan_message
from vault import services
from vault.extraction import insights_extract
from vault.models import (
    Agent,
    AgentMaintenance,
    CompactionRun,
    DeletionAudit,
    EntryMerge,
    EntrySource,
    EntryStatus,
    EntryVersion,
    Project,
    RetentionMark,
    RunKind,
    RunTrigger,
    SessionMark,
    VaultEntry,
    WorkspaceFile,
)
from vault.text import hashtags_find

logger = logging.getLogger(__name__)

ACTOR = "maintenance"
PREVIEW_CHARS = 200
SCHEDULED_TRIGGERS = frozenset({"cron", "schedule", "scheduled"})
# Advisory lock namespace for per-agent memory jobs (extraction, consolidation): "mem" in ASCII.
AGENT_LOCK_CLASS = 0x6D656D


# --- Run recording --------------------------------------------------------------------------------


def _change(run: CompactionRun, step: str, action: str, target: str, reason: str, **details) -> None:
    change = {"step": step, "action": action, "target": target, "reason": reason}
    if details:
        change["details"] = details
    run.changes.append(change)


def _count(run: CompactionRun, key: str, n: int = 1) -> None:
    run.counts[key] = run.counts.get(key, 0) + n


def _run_steps(
    *, kind: str, project: Project, trigger: str, dry_run: bool, now: datetime | None, steps, counters
) -> CompactionRun:
    now = now or timezone.now()
    run = CompactionRun(
        project=project,
        kind=kind,
        trigger=trigger,
        dry_run=dry_run,
        started_at=now,
        counts=dict.fromkeys(counters, 0),
        changes=[],
        notes=[],
    )
    started = time.monotonic()
    if dry_run:
        # The same code path as a real run, rolled back: the report is exact and nothing changes.
        with transaction.atomic():
            for step in steps:
                step(run, project, now)
            transaction.set_rollback(True)
    else:
        run.save()
        for step in steps:
            step(run, project, now)
    run.duration_ms = round((time.monotonic() - started) * 1000, 2)
    if not dry_run:
        run.save()
    return run


def _guarded(run: CompactionRun, label: str, work) -> None:
    """Run one unit of work in its own (sub)transaction; a failure is noted and the run goes on."""
    try:
        with transaction.atomic():
            work()
    except Exception as exc:  # one corrupt session or group must not stop the whole run (seed 000)
        logger.exception("maintenance step failed on %s", label)
        run.notes.append(f"{label}: failed and skipped ({exc.__class__.__name__}: {exc})")
        _count(run, "errors")


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# --- Compaction -----------------------------------------------------------------------------------

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
# At most this many "propose_archive" changes are listed per run (all are counted).
ARCHIVE_PROPOSALS_LISTED = 100


def checkpoint_corruption(messages) -> str | None:
    """Why a checkpoint's stored messages cannot be recovered (seed 000 deletes such files), or None.
    A readable checkpoint holds a list of {"role": str, "text": str} objects."""
    if not isinstance(messages, list):
        return f"messages is a {type(messages).__name__}, not a list"
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"message {index} is not an object"
        if not isinstance(message.get("role"), str) or not isinstance(message.get("text"), str):
            return f"message {index} needs string 'role' and 'text'"
    return None


def compaction_step_expired_checkpoints(run: CompactionRun, project: Project, now: datetime) -> None:
    """Step A (seed 000): remove checkpoints older than MEMORY_CHECKPOINT_DAYS, and corrupt ones.

    A checkpoint expires when `now` reaches saved_at + MEMORY_CHECKPOINT_DAYS (the moment recovery stops
    returning it). One change per removed checkpoint, counted in counts["checkpoints_removed"]."""
    from sessions_app.models import Checkpoint

    days = settings.MEMORY_CHECKPOINT_DAYS
    cutoff = now - timedelta(days=days)
    for checkpoint in Checkpoint.objects.filter(project=project).select_related("agent").order_by("pk"):
        if checkpoint.saved_at <= cutoff:
            reason = f"saved {checkpoint.saved_at.isoformat()}, older than MEMORY_CHECKPOINT_DAYS={days:g}"
        else:
            problem = checkpoint_corruption(checkpoint.messages)
            if problem is None:
                continue
            reason = f"corrupt: {problem}"
        deleted, _ = Checkpoint.objects.filter(pk=checkpoint.pk, saved_at=checkpoint.saved_at).delete()
        if not deleted:  # replaced by a fresh save meanwhile: that one is not expired
            continue
        _count(run, "checkpoints_removed")
        _change(
            run,
            "A",
            "remove-checkpoint",
            checkpoint.agent.slug,
            reason,
            saved_at=checkpoint.saved_at.isoformat(),
            chat_id=checkpoint.chat_id,
        )


def _session_digest(messages: list[Message]) -> str:
    digest = hashlib.sha256()
    for message in messages:
        digest.update(f"{message.pk}\x1f{message.role}\x1f{message.text}\x1e".encode("utf-8", "replace"))
    return digest.hexdigest()


def _insights_store(
    *, agent: Agent, texts: list[str], tags: list[str], source: str
) -> tuple[list[VaultEntry], int]:
    """Store decisions and lessons found in texts; an identical entry already stored is not stored twice."""
    insights = insights_extract(
        texts,
        max_per_kind=settings.MEMORY_INSIGHTS_MAX,
        max_chars=settings.MEMORY_INSIGHT_CHARS,
        min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
    )
    created, duplicates = [], 0
    for category, found in (("decisions", insights.decisions), ("lessons", insights.lessons)):
        for text in found:
            if VaultEntry.objects.filter(agent=agent, category=category, content=text).exists():
                duplicates += 1
                continue
            created.append(
                services.entry_create(
                    agent=agent, category=category, content=text, tags=tags, source=source, created_by=ACTOR
                )
            )
    return created, duplicates


def _handoff_text(messages: list[Message], header: str) -> str:
    limit = settings.MEMORY_HANDOFF_MESSAGE_CHARS
    lines = [f"[{'User' if m.role == Role.USER else 'Agent'}]: {_preview(m.text, limit)}" for m in messages]
    return header + "\n" + "\n".join(lines)


def _session_trim(run: CompactionRun, session_id: int, now: datetime) -> None:
    keep = settings.MEMORY_CONVERSATION_KEEP
    # FOR NO KEY UPDATE of the session row only: two compactions of one session run one after the other,
    # while agents keep appending messages (their foreign-key checks take KEY SHARE, which this allows).
    session = Session.objects.select_for_update(of=("self",), no_key=True).select_related("agent")
    session = session.get(pk=session_id)
    active = list(Message.objects.filter(session=session, archived=False).order_by("created_at", "id"))
    if len(active) <= keep:
        return
    old = active[:-keep]
    agent = session.agent
    label = f"{agent.slug} session {session.external_id or session.pk}"
    digest = _session_digest(old)
    mark = SessionMark.objects.filter(session=session, purpose=SessionMark.Purpose.COMPACTION).first()
    created_ids, handoff_id = [], None
    if mark is not None and mark.content_hash == digest:
        _change(run, "B", "skip-mining", label, "the old part is unchanged since it was last mined")
    else:
        spoken = [m for m in old if m.role == Role.ASSISTANT and not m.internal and m.text.strip()]
        created, duplicates = _insights_store(
            agent=agent,
            texts=[m.text for m in spoken],
            tags=["compacted", "auto-extract"],
            source=EntrySource.COMPACTION,
        )
        created_ids = [entry.pk for entry in created]
        _count(run, "insights_extracted", len(created))
        if spoken:
            handoff = services.entry_create(
                agent=agent,
                category="handoffs",
                content=_handoff_text(
                    spoken[-3:], f"Compacted handoff: {len(old)} older messages of {label} were archived."
                ),
                tags=["compacted", "auto-handoff"],
                source=EntrySource.COMPACTION,
                created_by=ACTOR,
            )
            handoff_id = handoff.pk
            _count(run, "handoffs_created")
        SessionMark.objects.update_or_create(
            session=session,
            purpose=SessionMark.Purpose.COMPACTION,
            defaults={"content_hash": digest, "updated_at": now},
        )
        _count(run, "sessions_mined")
        if duplicates:
            run.notes.append(f"{label}: {duplicates} insight(s) already stored, not stored twice")
    archived = Message.objects.filter(pk__in=[m.pk for m in old], archived=False).update(archived=True)
    _count(run, "sessions_trimmed")
    _count(run, "messages_archived", archived)
    _change(
        run,
        "B",
        "trim-session",
        label,
        f"{len(active)} active messages is over MEMORY_CONVERSATION_KEEP={keep}: archived the "
        f"{archived} oldest (kept, searchable), kept the {keep} newest",
        session=session.pk,
        archived_message_ids=[m.pk for m in old],
        insight_entry_ids=created_ids,
        handoff_entry_id=handoff_id,
    )


def compaction_step_trim_sessions(run: CompactionRun, project: Project, now: datetime) -> None:
    """Step B (seed 000): sessions over MEMORY_CONVERSATION_KEEP active messages are trimmed."""
    keep = settings.MEMORY_CONVERSATION_KEEP
    long_sessions = (
        Session.objects.filter(project=project)
        .annotate(active=Count("messages", filter=Q(messages__archived=False)))
        .filter(active__gt=keep)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for session_id in list(long_sessions):
        _guarded(run, f"session {session_id}", lambda sid=session_id: _session_trim(run, sid, now))


def _summary_chunks(entries: list[VaultEntry]) -> list[tuple[list[VaultEntry], str]]:
    """Group merged entries into summaries that each fit the entry size and tag limits (usually one)."""
    chunks: list[tuple[list[VaultEntry], list[str]]] = []
    members: list[VaultEntry] = []
    lines: list[str] = []
    tags: set[str] = {"compacted"}
    max_bytes = settings.MEMORY_MAX_ENTRY_BYTES - 100
    for entry in entries:
        line = f"- [{timezone.localtime(entry.created_at):%Y-%m-%d}] {_preview(entry.content)}"
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
        _count(run, "summaries_created")
        _count(run, "entries_merged", len(chunk))
        _change(
            run,
            "C",
            "merge-entries",
            f"{agent.slug}/{category}",
            f"{len(entries)} active entries is over MEMORY_VAULT_CAP={cap}: kept the {keep} newest, "
            f"merged {len(chunk)} older ones into summary entry {summary.pk} and archived them",
            summary_entry_id=summary.pk,
            merged_entry_ids=[entry.pk for entry in chunk],
        )
    _count(run, "categories_capped")


def compaction_step_cap_categories(run: CompactionRun, project: Project, now: datetime) -> None:
    """Step C (seed 000): each agent's category is capped at MEMORY_VAULT_CAP active entries."""
    groups = (
        VaultEntry.objects.filter(project=project, status=EntryStatus.ACTIVE)
        .values("agent_id", "category")
        .annotate(n=Count("id"))
        .filter(n__gt=settings.MEMORY_VAULT_CAP)
        .order_by("agent_id", "category")
    )
    for group in list(groups):
        agent_id, category = group["agent_id"], group["category"]
        _guarded(
            run,
            f"agent {agent_id} {category}",
            lambda a=agent_id, c=category: _category_cap(run, a, c, now),
        )


def compaction_step_propose_archive(run: CompactionRun, project: Project, now: datetime) -> None:
    """Citations (issue 8): active entries older than MEMORY_UNCITED_DAYS that no context build ever
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
    _count(run, "archive_proposed", total)
    for entry in stale[:ARCHIVE_PROPOSALS_LISTED]:
        _change(
            run,
            "citations",
            "propose_archive",
            f"{entry.agent.slug}/{entry.category}/{entry.pk}",
            f"never cited in {days:g} days",
            entry_id=entry.pk,
            created_at=entry.created_at.isoformat(),
            preview=_preview(entry.content, 80),
        )
    if total > ARCHIVE_PROPOSALS_LISTED:
        run.notes.append(
            f"citations: {total} entries never cited in {days:g} days; the oldest "
            f"{ARCHIVE_PROPOSALS_LISTED} are listed"
        )


def compaction_step_search_index(run: CompactionRun, project: Project, now: datetime) -> None:
    """Steps D and E of the seed (index rebuild, legacy files) have nothing to do here: search vectors
    are generated columns that PostgreSQL keeps current, and there are no legacy files."""
    run.notes.append("steps D/E: search vectors are generated columns, nothing to rebuild")


COMPACTION_STEPS = (
    compaction_step_expired_checkpoints,
    compaction_step_trim_sessions,
    compaction_step_cap_categories,
    compaction_step_propose_archive,
    compaction_step_search_index,
)


def compaction_run(
    *, project: Project, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.API
) -> CompactionRun:
    """Run seed 000's compaction steps for one project and record the run (a dry run is not stored)."""
    return _run_steps(
        kind=RunKind.COMPACTION,
        project=project,
        trigger=trigger,
        dry_run=dry_run,
        now=now,
        steps=COMPACTION_STEPS,
        counters=COMPACTION_COUNTERS,
    )


def compaction_run_all(
    *, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.SCHEDULE
) -> list[CompactionRun]:
    """Compaction of every project, one recorded run each (what the schedule and the command run)."""
    return [
        compaction_run(project=project, dry_run=dry_run, now=now, trigger=trigger)
        for project in Project.objects.order_by("pk")
    ]


# --- Per-agent job lock ---------------------------------------------------------------------------


def _agent_lock_try(agent_id: int) -> bool:
    """Take the agent's job lock for the current transaction; False when another job holds it.

    A PostgreSQL advisory lock, so it holds across processes and machines and is released by commit,
    rollback or a dropped connection: a crashed worker can never leave an agent locked.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [AGENT_LOCK_CLASS, agent_id])
        return bool(cursor.fetchone()[0])


def _file_content(agent: Agent, path: str) -> str | None:
    file = WorkspaceFile.objects.filter(agent=agent, path=path, deleted_at__isnull=True).first()
    return None if file is None else file.content


CORE_FILE_ORDER = {"PROFILE.md": 2, "MEMORY.md": 3}


def _file_replace_if_unchanged(*, agent: Agent, path: str, expected: str | None, content: str) -> bool:
    """Replace a core file unless someone changed it since we read it (then keep theirs: no lost update)."""
    current = (
        WorkspaceFile.objects.select_for_update()
        .filter(agent=agent, path=path, deleted_at__isnull=True)
        .first()
    )
    if (current.content if current else None) != expected:
        logger.info("%s of %s changed while it was being rewritten; left as it is", path, agent)
        return False
    services.file_write(
        agent=agent,
        path=path,
        content=content,
        changed_by=ACTOR,
        enabled=True if current is None else None,
        sort_order=CORE_FILE_ORDER.get(path) if current is None else None,
    )
    return True


# --- Extraction after a conversation (seed 001) ----------------------------------------------------


def extraction_enqueue(*, agent: Agent, session_id: int, trigger_source: str) -> bool:
    """Queue the post-conversation extraction for a session (call when a session closes or goes quiet).

    Enqueued when the current transaction commits, so the task sees the messages just written.
    Conversations started by a schedule are skipped at once (seed 001: no recursion). Returns whether
    a task will be queued.
    """
    if not settings.MEMORY_EXTRACTION_ENABLED or trigger_source in SCHEDULED_TRIGGERS:
        return False
    from django_q.tasks import async_task

    def enqueue():
        async_task(
            "vault.tasks.extraction_run",
            agent.pk,
            session_id,
            trigger_source,
            task_name=f"extract agent {agent.pk} session {session_id}",
            group="extraction",
        )

    transaction.on_commit(enqueue)
    return True


def _transcript(messages: list[Message]) -> str:
    limit = settings.MEMORY_EXTRACTION_MESSAGE_CHARS
    lines = []
    for message in messages[-settings.MEMORY_EXTRACTION_TRANSCRIPT_MESSAGES :]:
        text = message.text if len(message.text) <= limit else message.text[:limit] + "... [truncated]"
        lines.append(f"{'User' if message.role == Role.USER else 'Assistant'}: {text}")
    return "\n\n".join(lines)


EXTRACTION_FIELDS = ("daily_entry", "memory_update", "profile_update")


def _extraction_contract(reply: dict) -> dict:
    """Check seed 001's JSON contract; anything else is an LLMError (and the caller falls back)."""
    if not isinstance(reply.get("should_update"), bool):
        raise LLMError(f"'should_update' must be true or false, got {reply.get('should_update')!r}")
    checked = {"should_update": reply["should_update"], "reason": str(reply.get("reason") or "")}
    for field in EXTRACTION_FIELDS:
        value = reply.get(field)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise LLMError(f"'{field}' must be a string, got {type(value).__name__}")
        checked[field] = value.strip()
    return checked


def _daily_heading(now: datetime, session: Session, how: str) -> str:
    return f"\n## {timezone.localtime(now):%H:%M} · session {session.external_id or session.pk} ({how})\n"


def _extract_with_llm(agent: Agent, session: Session, messages: list[Message], now: datetime) -> dict:
    day = timezone.localtime(now).date()
    daily_path = services.daily_note_path(day)
    profile, memory = _file_content(agent, "PROFILE.md"), _file_content(agent, "MEMORY.md")
    reply = llm_json(
        [
            {"role": "system", "content": prompt_render("extraction-system")},
            {
                "role": "user",
                "content": prompt_render(
                    "extraction-user",
                    date=f"{day:%Y-%m-%d}",
                    agent=agent.slug,
                    profile=profile or "(empty)",
                    memory=memory or "(empty)",
                    daily_path=daily_path,
                    daily=_file_content(agent, daily_path) or "(empty)",
                    transcript=_transcript(messages),
                ),
            },
        ]
    )
    contract = _extraction_contract(reply)
    result = {"path": "llm", "should_update": contract["should_update"], "reason": contract["reason"]}
    written = []
    if contract["should_update"]:
        if contract["daily_entry"]:
            services.daily_note_append(
                agent=agent,
                when=now,
                text=_daily_heading(now, session, "extraction") + contract["daily_entry"] + "\n",
                changed_by=ACTOR,
            )
            written.append(daily_path)
        for path, field, before in (
            ("MEMORY.md", "memory_update", memory),
            ("PROFILE.md", "profile_update", profile),
        ):
            content = contract[field] + "\n" if contract[field] else ""
            if (
                content
                and content != before
                and _file_replace_if_unchanged(agent=agent, path=path, expected=before, content=content)
            ):
                written.append(path)
    result["written"] = written
    return result


def _extract_with_heuristics(agent: Agent, session: Session, messages: list[Message], now: datetime) -> dict:
    created, _ = _insights_store(
        agent=agent,
        texts=[m.text for m in messages],
        tags=["auto-extract", "session-close"],
        source=EntrySource.EXTRACTION,
    )
    facts = []
    for message in messages:
        if message.role == Role.USER:
            for match in scan_message(message.text):
                if match.category in DURABLE_CATEGORIES and match.text not in facts:
                    facts.append(f"{match.category.replace('_', ' ')}: {match.text}")
    lines = [f"- {entry.category[:-1].capitalize()}: {entry.content}" for entry in created]
    lines += [f"- {fact}" for fact in dict.fromkeys(facts)]
    written = []
    if lines:
        services.daily_note_append(
            agent=agent,
            when=now,
            text=_daily_heading(now, session, "heuristic extraction") + "\n".join(lines) + "\n",
            changed_by=ACTOR,
        )
        written.append(services.daily_note_path(timezone.localtime(now).date()))
    return {
        "path": "heuristic",
        "should_update": bool(lines),
        "reason": f"{len(created)} insight(s), {len(facts)} durable fact(s)" if lines else "nothing found",
        "entry_ids": [entry.pk for entry in created],
        "written": written,
    }


def extraction_perform(
    *, agent_id: int, session_id: int, trigger_source: str, now: datetime | None = None
) -> dict:
    """Seed 001's post-conversation extraction: skip rules, cooldown, per-agent lock, LLM or heuristics.

    Returns {"status": "done"|"skipped", "reason", ...}; django-q2 stores it as the task's result.
    """
    now = now or timezone.now()

    def skipped(reason: str) -> dict:
        logger.info("extraction for agent %s session %s skipped: %s", agent_id, session_id, reason)
        return {"status": "skipped", "reason": reason}

    if not settings.MEMORY_EXTRACTION_ENABLED:
        return skipped("extraction is disabled (MEMORY_EXTRACTION_ENABLED)")
    if trigger_source in SCHEDULED_TRIGGERS:
        return skipped("conversation triggered by a schedule")
    agent = Agent.objects.filter(pk=agent_id).first()
    session = Session.objects.filter(pk=session_id, agent_id=agent_id).first()
    if agent is None or session is None:
        return skipped("agent or session no longer exists")
    messages = list(
        Message.objects.filter(session=session, internal=False, role__in=[Role.USER, Role.ASSISTANT])
        .exclude(text="")
        .order_by("created_at", "id")
    )
    if len(messages) < settings.MEMORY_EXTRACTION_MIN_MESSAGES:
        return skipped(f"{len(messages)} message(s), fewer than {settings.MEMORY_EXTRACTION_MIN_MESSAGES}")
    last_user = next((m for m in reversed(messages) if m.role == Role.USER), None)
    if last_user is None or len(last_user.text.strip()) < settings.MEMORY_EXTRACTION_MIN_USER_CHARS:
        return skipped(
            f"the last user message is under {settings.MEMORY_EXTRACTION_MIN_USER_CHARS} characters"
        )
    digest = _session_digest(messages)
    with transaction.atomic():
        if not _agent_lock_try(agent.pk):
            return skipped("another extraction or consolidation for this agent is running")
        state, _ = AgentMaintenance.objects.get_or_create(agent=agent)
        state = AgentMaintenance.objects.select_for_update().get(pk=state.pk)
        cooldown = timedelta(minutes=settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES)
        if state.last_extraction_at and now - state.last_extraction_at < cooldown:
            return skipped(f"cooldown: the last extraction for this agent was at {state.last_extraction_at}")
        mark = SessionMark.objects.filter(session=session, purpose=SessionMark.Purpose.EXTRACTION).first()
        if mark is not None and mark.content_hash == digest:
            return skipped("the conversation is unchanged since its last extraction")
        state.last_extraction_at = now
        state.save(update_fields=["last_extraction_at"])
        result = None
        if llm_configured():
            try:
                with transaction.atomic():
                    result = _extract_with_llm(agent, session, messages, now)
            except LLMError as exc:
                logger.warning("LLM extraction failed for %s, falling back to heuristics: %s", agent, exc)
                result = {"llm_error": str(exc)}
        if result is None or "llm_error" in result:
            result = {**(result or {}), **_extract_with_heuristics(agent, session, messages, now)}
        SessionMark.objects.update_or_create(
            session=session,
            purpose=SessionMark.Purpose.EXTRACTION,
            defaults={"content_hash": digest, "updated_at": now},
        )
    return {"status": "done", **result}


# --- Consolidation (seed 001's "emergence") --------------------------------------------------------

_DAILY_PATH_RE = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})\.md$")
_FACT_PREFIX_RE = re.compile(r"^(?:[-*+•]\s+|\d+[.)]\s+|\[[ xX]\]\s+)+")
_FACT_TIME_RE = re.compile(r"^(?:\[?\d{1,2}:\d{2}(?::\d{2})?\]?\s*[-–·:]?\s*)")
RECURRING_HEADING = "## Recurring facts"


def _fact_key(line: str) -> str:
    return " ".join(line.casefold().split()).rstrip(".!;:")


def _fact_clean(line: str) -> str:
    line = _FACT_PREFIX_RE.sub("", line.strip())
    return _FACT_TIME_RE.sub("", line).strip()


def daily_notes_recent(agent: Agent, now: datetime, days: int) -> list[tuple[str, str]]:
    """(path, content) of the agent's daily notes of the last `days` days, oldest first."""
    today = timezone.localtime(now).date()
    first = today - timedelta(days=days - 1)
    notes = []
    for file in WorkspaceFile.objects.filter(
        agent=agent, path__startswith="memory/", deleted_at__isnull=True
    ).order_by("path"):
        match = _DAILY_PATH_RE.match(file.path)
        if match and first.isoformat() <= match.group(1) <= today.isoformat():
            notes.append((file.path, file.content))
    return notes


def memory_merge_deterministic(memory: str, notes: list[tuple[str, str]]) -> str:
    """MEMORY.md without duplicate lines, plus the facts seen on at least two different days.

    A fact is a non-heading line of a daily note, without bullets and times; facts are compared
    case- and space-insensitively. Facts already in MEMORY.md are not added again, so running it twice
    changes nothing.
    """
    kept, seen = [], set()
    for line in memory.splitlines():
        key = _fact_key(_fact_clean(line))
        if line.strip() and not line.lstrip().startswith("#") and key:
            if key in seen:
                continue
            seen.add(key)
        kept.append(line)
    days_by_fact: dict[str, set[str]] = {}
    text_by_fact: dict[str, str] = {}
    for path, content in reversed(notes):  # newest first: the latest wording of a fact wins
        for line in content.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fact = _fact_clean(line)
            key = _fact_key(fact)
            if len(key) < 4:
                continue
            days_by_fact.setdefault(key, set()).add(path)
            text_by_fact.setdefault(key, fact)
    recurring = [
        (key, sorted(days)) for key, days in days_by_fact.items() if len(days) >= 2 and key not in seen
    ]
    result = "\n".join(kept).rstrip()
    if not result:
        result = "# MEMORY.md"
    if recurring:
        if RECURRING_HEADING not in result:
            result += f"\n\n{RECURRING_HEADING}\n"
        else:
            result += "\n"
        result += "\n".join(f"- {text_by_fact[key]}" for key, _ in recurring)
    return result + "\n"


def _consolidation_contract(reply: dict) -> tuple[bool, str, str]:
    if not isinstance(reply.get("should_update"), bool):
        raise LLMError(f"'should_update' must be true or false, got {reply.get('should_update')!r}")
    content = reply.get("memory_content") or ""
    if not isinstance(content, str):
        raise LLMError("'memory_content' must be a string")
    if reply["should_update"] and not content.strip():
        raise LLMError("'should_update' is true but 'memory_content' is empty")
    return reply["should_update"], str(reply.get("reason") or ""), content.strip() + "\n"


def consolidation_run(*, agent: Agent, now: datetime | None = None) -> dict:
    """Fold the last MEMORY_CONSOLIDATE_DAYS days of daily notes into MEMORY.md (seed 001's emergence).

    With an LLM its JSON answer is used; without one, or when its answer is unusable (logged), a
    deterministic merge keeps recurring facts and drops duplicates. The previous MEMORY.md stays in the
    file's history (file_write versions it). Raises Conflict when a job for this agent is running.
    """
    now = now or timezone.now()
    days = settings.MEMORY_CONSOLIDATE_DAYS
    with transaction.atomic():
        if not _agent_lock_try(agent.pk):
            raise Conflict(f"An extraction or consolidation for agent {agent.slug!r} is running; try later.")
        notes = daily_notes_recent(agent, now, days)
        memory = _file_content(agent, "MEMORY.md")
        result = {"agent": agent.slug, "path": "MEMORY.md", "notes_read": [path for path, _ in notes]}
        new_content, reason, used = None, "", "heuristic"
        if llm_configured() and notes:
            try:
                should, reason, content = _consolidation_contract(
                    llm_json(
                        [
                            {"role": "system", "content": prompt_render("consolidation-system")},
                            {
                                "role": "user",
                                "content": prompt_render(
                                    "consolidation-user",
                                    date=f"{timezone.localtime(now):%Y-%m-%d}",
                                    agent=agent.slug,
                                    memory=memory or "(empty)",
                                    days=str(days),
                                    notes="\n\n".join(f"### {p}\n{c}" for p, c in notes),
                                ),
                            },
                        ]
                    )
                )
                used = "llm"
                new_content = content if should else None
            except LLMError as exc:
                logger.warning(
                    "LLM consolidation failed for %s, using the deterministic merge: %s", agent, exc
                )
                result["llm_error"] = str(exc)
        if used == "heuristic":
            if not notes and memory is None:
                reason = "no daily notes and no MEMORY.md"
            else:
                new_content = memory_merge_deterministic(memory or "", notes)
        updated = bool(new_content) and new_content != memory
        if updated:
            updated = _file_replace_if_unchanged(
                agent=agent, path="MEMORY.md", expected=memory, content=new_content
            )
            if not updated:
                reason = "MEMORY.md was edited meanwhile; left as it is, run again"
        if used == "heuristic" and new_content is not None and not reason:
            # Say what happened, not how: the caller sees "updated" beside this.
            if updated:
                reason = f"merged {len(notes)} daily note(s) into MEMORY.md (duplicates dropped)"
            else:
                reason = f"MEMORY.md already holds what the {len(notes)} daily note(s) say; nothing to add"
        state, _ = AgentMaintenance.objects.get_or_create(agent=agent)
        AgentMaintenance.objects.filter(pk=state.pk).update(last_consolidation_at=now)
    return {**result, "used": used, "updated": updated, "reason": reason or "no change needed"}


def consolidation_run_all(*, now: datetime | None = None) -> list[dict]:
    """Consolidate every agent that has daily notes in the window (what the daily schedule runs)."""
    now = now or timezone.now()
    results = []
    for agent in Agent.objects.filter(files__path__startswith="memory/").distinct().order_by("pk"):
        if not daily_notes_recent(agent, now, settings.MEMORY_CONSOLIDATE_DAYS):
            continue
        try:
            results.append(consolidation_run(agent=agent, now=now))
        except Conflict as exc:
            results.append({"agent": agent.slug, "updated": False, "reason": exc.detail})
    return results


# --- Retention, purge and size (seed 004) ----------------------------------------------------------

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


def _content_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _entry_erase(entry: VaultEntry, *, reason: str, criteria: dict, deleted_by: str, now: datetime) -> None:
    """Delete an entry for good, with its versions (so the content is really gone) and an audit row."""
    versions = EntryVersion.objects.filter(entry_id=entry.pk)
    DeletionAudit.objects.create(
        project_id=entry.project_id,
        agent_slug=entry.agent.slug,
        kind="entry",
        object_id=entry.pk,
        category=entry.category,
        reason=reason,
        criteria=criteria,
        content_sha256=_content_sha(entry.content),
        content_chars=len(entry.content),
        versions_deleted=versions.count(),
        item_created_at=entry.created_at,
        deleted_by=deleted_by[:200],
        deleted_at=now,
    )
    versions.delete()
    RetentionMark.objects.filter(kind=RetentionMark.Kind.ENTRY, object_id=entry.pk).delete()
    entry.delete()


def _message_erase(message: Message, *, reason: str, criteria: dict, deleted_by: str, now: datetime) -> None:
    DeletionAudit.objects.create(
        project_id=message.project_id,
        agent_slug=message.agent.slug,
        kind="message",
        object_id=message.pk,
        category=message.role,
        reason=reason,
        criteria=criteria,
        content_sha256=_content_sha(message.text),
        content_chars=len(message.text),
        item_created_at=message.created_at,
        deleted_by=deleted_by[:200],
        deleted_at=now,
    )
    RetentionMark.objects.filter(kind=RetentionMark.Kind.MESSAGE, object_id=message.pk).delete()
    message.delete()


def retention_step_expire(run: CompactionRun, project: Project, now: datetime) -> None:
    """Archive what is older than its category's retention (counted from its last update or use)."""
    if not settings.MEMORY_RETENTION_ENABLED:
        run.notes.append("retention is disabled (MEMORY_RETENTION_ENABLED)")
        return
    marked = RetentionMark.objects.filter(kind=RetentionMark.Kind.ENTRY).values("object_id")
    for category, days in settings.MEMORY_RETENTION_DAYS.items():
        if not days or category == "messages":
            continue
        cutoff = now - timedelta(days=days)
        expired = (
            VaultEntry.objects.filter(project=project, category=category)
            .exclude(pk__in=marked)
            .annotate(last_used=Greatest("updated_at", "last_accessed_at", "created_at"))
            .filter(last_used__lt=cutoff)
            .order_by("pk")
            .values_list("pk", "status")
        )
        for entry_id, status in list(expired):
            if status == EntryStatus.ACTIVE:
                services.entry_update(
                    entry_id=entry_id,
                    changes=services.EntryChanges(status=EntryStatus.ARCHIVED),
                    changed_by=f"{ACTOR}: retention",
                )
            RetentionMark.objects.create(
                project=project, kind=RetentionMark.Kind.ENTRY, object_id=entry_id, marked_at=now
            )
            _count(run, "entries_expired")
            _change(
                run,
                "retention",
                "expire-entry",
                f"entry {entry_id}",
                f"{category} older than {days} days: archived, purged after "
                f"{settings.MEMORY_PURGE_GRACE_DAYS} days unless restored",
            )
    days = settings.MEMORY_RETENTION_DAYS.get("messages") or 0
    if days:
        cutoff = now - timedelta(days=days)
        expired = (
            Message.objects.filter(project=project, created_at__lt=cutoff)
            .exclude(pk__in=RetentionMark.objects.filter(kind=RetentionMark.Kind.MESSAGE).values("object_id"))
            .order_by("pk")
        )
        ids = list(expired.values_list("pk", flat=True))
        if ids:
            Message.objects.filter(pk__in=ids).update(archived=True)
            RetentionMark.objects.bulk_create(
                [
                    RetentionMark(
                        project=project, kind=RetentionMark.Kind.MESSAGE, object_id=pk, marked_at=now
                    )
                    for pk in ids
                ]
            )
            _count(run, "messages_expired", len(ids))
            _change(
                run,
                "retention",
                "expire-messages",
                f"{len(ids)} message(s)",
                f"messages older than {days} days: archived, purged after "
                f"{settings.MEMORY_PURGE_GRACE_DAYS} days",
                message_ids=ids,
            )


def retention_step_purge(run: CompactionRun, project: Project, now: datetime) -> None:
    """Delete what retention archived more than MEMORY_PURGE_GRACE_DAYS ago, each with an audit row.

    An item restored in the meantime (made active again) is no longer expired: its mark is dropped.
    """
    if not settings.MEMORY_RETENTION_ENABLED:
        return
    cutoff = now - timedelta(days=settings.MEMORY_PURGE_GRACE_DAYS)
    due = RetentionMark.objects.filter(project=project, marked_at__lte=cutoff).order_by("pk")
    for mark in list(due):
        if mark.kind == RetentionMark.Kind.ENTRY:
            entry = (
                VaultEntry.objects.select_for_update(of=("self",))
                .select_related("agent")
                .filter(pk=mark.object_id)
            )
            entry = entry.first()
            if entry is None or entry.status != EntryStatus.ARCHIVED:
                mark.delete()
                continue
            _entry_erase(entry, reason=DeletionAudit.Reason.PURGE, criteria={"retention": entry.category},
                         deleted_by=f"{ACTOR}: retention purge", now=now)  # fmt: skip
            _count(run, "entries_purged")
            _change(run, "purge", "delete-entry", f"entry {mark.object_id}",
                    f"archived by retention on {mark.marked_at:%Y-%m-%d}, grace period over")  # fmt: skip
        else:
            message = (
                Message.objects.select_for_update(of=("self",))
                .select_related("agent")
                .filter(pk=mark.object_id)
            )
            message = message.first()
            if message is None or not message.archived:
                mark.delete()
                continue
            _message_erase(message, reason=DeletionAudit.Reason.PURGE, criteria={"retention": "messages"},
                           deleted_by=f"{ACTOR}: retention purge", now=now)  # fmt: skip
            _count(run, "messages_purged")
            _change(run, "purge", "delete-message", f"message {mark.object_id}",
                    f"archived by retention on {mark.marked_at:%Y-%m-%d}, grace period over")  # fmt: skip


def agent_stored_bytes(agent: Agent) -> int:
    """Active stored text of an agent: active entries and non-archived messages (UTF-8 characters)."""
    entries = VaultEntry.objects.filter(agent=agent, status=EntryStatus.ACTIVE).aggregate(
        n=Sum(Length("content"))
    )["n"]
    messages = Message.objects.filter(agent=agent, archived=False).aggregate(n=Sum(Length("text")))["n"]
    return (entries or 0) + (messages or 0)


def _relevance(*, category: str, created_at: datetime, importance: float, access_count: int, now) -> float:
    """Seed 004's decay: recency halves every half-life of the category, boosted by use and importance."""
    half_life = settings.MEMORY_HALF_LIFE_HOURS.get(category, 720)
    age_hours = max(0.0, (now - created_at).total_seconds() / 3600)
    return 0.5 ** (age_hours / half_life) * (1 + 0.1 * access_count) * (1 + 0.2 * importance)


def _agent_shrink(run: CompactionRun, agent: Agent, now: datetime) -> None:
    before = agent_stored_bytes(agent)
    if before <= settings.MEMORY_AGENT_MAX_BYTES:
        return
    items = [
        (_relevance(category=e.category, created_at=e.updated_at, importance=e.importance,
                    access_count=e.access_count, now=now), "entry", e.pk)
        for e in VaultEntry.objects.select_for_update().filter(agent=agent, status=EntryStatus.ACTIVE)
    ] + [
        (_relevance(category="messages", created_at=m.created_at, importance=0.5, access_count=0, now=now),
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
    _count(run, "agents_over_size")
    _count(run, "entries_archived_for_size", len(entry_ids))
    _count(run, "messages_archived_for_size", len(message_ids))
    _change(
        run,
        "size",
        "archive-least-relevant",
        agent.slug,
        f"{before} characters of active memory is over MEMORY_AGENT_MAX_BYTES="
        f"{settings.MEMORY_AGENT_MAX_BYTES}: kept the {keep} most relevant of {len(items)} items, "
        f"archived the rest ({after} characters active now)",
        archived_entry_ids=entry_ids,
        archived_message_ids=message_ids,
        bytes_before=before,
        bytes_after=after,
    )


def retention_step_size(run: CompactionRun, project: Project, now: datetime) -> None:
    """Enforce the per-agent size limit by archiving the least relevant items (seed 004 keeps 80%)."""
    for agent in Agent.objects.filter(project=project).order_by("pk"):
        _guarded(run, f"agent {agent.slug} size", lambda a=agent: _agent_shrink(run, a, now))


RETENTION_STEPS = (retention_step_expire, retention_step_purge, retention_step_size)


def retention_run(
    *, project: Project, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.API
) -> CompactionRun:
    """Retention, purge and size limit for one project, recorded like a compaction run."""
    return _run_steps(
        kind=RunKind.RETENTION,
        project=project,
        trigger=trigger,
        dry_run=dry_run,
        now=now,
        steps=RETENTION_STEPS,
        counters=RETENTION_COUNTERS,
    )


def retention_run_all(
    *, dry_run: bool, now: datetime | None = None, trigger: str = RunTrigger.SCHEDULE
) -> list[CompactionRun]:
    return [
        retention_run(project=project, dry_run=dry_run, now=now, trigger=trigger)
        for project in Project.objects.order_by("pk")
    ]


# --- Forgetting (seed 004's selective deletion) -----------------------------------------------------


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
) -> dict:
    """Delete entries and/or messages by id or by criteria, for good, with one audit row each.

    `agent_ids` limits what may be touched (an agent token's own agent); None means the whole project.
    Ids that do not exist or may not be seen are reported in `not_found` and touch nothing.
    """
    now = now or timezone.now()
    kinds = kinds or ["entries"]
    by_id = bool(ids) or bool(message_ids)
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
    if since and until and since > until:
        raise InvalidInput("'since' must not be after 'until'.", [{"loc": ["since"], "msg": "after until"}])
    if "messages" in kinds and (category or tags or source):
        raise InvalidInput("category, tags and source apply to entries only; remove 'messages' from kinds.")
    entries = VaultEntry.objects.filter(project=project)
    messages = Message.objects.filter(project=project)
    if agent_ids is not None:
        entries, messages = entries.filter(agent_id__in=agent_ids), messages.filter(agent_id__in=agent_ids)
    not_found: list[int] = []
    if by_id:
        wanted, wanted_messages = set(ids or []), set(message_ids or [])
        entries = entries.filter(pk__in=wanted)
        messages = messages.filter(pk__in=wanted_messages)
        audit_criteria = {"ids": sorted(wanted), "message_ids": sorted(wanted_messages)}
    else:
        if agent:
            entries, messages = entries.filter(agent=agent), messages.filter(agent=agent)
        if category:
            entries = entries.filter(category=category)
        if tags:
            entries = entries.filter(tags__contains=[tag.lstrip("#").lower() for tag in tags])
        if source:
            entries = entries.filter(source=source)
        if since:
            entries, messages = entries.filter(created_at__gte=since), messages.filter(created_at__gte=since)
        if until:
            entries, messages = entries.filter(created_at__lte=until), messages.filter(created_at__lte=until)
        if "entries" not in kinds:
            entries = entries.none()
        if "messages" not in kinds:
            messages = messages.none()
        audit_criteria = {**criteria, "kinds": kinds}
    deleted_entry_ids, deleted_message_ids = [], []
    with transaction.atomic():
        for entry in entries.select_for_update(of=("self",)).select_related("agent").order_by("pk"):
            deleted_entry_ids.append(entry.pk)
            _entry_erase(entry, reason=DeletionAudit.Reason.FORGET, criteria=audit_criteria,
                         deleted_by=deleted_by, now=now)  # fmt: skip
        for message in messages.select_for_update(of=("self",)).select_related("agent").order_by("pk"):
            deleted_message_ids.append(message.pk)
            _message_erase(message, reason=DeletionAudit.Reason.FORGET, criteria=audit_criteria,
                           deleted_by=deleted_by, now=now)  # fmt: skip
    if by_id:
        missing = (set(ids or []) - set(deleted_entry_ids)) | (
            set(message_ids or []) - set(deleted_message_ids)
        )
        not_found = sorted(missing)
    deleted_entries, deleted_messages = len(deleted_entry_ids), len(deleted_message_ids)
    return {
        "count": deleted_entries + deleted_messages,
        "entries": deleted_entries,
        "messages": deleted_messages,
        "not_found": not_found,
    }
