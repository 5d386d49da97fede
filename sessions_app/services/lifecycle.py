"""The session lifecycle: reopening, archive to cold storage and restore, deletion, and the scheduled
run that moves quiet sessions along (active, idle, archived, deleted)."""

import hashlib
import json
import logging
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryproject.errors import Conflict
from sessions_app import recovery, selectors
from sessions_app.maintenance.extraction import extraction_enqueue
from sessions_app.maintenance.retention import session_exchanges_erase
from sessions_app.models import (
    Branch,
    Message,
    Session,
    SessionArchive,
    SessionStateEntry,
    SessionStatus,
)
from sessions_app.services.common import (
    _LOCK_SESSION_CREATE,
    DELETED,
    LIFECYCLE_ACTOR,
    _advisory_lock,
    _session_create,
    _status_set,
    reply_context,
    session_label_check,
    transition_record,
)
from vault.models import Agent, DeletionAudit
from vault.services.audit import deletion_audit_record

logger = logging.getLogger(__name__)


def _session_find(agent: Agent, external_id: str) -> Session | None:
    """The session a write names, as a read would find it (selectors.session_find): by chat id, then by
    numeric id; the current one without a key. A write to "42" went to a new chat "42" while reads of
    "42" found session 42."""
    return selectors.session_find(agent, external_id or None)


def session_ensure(*, agent: Agent, external_id: str = "", model_id: str = "") -> Session:
    """The session to write to: the one with this chat id (created, or reopened if closed), else the
    agent's current open session, else a new one. Safe when first writes race.

    "current" is no chat id: it names the current session, as it does for reads (session_find), so a
    write to "current" never reopens a closed session nor creates one called "current"."""
    external_id = "" if selectors.session_key_is_current(external_id) else external_id.strip()
    session_label_check("session", external_id, controls=False)
    session_label_check("model_id", model_id)
    # Most writes go to an open session that needs no change: found without the lock and a transaction
    # of their own (the append locks the session row next). Creating, reopening, restoring or changing
    # one takes the lock, so first writes that race create one session.
    session = _session_find(agent, external_id)
    open_as_asked = session is not None and session.status in (SessionStatus.ACTIVE, SessionStatus.IDLE)
    if open_as_asked and (not model_id or session.model_id == model_id):
        return session
    with transaction.atomic():
        _advisory_lock(_LOCK_SESSION_CREATE, agent.pk)
        session = _session_find(agent, external_id)
        if session is not None:
            # Its row too, read again once locked: a session being archived (or deleted) was reopened
            # after the archive, active with its messages in cold storage, which restore then refused.
            session = Session.objects.select_for_update(of=("self",)).filter(pk=session.pk).first()
        if session is None:
            return _session_create(agent, external_id=external_id, model_id=model_id or "")
        if session.status == SessionStatus.ARCHIVED:
            session = session_restore(session=session, reason="restored by a new message")
        changed = []
        if session.status not in (SessionStatus.ACTIVE, SessionStatus.IDLE):
            transition_record(session=session, to_status=SessionStatus.ACTIVE, reason="reopened")
            session.status, session.closed_at = SessionStatus.ACTIVE, None
            session.status_changed_at = timezone.now()
            changed += ["status", "closed_at", "status_changed_at"]
        if model_id and session.model_id != model_id:
            session.model_id = model_id
            changed.append("model_id")
        if changed:
            session.save(update_fields=changed)
        return session


_MESSAGE_FIELDS = (
    "id", "parent_id", "client_id", "role", "text", "internal", "tool_calls", "tool_call_id", "state",
    "archived", "created_at", "reply_to_text",
)  # fmt: skip


def _quiet_before(cutoff: datetime) -> Q:
    """Sessions quiet since before `cutoff`: no activity, and not restored from the archive, since. A
    restore is no activity, but a session restored on purpose is not archived (or deleted) again before
    it has been quiet as long again since."""
    return Q(last_activity_at__lt=cutoff) & (Q(restored_at__isnull=True) | Q(restored_at__lt=cutoff))


def _quiet_since(session: Session, cutoff: datetime) -> bool:
    """_quiet_before for one session in hand."""
    return session.last_activity_at < cutoff and (session.restored_at is None or session.restored_at < cutoff)


def session_archive(
    *, session: Session, reason: str = "", by: str = "", quiet_before: datetime | None = None
) -> SessionArchive | None:
    """Move a session's messages to cold storage: one SessionArchive row holding every message row as
    zlib-compressed JSON (ids, parents, client ids, timestamps, tool calls, state, the turn each
    answers), the branch heads and the write-ahead-scan links, plus the plain text for search. The
    Message rows leave the hot table.

    With `quiet_before` (the lifecycle, which chose the session as quiet since then) a session that is
    archived already or had activity since is left as it is and None returned: looked at again under
    its lock, because a message may have come in since it was chosen."""

    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        if quiet_before is not None and (
            session.status == SessionStatus.ARCHIVED or not _quiet_since(session, quiet_before)
        ):
            return None
        if session.status == SessionStatus.ARCHIVED:
            raise Conflict("The session is already archived.")
        messages = list(
            Message.objects.filter(session=session).order_by("created_at", "id").values(*_MESSAGE_FIELDS)
        )
        dates = [row["created_at"] for row in messages]
        for row in messages:
            row["created_at"] = row["created_at"].isoformat()
        branches = {
            str(b["id"]): [b["head_id"], b["from_message_id"]]
            for b in Branch.objects.filter(session=session).values("id", "head_id", "from_message_id")
        }
        links = {
            str(e["id"]): e["message_id"]
            for e in SessionStateEntry.objects.filter(session=session, message__isnull=False).values(
                "id", "message_id"
            )
        }
        raw = json.dumps(
            {
                "version": 1,
                "status": session.status,
                "messages": messages,
                "branches": branches,
                "state": links,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode("utf-8")
        payload = zlib.compress(raw, 9)
        archive = SessionArchive.objects.create(
            project_id=session.project_id,
            agent_id=session.agent_id,
            session=session,
            payload=payload,
            message_count=len(messages),
            raw_bytes=len(raw),
            compressed_bytes=len(payload),
            text="\n".join(m["text"] for m in messages if m["text"] and not m["internal"]),
            message_ids=[m["id"] for m in messages],
            first_message_at=min(dates, default=None),
            last_message_at=max(dates, default=None),
            archived_at=timezone.now(),
        )
        Message.objects.filter(session=session).update(parent=None)
        Message.objects.filter(session=session).delete()
        _status_set(session, SessionStatus.ARCHIVED, reason=reason or "archived", by=by)
    return archive


def session_restore(*, session: Session, by: str = "", reason: str = "restored on demand") -> Session:
    """Bring an archived session back: every message row exactly as it was, branch heads and scan links
    re-attached, the archive row removed. The session comes back idle (closed if it was closed) with its
    last activity as it was (a restore is no activity: the session list, and which open session is the
    agent's current one, go by what was said) and `restored_at` now, from which the lifecycle counts
    again before archiving it, so it is not archived again at once."""

    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        archive = SessionArchive.objects.filter(session=session).first()
        if session.status != SessionStatus.ARCHIVED or archive is None:
            raise Conflict("The session is not archived.")
        data = json.loads(zlib.decompress(bytes(archive.payload)).decode("utf-8"))
        # The turn each message answers, which its search vector holds, is in the archive; archives made
        # before it was kept derive it from the message's parent there, as an append does (a kept message
        # after a compaction summary answered the turn before the summary, which this cannot know).
        texts = {row["id"]: row["text"] for row in data["messages"]}
        Message.objects.bulk_create(
            [
                Message(
                    pk=row["id"],
                    project_id=session.project_id,
                    agent_id=session.agent_id,
                    session=session,
                    parent_id=row["parent_id"],
                    client_id=row["client_id"],
                    role=row["role"],
                    text=row["text"],
                    internal=row["internal"],
                    tool_calls=row["tool_calls"],
                    tool_call_id=row["tool_call_id"],
                    state=row["state"],
                    archived=row["archived"],
                    created_at=datetime.fromisoformat(row["created_at"]),
                    reply_to_text=row["reply_to_text"]
                    if "reply_to_text" in row
                    else reply_context(texts.get(row["parent_id"], "")),
                )
                for row in data["messages"]
            ]
        )
        recovery.context_bound_clear([session.pk])
        for branch_id, (head_id, from_id) in data["branches"].items():
            Branch.objects.filter(pk=int(branch_id), session=session).update(
                head_id=head_id, from_message_id=from_id
            )
        for entry_id, message_id in data["state"].items():
            SessionStateEntry.objects.filter(pk=int(entry_id), session=session).update(message_id=message_id)
        archive.delete()
        session.restored_at = timezone.now()
        session.save(update_fields=["restored_at"])
        back = SessionStatus.CLOSED if data.get("status") == SessionStatus.CLOSED else SessionStatus.IDLE
        _status_set(session, back, reason=reason, by=by)
    return session


@dataclass
class ArchiveFilter:
    """Which archived messages a forget names: by id, or by agent and the half-open time range."""

    project_id: int
    agent_ids: list[int] | None = None
    message_ids: set[int] | None = None
    agent_id: int | None = None
    since: datetime | None = None
    until: datetime | None = None

    def matches(self, row: dict) -> bool:
        if self.message_ids is not None:
            return row["id"] in self.message_ids
        return self.within(datetime.fromisoformat(row["created_at"]))

    def within(self, instant: datetime) -> bool:
        return (self.since is None or instant >= self.since) and (self.until is None or instant < self.until)


def _archive_rows(archive: SessionArchive) -> list[dict]:
    return json.loads(zlib.decompress(bytes(archive.payload)).decode("utf-8"))["messages"]


def archived_sessions_thaw(wanted: ArchiveFilter, *, by: str) -> list[tuple[Session, datetime | None]]:
    """Restore the archived sessions holding messages a forget names (their messages are in cold
    storage, out of reach of a forget, which then left them, their daily-note exchanges and their
    search text in place): by id, those whose `message_ids` list one, by criteria, those holding a
    message in the range. Returns each with the `restored_at` it had, for archived_sessions_refreeze.
    Call in the forget's transaction.

    No archive is decompressed only to be looked at, but one whose first and last messages lie on
    either side of the range: an archive whose messages all fall outside it is not read (its first
    and last messages' dates say so), and one whose first or last message falls in it holds a match."""
    # The payload is read by the restore (and by _archive_holds_match when it must look), not here.
    archives = SessionArchive.objects.filter(project_id=wanted.project_id).defer("text", "payload")
    if wanted.agent_ids is not None:
        archives = archives.filter(agent_id__in=wanted.agent_ids)
    if wanted.agent_id is not None:
        archives = archives.filter(agent_id=wanted.agent_id)
    if wanted.message_ids is not None:  # the archives listing them: none decompressed to look
        archives = archives.filter(message_ids__overlap=sorted(wanted.message_ids))
    else:  # an archive without messages has no dates, and nothing to forget
        if wanted.since is not None:
            archives = archives.filter(last_message_at__gte=wanted.since)
        if wanted.until is not None:
            archives = archives.filter(first_message_at__lt=wanted.until)
        archives = archives.filter(last_message_at__isnull=False)
    thawed = []
    for archive in archives.select_related("session").order_by("session_id"):
        if wanted.message_ids is not None or _archive_holds_match(archive, wanted):
            restored_at = archive.session.restored_at
            thawed.append((session_restore(session=archive.session, by=by, reason="forget"), restored_at))
    return thawed


def _archive_holds_match(archive: SessionArchive, wanted: ArchiveFilter) -> bool:
    """Whether an archive whose messages' dates overlap the range holds a message in it: its first or
    last message does, or else one of those between (read from the payload)."""
    if wanted.within(archive.first_message_at) or wanted.within(archive.last_message_at):
        return True
    return any(wanted.matches(row) for row in _archive_rows(archive))


def archived_sessions_refreeze(thawed: list[tuple[Session, datetime | None]], *, by: str) -> None:
    """Archive again the sessions archived_sessions_thaw restored, with the `restored_at` they had: a
    forget is no restore, and does not put off the session's deletion."""
    for session, restored_at in thawed:
        session_archive(session=session, by=by, reason="forget")
        Session.objects.filter(pk=session.pk).update(restored_at=restored_at)


def session_delete(
    *, session: Session, reason: str, by: str = "", quiet_before: datetime | None = None
) -> bool:
    """Delete a session for good (retention), audited with vault's DeletionAudit (hash and size of its
    messages, never their content) and a final SessionTransition that outlives it. Its exchanges go
    from the agent's daily notes with it (`[forgotten]`, as a forget leaves them).

    With `quiet_before` (the lifecycle) only a session still archived and quiet since then is deleted,
    looked at again under its lock: a message that came in since it was chosen restored it, and must not
    be deleted with it. Returns whether the session was deleted."""

    with transaction.atomic():
        locked = Session.objects.select_for_update(of=("self",)).select_related("agent")
        if quiet_before is None:
            session = locked.get(pk=session.pk)
        else:
            session = locked.filter(
                _quiet_before(quiet_before), pk=session.pk, status=SessionStatus.ARCHIVED
            ).first()
            if session is None:  # restored by a message, or deleted by another run
                return False
        archive = SessionArchive.objects.filter(session=session).first()
        if archive is not None:
            text, count = archive.text, archive.message_count
            digest = hashlib.sha256(bytes(archive.payload)).hexdigest()
            rows = _archive_rows(archive)
        else:
            rows = list(
                Message.objects.filter(session=session)
                .order_by("id")
                .values("role", "internal", "text", "created_at")
            )
            text, count = "\n".join(row["text"] for row in rows), len(rows)
            digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
        session_exchanges_erase(agent=session.agent, project_id=session.project_id, rows=rows)
        now = timezone.now()
        deletion_audit_record(
            project_id=session.project_id,
            agent_slug=session.agent.slug,
            kind="session",
            object_id=session.pk,
            category=session.status,
            reason=DeletionAudit.Reason.PURGE,
            criteria={"reason": reason, "messages": count, "external_id": session.external_id},
            content=text,
            content_sha256=digest,
            item_created_at=session.created_at,
            deleted_by=by or LIFECYCLE_ACTOR,
            now=now,
        )
        transition_record(session=session, to_status=DELETED, reason=reason, by=by)
        Message.objects.filter(session=session).update(parent=None)
        session.delete()
    return True


def lifecycle_run(*, now: datetime | None = None, deleted_from: set[tuple[int, int]] | None = None) -> dict:
    """One pass of the session lifecycle (the scheduled task): active sessions without activity for
    MEMORY_SESSION_IDLE_MINUTES become idle (and their extraction is queued, trigger "quiet"); sessions
    inactive for MEMORY_SESSION_ARCHIVE_DAYS are archived; archived sessions inactive for
    MEMORY_SESSION_RETENTION_DAYS (0 = never) are deleted; "inactive" counts from a restore too
    (_quiet_before). One session failing does not stop the rest. `deleted_from`, when given, gets the
    (project id, agent id) of each session deleted: the agents whose daily notes lost exchanges."""

    now = now or timezone.now()
    counts = {"idle": 0, "archived": 0, "deleted": 0, "errors": 0}
    idle_cutoff = now - timedelta(minutes=settings.MEMORY_SESSION_IDLE_MINUTES)
    for session_id in list(
        Session.objects.filter(status=SessionStatus.ACTIVE, last_activity_at__lt=idle_cutoff).values_list(
            "pk", flat=True
        )
    ):
        try:
            with transaction.atomic():
                session = (
                    Session.objects.select_for_update(of=("self",)).select_related("agent").get(pk=session_id)
                )
                if session.status != SessionStatus.ACTIVE or session.last_activity_at >= idle_cutoff:
                    continue
                _status_set(
                    session,
                    SessionStatus.IDLE,
                    reason=f"no activity for {settings.MEMORY_SESSION_IDLE_MINUTES} minutes",
                )
                extraction_enqueue(agent=session.agent, session_id=session.pk, trigger_source="quiet")
                counts["idle"] += 1
        except Exception:
            logger.exception("lifecycle: marking session %s idle failed", session_id)
            counts["errors"] += 1
    archive_cutoff = now - timedelta(days=settings.MEMORY_SESSION_ARCHIVE_DAYS)
    for session in list(
        Session.objects.exclude(status=SessionStatus.ARCHIVED).filter(_quiet_before(archive_cutoff))
    ):
        try:
            if session_archive(
                session=session,
                reason=f"no activity for {settings.MEMORY_SESSION_ARCHIVE_DAYS} days",
                quiet_before=archive_cutoff,
            ):
                counts["archived"] += 1
        except Exception:
            logger.exception("lifecycle: archiving session %s failed", session.pk)
            counts["errors"] += 1
    days = settings.MEMORY_SESSION_RETENTION_DAYS
    if days:
        delete_cutoff = now - timedelta(days=days)
        for session in list(
            Session.objects.filter(_quiet_before(delete_cutoff), status=SessionStatus.ARCHIVED)
        ):
            try:
                if session_delete(
                    session=session,
                    reason=f"retention: no activity for {days} days",
                    quiet_before=delete_cutoff,
                ):
                    counts["deleted"] += 1
                    if deleted_from is not None:
                        deleted_from.add((session.project_id, session.agent_id))
            except Exception:
                logger.exception("lifecycle: deleting session %s failed", session.pk)
                counts["errors"] += 1
    return counts
