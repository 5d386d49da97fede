"""Retention of messages: messages older than MEMORY_RETENTION_DAYS["messages"], in sessions quiet as
long, are archived, and purged for good (with an audit row) after the grace period."""

from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Min, Q, QuerySet, Subquery
from django.utils import timezone

from sessions_app import recovery
from sessions_app.compaction import (
    FORGOTTEN,
    SUMMARY_PREFIX,
    SUMMARY_STATE_KEY,
    heuristic_summary,
    summary_cut,
    summary_text_erase,
)
from sessions_app.models import (
    Branch,
    Checkpoint,
    Message,
    Role,
    Session,
    SessionArchive,
    SessionStateEntry,
    WorkingBufferEntry,
)
from sessions_app.scan import DURABLE_CATEGORIES, scan_message
from vault import services as vault_services
from vault.extraction import insights_extract
from vault.maintenance.retention import entries_from_message_erase, retention_marks_due
from vault.maintenance.runs import ACTOR, run_change, run_count, run_guarded
from vault.models import Agent, CompactionRun, DeletionAudit, Project, RetentionMark, SessionMark
from vault.redaction import project_redaction_enabled, redact
from vault.services.audit import deletion_audit_record
from vault.text import ASCII_CUT, text_clip


def message_sessions_lock(messages: QuerySet[Message]) -> None:
    """Lock the sessions of the messages about to be erased, in id order, before the messages
    themselves, as an append locks its session before it stores a reply to the branch's head. An
    append that read the head being erased stored its reply to a deleted row (a foreign-key
    violation at commit), or, holding its session, deadlocked with the erase."""
    list(
        Session.objects.select_for_update()
        .filter(pk__in=messages.values("session_id"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


class ErasedWith(NamedTuple):
    """What a message's erase did to what was derived from it: the entries erased (written from it
    alone, each with an audit row), those rewritten without its text (a handoff's quote of it), and the
    compaction summaries rewritten without it (its lines erased, or rebuilt)."""

    derived_entry_ids: list[int]
    rewritten_entry_ids: list[int]
    summary_ids: list[int]


def message_erase(
    message: Message, *, reason: str, criteria: dict, deleted_by: str, now: datetime
) -> ErasedWith:
    """Erase a message, its copies and (a forget, not the purge) what was derived from it, each
    deletion audited."""
    deletion_audit_record(
        project_id=message.project_id,
        agent_slug=message.agent.slug,
        kind="message",
        object_id=message.pk,
        category=message.role,
        reason=reason,
        criteria=criteria,
        content=message.text,
        item_created_at=message.created_at,
        deleted_by=deleted_by,
        now=now,
    )
    RetentionMark.objects.filter(kind=RetentionMark.Kind.MESSAGE, object_id=message.pk).delete()
    forget = reason == DeletionAudit.Reason.FORGET
    summary_ids = _summaries_erase(message, rebuild=forget)
    _message_copies_erase(message)
    erased_with = ErasedWith([], [], summary_ids)
    if forget:
        erased_with = ErasedWith(
            _derived_entries_erase(message, deleted_by=deleted_by, now=now),
            _derived_texts_erase(message),
            summary_ids,
        )
    _message_unlink(message)
    message.delete()
    return erased_with


def _derived_entries_erase(message: Message, *, deleted_by: str, now: datetime) -> list[int]:
    """A forget reaches what the server wrote from the message alone (vault's
    entries_from_message_erase): the durable fact the write-ahead scan took from it goes from the vault
    and, as a line, from MEMORY.md and its history; a decision or lesson extracted from it goes too
    (with a line of MEMORY.md naming it word for word, if one does).
    The retention purge, which ages the conversation, leaves them: they have retention of their own."""
    erased = entries_from_message_erase(
        agent_id=message.agent_id, message_id=message.pk, deleted_by=deleted_by, now=now
    )
    if erased:  # the line durable_fact_record wrote beside the entry
        lines = [f"- {' '.join(entry.content.split())}" for entry in erased]
        vault_services.file_lines_erase(agent=message.agent, path="MEMORY.md", lines=lines)
    return [entry.pk for entry in erased]


def _derived_texts_erase(message: Message) -> list[int]:
    """A forget takes the message's text out of the text derived from it (vault.services.derived):
    a handoff's line quoting it (the handoff lists it among its sources), the lines the heuristic
    extraction wrote from it into its session's blocks of the daily notes, and, where a model wrote
    it (the extraction's blocks, MEMORY.md, PROFILE.md), its exact text: whole, spaces collapsed or
    redacted, and the durable facts, decisions and lessons the server took from it. A text another
    message still says (a live one, or one in an archive) is not erased from the model's text, nor is a
    heuristic line it also yields. Returns the ids of the entries rewritten."""
    redacting = project_redaction_enabled(message.project_id)
    flat = " ".join(message.text.split())
    quotes = {flat, text_clip(message.text, settings.MEMORY_HANDOFF_MESSAGE_CHARS, mark="")}
    rewritten = vault_services.entries_quotes_erase(
        agent_id=message.agent_id,
        message_id=message.pk,
        quotes=sorted(quotes | ({redact(q) for q in quotes} if redacting else set())),
    )
    lines, texts = _heuristic_lines(message)
    _extraction_facts_drop(message.session_id, {line.removeprefix("- ") for line, _ in lines})
    forms = {message.text.strip(), flat, *texts}
    forms |= {redact(form) for form in forms} if redacting else set()
    session = Session.objects.filter(pk=message.session_id).values_list("external_id", flat=True).first()
    label = session or str(message.session_id)
    # Only the texts the derived text holds are erased, so only theirs are looked for in the messages.
    held = vault_services.derived_texts_held(agent_id=message.agent_id, session_label=label, texts=[*forms])
    kept = {text for text in held if _said_elsewhere(message, text)}
    forms = sorted(held - kept)
    lines = [line for line, text in lines if text in held and text not in kept]
    if not forms and not lines:
        return rewritten
    vault_services.daily_notes_extraction_erase(
        agent=message.agent,
        session_label=label,
        lines=lines,
        texts=forms,
        first_day=timezone.localtime(message.created_at).date(),
    )
    vault_services.memory_files_text_erase(agent=message.agent, lines=lines, texts=forms)
    return rewritten


def _extraction_facts_drop(session_id: int, facts: set[str]) -> None:
    """The facts the session's extractions listed (SessionMark.facts, which keeps their text) without
    those of a forgotten message."""
    mark = SessionMark.objects.filter(session_id=session_id, purpose=SessionMark.Purpose.EXTRACTION)
    for kept in mark.select_for_update().only("pk", "facts"):
        if facts & set(kept.facts):
            SessionMark.objects.filter(pk=kept.pk).update(facts=[f for f in kept.facts if f not in facts])


def _heuristic_lines(message: Message) -> tuple[list[tuple[str, str]], list[str]]:
    """The lines the heuristic extraction writes from a message into the daily note (its decisions and
    lessons, and a user's durable facts), each with the text it quotes, and those texts."""
    found = insights_extract(
        [message.text],
        max_per_kind=settings.MEMORY_INSIGHTS_MAX,
        max_chars=settings.MEMORY_INSIGHT_CHARS,
        min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
    )
    lines = [(f"- Decision: {text}", text) for text in found.decisions]
    lines += [(f"- Lesson: {text}", text) for text in found.lessons]
    if message.role == Role.USER:
        lines += [
            (f"- {match.category.replace('_', ' ')}: {match.text}", match.text)
            for match in scan_message(message.text)
            if match.category in DURABLE_CATEGORIES
        ]
    return lines, [text for _, text in lines]


def _said_elsewhere(message: Message, text: str) -> bool:
    """Whether another message of the agent (not a compaction summary, a copy) still holds `text`, live
    or archived: then the text is not the forgotten message's alone."""
    others = Message.objects.filter(agent_id=message.agent_id, text__contains=text).exclude(pk=message.pk)
    if others.exclude(state__has_key=SUMMARY_STATE_KEY).exists():
        return True
    return SessionArchive.objects.filter(agent_id=message.agent_id, text__contains=text).exists()


def _message_unlink(message: Message) -> None:
    """Take a message out of its session's tree without cutting it: its replies and the branches
    that pointed at it (head or branch point) now point at its parent. Without this the conversation
    ended at the erased message's reply: the messages before it fell out of every read of the session,
    and a branch whose head it was read empty. The parent is read from the row, not the instance,
    because an erase just before (a forget of several messages in a row) may have moved it."""
    parent = Subquery(Message.objects.filter(pk=message.pk).values("parent_id")[:1])
    Message.objects.filter(parent_id=message.pk).update(parent_id=parent)
    Branch.objects.filter(head_id=message.pk).update(head_id=parent)
    Branch.objects.filter(from_message_id=message.pk).update(from_message_id=parent)


def _summaries_erase(message: Message, *, rebuild: bool) -> list[int]:
    """The compaction summaries of the message's session without it: the lines the heuristic summary
    quoted from it say "[forgotten]" (compaction.summary_text_erase). A forget (`rebuild`) goes further
    where words cannot be traced to lines: a summary a model wrote from it (or one stored before
    summaries said who wrote them), and a summary that summarised such a summary again, is rebuilt by
    the heuristic from the messages it still replaces, saying how many were forgotten. Not by the
    model: a forget must not wait on, fail with or send the conversation again to an LLM inside its
    transaction. Returns the ids of the summaries changed."""
    summaries = Message.objects.select_for_update().filter(
        session_id=message.session_id, state__has_key=SUMMARY_STATE_KEY
    )
    changed, rebuilt = [], set()
    for summary in summaries.exclude(pk=message.pk).order_by("pk"):  # a summary after those it replaces
        mark = summary.state[SUMMARY_STATE_KEY] if isinstance(summary.state[SUMMARY_STATE_KEY], dict) else {}
        replaces = [pk for pk in mark.get("replaces") or [] if isinstance(pk, int)]
        derived = {message.pk, *changed} & set(replaces)  # from it, or from a summary that quoted it
        if rebuild and derived and (not mark.get("heuristic") or rebuilt & derived):
            kept = [pk for pk in replaces if pk != message.pk]
            rows = Message.objects.in_bulk(kept)
            body = summary_cut(
                heuristic_summary([rows[pk] for pk in kept if pk in rows]),
                settings.MEMORY_COMPACT_SUMMARY_TOKENS * 4,
            )
            forgotten = int(mark.get("forgotten") or 0) + 1
            note = f"{FORGOTTEN} {forgotten} of the messages it summarised; rebuilt without them."
            summary.state[SUMMARY_STATE_KEY] = {**mark, "replaces": kept, "forgotten": forgotten}
            summary.text = f"{SUMMARY_PREFIX}\n{note}\n{body}"
            summary.save(update_fields=["text", "state"])
            rebuilt.add(summary.pk)
        else:
            erased = summary_text_erase(summary.text, message.text)
            if erased == summary.text:
                continue
            summary.text = erased
            summary.save(update_fields=["text"])
        changed.append(summary.pk)
    if changed:
        recovery.context_bound_clear([message.session_id])  # a summary's erase mark may be the longer
    return changed


def _message_copies_erase(message: Message) -> None:
    """Erase the copies of a message's text kept beside it, which the recovery block, the context
    injection, search and exports read: its working-buffer rows; the session-state facts the
    write-ahead scan took from it (they quote the user's words); its replies' `reply_to_text` (search
    matches a reply by what it answers); its text in its agent's checkpoint (which holds texts, not
    ids: every copy of that text goes, the safe side for a message someone asked to forget); and its
    text in the exchanges the agent's daily notes logged, their history and queue (vault's
    daily_notes_text_erase).
    Long-term entries written from it are a forget's to erase (_derived_entries_erase), not the
    purge's."""
    WorkingBufferEntry.objects.filter(session_id=message.session_id, message_id=message.pk).delete()
    SessionStateEntry.objects.filter(message_id=message.pk).delete()
    Message.objects.filter(parent_id=message.pk).exclude(reply_to_text="").update(reply_to_text="")
    first, last = (
        Message.objects.filter(session_id=message.session_id)
        .aggregate(first=Min("created_at"), last=Max("created_at"))
        .values()
    )
    vault_services.daily_notes_text_erase(
        agent=message.agent,
        texts=_logged_forms(message),
        first_day=timezone.localtime(first).date(),
        last_day=timezone.localtime(last).date(),
    )
    checkpoint = Checkpoint.objects.select_for_update().filter(agent_id=message.agent_id).first()
    if checkpoint is None or not isinstance(checkpoint.messages, list):
        return
    kept = [m for m in checkpoint.messages if not (isinstance(m, dict) and m.get("text") == message.text)]
    if len(kept) != len(checkpoint.messages):
        checkpoint.messages = kept
        checkpoint.save(update_fields=["messages"])


def _logged_forms(message: Message) -> list[str]:
    return logged_forms([message.text], redacting=project_redaction_enabled(message.project_id))


def logged_forms(texts: list[str], *, redacting: bool) -> list[str]:
    """The forms messages' texts take in a daily note's exchange: whole or clipped to
    MEMORY_DAILY_NOTE_CHARS, and redacted when the project redacts."""
    forms = set()
    for text in texts:
        forms |= {text, text_clip(text, settings.MEMORY_DAILY_NOTE_CHARS, flatten=False, mark=ASCII_CUT)}
    if redacting:
        forms |= {redact(form) for form in forms}
    return sorted(forms)


# Texts erased from the daily notes at once when a session goes: each is an alternative of one regex
# and a LIKE of one query, so a long session is taken out in slices.
_ERASE_SLICE = 200


def session_exchanges_erase(*, agent: Agent, project_id: int, rows: list[dict]) -> None:
    """Take a deleted session's exchanges out of the agent's daily notes (every part, their history
    and queue; vault's daily_notes_text_erase), reading only the days of its messages. `rows` are its
    messages as dicts (role, internal, text, created_at as a datetime or ISO text); only the user and
    assistant messages an exchange logs are looked for."""
    logged = [r for r in rows if r["role"] in (Role.USER, Role.ASSISTANT) and not r["internal"] and r["text"]]
    if not logged:
        return
    days = [timezone.localtime(_instant(r["created_at"])).date() for r in logged]
    texts = logged_forms([r["text"] for r in logged], redacting=project_redaction_enabled(project_id))
    for start in range(0, len(texts), _ERASE_SLICE):
        vault_services.daily_notes_text_erase(
            agent=agent, texts=texts[start : start + _ERASE_SLICE], first_day=min(days), last_day=max(days)
        )


def _instant(value: datetime | str) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _messages_mark(project: Project, ids: list[int], now: datetime) -> list[int]:
    """Mark the listed messages for the purge and archive them: those this run marked, in order. Two
    runs at once (the schedule and the command) list the same messages; the second's marks conflicted
    with the first's and failed its step. Now it marks and archives only what is still unmarked."""
    if not ids:
        return []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {RetentionMark._meta.db_table} (project_id, kind, object_id, marked_at)"
            " SELECT %s, %s, id, %s FROM unnest(%s::bigint[]) AS id ORDER BY id"
            " ON CONFLICT DO NOTHING RETURNING object_id",
            [project.pk, RetentionMark.Kind.MESSAGE, now, ids],
        )
        marked = sorted(row[0] for row in cursor.fetchall())
        Message.objects.filter(pk__in=marked).update(archived=True)
    return marked


def _sessions_quiet(cutoff: datetime) -> QuerySet[Session]:
    """Sessions with no activity since `cutoff`, nor a restore from the archive (the lifecycle's
    rule for archiving and deleting a session). A conversation's retention counts from its session's
    last activity: each message aged by its own date took a long-running session's first messages
    while it was still in use."""
    return Session.objects.filter(
        Q(last_activity_at__lt=cutoff) & (Q(restored_at__isnull=True) | Q(restored_at__lt=cutoff))
    ).values("pk")


def retention_step_expire_messages(run: CompactionRun, project: Project, now: datetime) -> None:
    """Archive the messages older than their retention (MEMORY_RETENTION_DAYS["messages"]) in sessions
    quiet that long."""
    if not settings.MEMORY_RETENTION_ENABLED:
        return
    days = settings.MEMORY_RETENTION_DAYS.get("messages") or 0
    if not days:
        return
    cutoff = now - timedelta(days=days)
    expired = (
        Message.objects.filter(project=project, created_at__lt=cutoff, session__in=_sessions_quiet(cutoff))
        .exclude(pk__in=RetentionMark.objects.filter(kind=RetentionMark.Kind.MESSAGE).values("object_id"))
        .order_by("pk")
    )
    ids = _messages_mark(project, list(expired.values_list("pk", flat=True)), now)
    if not ids:
        return
    run_count(run, "messages_expired", len(ids))
    run_change(
        run,
        "retention",
        "expire-messages",
        f"{len(ids)} message(s)",
        f"messages older than {days} days: archived, purged after {settings.MEMORY_PURGE_GRACE_DAYS} days",
        message_ids=ids,
    )


def _message_purge(run: CompactionRun, mark: RetentionMark, now: datetime) -> None:
    message_sessions_lock(Message.objects.filter(pk=mark.object_id))
    message = (
        Message.objects.select_for_update(of=("self",)).select_related("agent").filter(pk=mark.object_id)
    )
    message = message.first()
    if message is None or not message.archived:
        mark.delete()
        return
    if not Session.objects.filter(pk=message.session_id, pk__in=_sessions_quiet(mark.marked_at)).exists():
        mark.delete()  # its session came back since it expired: it ages again from the new activity
        return
    message_erase(message, reason=DeletionAudit.Reason.PURGE, criteria={"retention": "messages"},
                  deleted_by=f"{ACTOR}: retention purge", now=now)  # fmt: skip
    run_count(run, "messages_purged")
    run_change(run, "purge", "delete-message", f"message {mark.object_id}",
               f"archived by retention on {mark.marked_at:%Y-%m-%d}, grace period over")  # fmt: skip


def retention_step_purge_messages(run: CompactionRun, project: Project, now: datetime) -> None:
    """Delete the messages retention archived more than MEMORY_PURGE_GRACE_DAYS ago, each with an audit
    row; one restored meanwhile (no longer archived) keeps its life and loses its mark. Each message is
    purged in a transaction of its own, as entries are (vault.maintenance.retention)."""
    if not settings.MEMORY_RETENTION_ENABLED:
        return
    for mark in list(retention_marks_due(project, now, RetentionMark.Kind.MESSAGE)):
        run_guarded(run, f"message {mark.object_id}", lambda m=mark: _message_purge(run, m, now))
