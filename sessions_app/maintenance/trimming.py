"""Compaction of sessions: expired or corrupt checkpoints removed, sessions over
MEMORY_CONVERSATION_KEEP active messages trimmed after their decisions and lessons are stored."""

import hashlib
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Q

from sessions_app.models import Checkpoint, Message, Role, Session
from vault import services as vault_services
from vault.maintenance.runs import ACTOR, run_change, run_count, run_guarded
from vault.models import CompactionRun, EntrySource, Project, SessionMark
from vault.text import text_clip


def checkpoint_corruption(messages) -> str | None:
    """Why a checkpoint's stored messages cannot be recovered (such files were deleted), or None.
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
    """Step A: remove checkpoints older than MEMORY_CHECKPOINT_DAYS, and corrupt ones.

    A checkpoint expires when `now` reaches saved_at + MEMORY_CHECKPOINT_DAYS (the moment recovery stops
    returning it). One change per removed checkpoint, counted in counts["checkpoints_removed"]."""
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
        run_count(run, "checkpoints_removed")
        run_change(
            run,
            "A",
            "remove-checkpoint",
            checkpoint.agent.slug,
            reason,
            saved_at=checkpoint.saved_at.isoformat(),
            chat_id=checkpoint.chat_id,
        )


def session_digest(messages: list[Message]) -> str:
    digest = hashlib.sha256()
    for message in messages:
        digest.update(f"{message.pk}\x1f{message.role}\x1f{message.text}\x1e".encode("utf-8", "replace"))
    return digest.hexdigest()


def _handoff_text(messages: list[Message], header: str) -> str:
    limit = settings.MEMORY_HANDOFF_MESSAGE_CHARS
    lines = [f"[{'User' if m.role == Role.USER else 'Agent'}]: {text_clip(m.text, limit)}" for m in messages]
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
    digest = session_digest(old)
    mark = SessionMark.objects.filter(session=session, purpose=SessionMark.Purpose.COMPACTION).first()
    created_ids, handoff_id = [], None
    if mark is not None and mark.content_hash == digest:
        run_change(run, "B", "skip-mining", label, "the old part is unchanged since it was last mined")
    else:
        spoken = [m for m in old if m.role == Role.ASSISTANT and not m.internal and m.text.strip()]
        created, duplicates = vault_services.insights_store(
            agent=agent,
            texts=[m.text for m in spoken],
            tags=["compacted", "auto-extract"],
            source=EntrySource.COMPACTION,
            created_by=ACTOR,
        )
        created_ids = [entry.pk for entry in created]
        run_count(run, "insights_extracted", len(created))
        if spoken:
            handoff = vault_services.handoff_store(
                agent=agent,
                content=_handoff_text(
                    spoken[-3:], f"Compacted handoff: {len(old)} older messages of {label} were archived."
                ),
                tags=["compacted", "auto-handoff"],
                source=EntrySource.COMPACTION,
                created_by=ACTOR,
            )
            handoff_id = handoff.pk
            run_count(run, "handoffs_created")
        SessionMark.objects.update_or_create(
            session=session,
            purpose=SessionMark.Purpose.COMPACTION,
            defaults={"content_hash": digest, "updated_at": now},
        )
        run_count(run, "sessions_mined")
        if duplicates:
            run.notes.append(f"{label}: {duplicates} insight(s) already stored, not stored twice")
    archived = Message.objects.filter(pk__in=[m.pk for m in old], archived=False).update(archived=True)
    run_count(run, "sessions_trimmed")
    run_count(run, "messages_archived", archived)
    run_change(
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
    """Step B: sessions over MEMORY_CONVERSATION_KEEP active messages are trimmed."""
    keep = settings.MEMORY_CONVERSATION_KEEP
    long_sessions = (
        Session.objects.filter(project=project)
        .annotate(active=Count("messages", filter=Q(messages__archived=False)))
        .filter(active__gt=keep)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for session_id in list(long_sessions):
        run_guarded(run, f"session {session_id}", lambda sid=session_id: _session_trim(run, sid, now))
