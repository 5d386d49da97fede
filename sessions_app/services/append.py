"""Appending messages: dedupe by client id, replays of whole conversations, branching, the write-ahead
scan of user messages, durable facts and daily notes."""

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import DEFERRED
from django.utils import timezone

from memoryproject.copy_rows import ids_allocate, rows_copy, rows_create
from memoryproject.errors import Conflict, NotFound, TooLarge
from memoryproject.prepared import prepared_cursor
from memoryproject.resilience import failure_detail, guarded
from memoryproject.row_read import row_first
from sessions_app import recovery, selectors
from sessions_app.models import Branch, Message, Role, Session, SessionStateEntry, SessionStatus
from sessions_app.scan import DURABLE_CATEGORIES, ScanMatch, normalise_fact, scan_message
from sessions_app.services.common import (
    _LOCK_DURABLE_FACTS,
    _LOCK_SESSION_CREATE,
    MEMORY_FILE,
    MEMORY_FILE_HEADER,
    OPEN_STATUSES,
    WAL_TAG,
    MessageInput,
    _advisory_lock,
    _guarded,
    _head_preserve,
    _session_lock,
    _session_lock_if_open,
    _session_with_branch,
    _status_set,
    message_input_check,
    reply_context,
    session_label_check,
)
from sessions_app.services.exchange_log import _daily_notes_append
from sessions_app.services.lifecycle import session_ensure
from sessions_app.services.window import max_input_tokens_check, working_buffer_idle, working_buffer_update
from vault import selectors as vault_selectors
from vault import services as vault_services
from vault.models import Agent, EntrySource, VaultEntry
from vault.redaction import project_redaction_enabled, redact

logger = logging.getLogger(__name__)


# --- append --------------------------------------------------------------------------------------


@dataclass
class AppendResult:
    session: Session
    stored: list[Message]
    duplicates: int
    state: list[SessionStateEntry]
    head_id: int | None
    saved_branch: str | None = None
    warnings: list[dict] = field(default_factory=list)
    recovery: dict | None = None
    buffer_logged: int = 0

    def as_dict(self) -> dict:
        """The result as the API and the MCP tool answer it (AppendOut)."""
        return {
            "session": self.session,
            "stored": len(self.stored),
            "duplicates": self.duplicates,
            "items": self.stored,
            "state": self.state,
            "head": self.head_id,
            "saved_branch": self.saved_branch,
            "warnings": self.warnings,
            "recovery": self.recovery,
            "buffer_logged": self.buffer_logged,
        }


REPLAY_MATCH_MESSAGES = 2


def _begins_with(session: Session, head: list[tuple[str, str]]) -> bool:
    first = Message.objects.filter(session=session).order_by("created_at", "id").values_list("role", "text")
    return list(first[: len(head)]) == head


def _holds_conversation(session: Session, items: Sequence[MessageInput]) -> bool:
    """Whether a closed session's conversation and a keyless full save are one: the conversation on its
    active branch (compaction summaries left out, as a full save's matching leaves them) is the save's
    beginning, or the save is its beginning (an earlier save of it, retried late). Two conversations that
    open alike (one system prompt, then "hi") part further on, and a new one must not take the closed
    one's session."""
    if session.active_branch_id is None:
        return False
    head_id = Branch.objects.filter(pk=session.active_branch_id).values_list("head_id", flat=True).first()
    stored = [m for m in selectors.message_path(head_id) if not selectors.is_compaction_summary(m)]
    return all((m.role, m.text) == (item.role, item.text) for m, item in zip(stored, items, strict=False))


def _session_for_replay(agent: Agent, items: Sequence[MessageInput]) -> tuple[Session, Branch] | None:
    """The closed session a keyless full save is a replay of, locked; None when the agent's current
    session holds that conversation or no session does (the save goes to the current session, a new one
    if none is open).

    The frontend saves the whole conversation without a chat id and closes it with `sleep`; a retry or
    replay of that save must land in the same session, not start a new copy of it, in a session opened
    since by another writer or in a new one. The agent's most recently closed session (a named chat the
    save went to as the current session, closed since, included), else its most recently closed session
    without a chat id, is that session when its conversation and the save's are one (the same roles and
    texts up to where the shorter ends: the first two messages, then the whole) and the current
    session's first messages are not the save's.

    Runs in the append's transaction. Unless the current session holds the conversation (the usual
    autosave, which takes no lock here), it takes the agent's session lock, the one session_ensure takes
    to open, reopen or restore a session, held until the append commits: none of that happens between
    this choice and the write.
    """
    head = [(item.role, item.text) for item in items[:REPLAY_MATCH_MESSAGES]]
    if not head:
        return None
    current = selectors.session_current(agent)
    if current is not None and _begins_with(current, head):
        return None  # its session is open: the save goes there, as any save to the current session
    _advisory_lock(_LOCK_SESSION_CREATE, agent.pk)
    current = selectors.session_current(agent)  # looked at again under the lock
    if current is not None and _begins_with(current, head):
        return None
    closed = Session.objects.filter(agent=agent, status=SessionStatus.CLOSED).order_by(
        "-last_activity_at", "-id"
    )
    # The session closed last, a named chat too (the current session the save was written to, closed
    # by a sleep since), else the last closed without a chat id (a named chat closed since then must not
    # hide the conversation a retry replays).
    candidates = {s.pk: s for s in (closed.first(), closed.filter(external_id="").first()) if s is not None}
    candidate = next(
        (s for s in candidates.values() if _begins_with(s, head) and _holds_conversation(s, items)), None
    )
    if candidate is None:
        return None
    # Archived or deleted since it was found: a save after that starts a new session.
    candidate = (
        Session.objects.select_for_update().filter(pk=candidate.pk, status=SessionStatus.CLOSED).first()
    )
    return _session_with_branch(candidate) if candidate is not None else None


def _new_items(
    items: list[MessageInput], *, known: set[str], full: bool, branch: Branch
) -> tuple[list[MessageInput], int, int | None]:
    """The items to store (duplicates by client id, by position in a replayed conversation, and twice in
    one call dropped), how many were duplicates, and the parent the first new one hangs from."""
    parent_id = branch.head_id
    new: list[MessageInput] = []
    duplicates = 0
    if full:
        stored = [m for m in selectors.message_path(branch.head_id) if not selectors.is_compaction_summary(m)]
        diverged = False
        for index, item in enumerate(items):
            if item.client_id and item.client_id in known:
                duplicates += 1
                continue
            if not diverged and index < len(stored):
                same = stored[index]
                if not item.client_id and same.role == item.role and same.text == item.text:
                    duplicates += 1
                    continue
                diverged = True
                parent_id = stored[index - 1].pk if index else None
            new.append(item)
    else:
        for item in items:
            if item.client_id and item.client_id in known:
                duplicates += 1
            else:
                new.append(item)
    # The same client id twice in one request is stored once.
    seen_ids: set[str] = set()
    unique: list[MessageInput] = []
    for item in new:
        if item.client_id and item.client_id in seen_ids:
            duplicates += 1
            continue
        if item.client_id:
            seen_ids.add(item.client_id)
        unique.append(item)
    return unique, duplicates, parent_id


def _head_and_activity_save(
    session: Session, branch: Branch, *, head_id: int | None, now, message_ids: list[int]
) -> None:
    """The branch's new head, the session's last activity and its running size bound (the new messages
    added, read back from their stored rows as the bound counts them), in one statement (both rows are
    the append's: the session is locked), where two `save(update_fields=...)` took 0.48 ms of Python and
    two round trips. Prepared: bound on the client, PostgreSQL parsed and planned it anew for each batch
    (0.8 ms of its CPU). A bound a write has cleared stays cleared (NULL plus a number)."""
    branch.head_id = head_id
    session.last_activity_at = now
    with prepared_cursor() as cursor:
        cursor.execute(
            f"WITH head AS (UPDATE {Branch._meta.db_table} SET head_id = %s::bigint WHERE id = %s::bigint) "
            f"UPDATE {Session._meta.db_table} SET last_activity_at = %s::timestamptz, context_bytes_bound = "
            f"context_bytes_bound + (SELECT COALESCE(SUM({recovery.MESSAGE_BYTES_SQL}), 0) FROM "
            f"{Message._meta.db_table} WHERE id = ANY(%s::bigint[])) WHERE id = %s::bigint RETURNING context_bytes_bound",
            [head_id, branch.pk, now, message_ids, session.pk],
        )
        session.context_bytes_bound = cursor.fetchone()[0]


# Message's columns in the order Model.__init__ takes them as positional values: half the Python of
# keyword arguments (0.5 ms against 1.0-1.2 ms for a 50-message batch), which Django matches to fields
# one by one, related objects through their descriptors.
_MESSAGE_COLUMNS = tuple((f.attname, f.generated) for f in Message._meta.concrete_fields)
_MESSAGE_AGENT = Message._meta.get_field("agent")
_MESSAGE_SESSION = Message._meta.get_field("session")


def _message_new(agent: Agent, session: Session, **values) -> Message:
    """A new Message of `agent`'s `session` (both cached on it, as `Message(agent=..., session=...)`
    caches them) from the value of each column but the generated ones (left deferred), by attname: a
    column missing or unknown is a TypeError."""
    try:
        message = Message(
            *[DEFERRED if generated else values.pop(column) for column, generated in _MESSAGE_COLUMNS]
        )
    except KeyError as exc:
        raise TypeError(f"Message column {exc} not given") from None
    if values:
        raise TypeError(f"not columns of Message: {', '.join(values)}")
    _MESSAGE_AGENT.set_cached_value(message, agent)
    _MESSAGE_SESSION.set_cached_value(message, session)
    return message


def _rows_store(
    agent: Agent, session: Session, items: list[MessageInput], parent_id: int | None, now
) -> tuple[list[Message], int | None]:
    """Store the items as one chain from `parent_id`; returns the rows and the new head's id."""
    rows = []
    # The first row keeps its parent loaded (the daily note's look-back reads it).
    parent = row_first(Message, "id = %s", [parent_id]) if parent_id else None
    previous = reply_context(parent.text if parent else "")
    for pk, item in zip(ids_allocate(Message, len(items)), items, strict=True):
        rows.append(
            _message_new(
                agent,
                session,
                id=pk,
                project_id=agent.project_id,
                agent_id=agent.pk,
                session_id=session.pk,
                parent_id=parent_id,
                client_id=item.client_id,
                role=item.role,
                text=item.text,
                internal=bool(item.internal),
                tool_calls=item.tool_calls,
                tool_call_id=item.tool_call_id,
                state=item.state,
                archived=False,
                created_at=item.created_at or now,
                reply_to_text=previous,
            )
        )
        if parent is not None and len(rows) == 1:
            rows[0].parent = parent
        parent_id = pk
        previous = reply_context(item.text)
    rows_copy(rows)
    return rows, parent_id


def _side_steps(agent: Agent, session: Session, rows: list[Message], changed_by: str):
    """What an append triggers besides storing: recovery, the write-ahead scan, the daily note and the
    working buffer. Each may fail on its own without failing the append (listed in the warnings)."""
    warnings: list[dict] = []
    # No savepoint around the recovery check itself (two round trips for a step that usually runs no
    # SQL): its reads of the database each run in one of their own.
    recovery = guarded(
        "recovery",
        lambda: _recovery_for_append(session, rows, warnings),
        failed=lambda exc: warnings.append({"source": "recovery", "detail": failure_detail(exc)}),
        savepoint=False,
    )
    # The scan runs no SQL: its matches are found without a savepoint (two round trips), which only a
    # batch with some opens, to record them (most of a conversation's batches have none).
    found = guarded(
        "write_ahead_scan",
        lambda: _write_ahead_matches(rows),
        failed=lambda exc: warnings.append({"source": "write_ahead_scan", "detail": failure_detail(exc)}),
        default=[],
        savepoint=False,
    )
    state = (
        _guarded(
            warnings,
            "write_ahead_scan",
            lambda: _write_ahead_scan(agent=agent, session=session, found=found, changed_by=changed_by),
            default=[],
        )
        if found
        else []
    )
    _guarded(
        warnings,
        "daily_note",
        lambda: _daily_notes_append(agent=agent, new_messages=rows, changed_by=changed_by),
    )
    logged = []
    if not working_buffer_idle(session):  # else nothing to log and no savepoint to open (2 round trips)
        logged = _guarded(
            warnings,
            "working_buffer",
            lambda: working_buffer_update(session=session, messages=rows),
            default=[],
        )
    return warnings, recovery, state, logged


def messages_append(
    *,
    agent: Agent,
    messages: Sequence[MessageInput | dict],
    session: Session | None = None,
    session_key: str = "",
    model_id: str = "",
    full: bool = False,
    changed_by: str = "",
    max_input_tokens: int | None = None,
) -> AppendResult:
    """Append messages to a session's active branch; retries store nothing twice.

    A message whose client id is already stored in the session is skipped. With `full` (the autosave
    of the whole conversation), messages without a client id are matched against the stored
    conversation by position, role and text, so re-saving a growing conversation appends only its new
    tail; if the saved conversation diverges from the stored one, the new messages start a branch at
    the divergence and the stored ones stay on a preserved branch. Nothing stored is ever dropped.

    The session row is locked while the parent chain is computed, so concurrent appends form one chain.
    New user messages are scanned (write-ahead scan) and finished user/assistant exchanges are appended
    to the agent's daily note before this returns.
    """
    if len(messages) > settings.MEMORY_APPEND_MAX_MESSAGES:
        raise TooLarge(
            f"{len(messages)} messages in one call; the limit is {settings.MEMORY_APPEND_MAX_MESSAGES} "
            "(MEMORY_APPEND_MAX_MESSAGES)."
        )
    items = [message_input_check(raw, index) for index, raw in enumerate(messages)]
    max_input_tokens = max_input_tokens_check(max_input_tokens)
    if project_redaction_enabled(agent.project_id):  # one look-up for the whole batch
        for item in items:
            item.text = redact(item.text)
    routed = session is None  # found by its key (or as the current one), not given by the caller
    replay = routed and full and selectors.session_key_is_current(session_key)
    named = routed and not selectors.session_key_is_current(session_key)  # by a chat id
    if named:
        session_label_check("session", session_key.strip(), controls=False)
        session_label_check("model_id", model_id)
    elif routed and not replay:
        session = session_ensure(agent=agent, external_id=session_key, model_id=model_id)
    elif not routed and session.agent_id != agent.pk:
        raise NotFound("Session not found.")
    with transaction.atomic():
        if routed:
            locked = _named_session_lock(agent, session_key.strip(), model_id) if named else None
            session, branch = locked or _session_lock_routed(
                agent, session, replay=items if replay else None, session_key=session_key, model_id=model_id
            )
        else:
            session, branch = _session_lock(session)
        known = selectors.session_client_ids_stored(
            session, [item.client_id for item in items if item.client_id]
        )
        unique, duplicates, parent_id = _new_items(items, known=known, full=full, branch=branch)
        if max_input_tokens and session.max_input_tokens != max_input_tokens:
            session.max_input_tokens = max_input_tokens
            session.save(update_fields=["max_input_tokens"])
        if not unique:
            return AppendResult(session, [], duplicates, [], branch.head_id)
        saved_branch = None
        if parent_id != branch.head_id:
            preserved = _head_preserve(session, branch, new_head_id=parent_id)
            saved_branch = preserved.name if preserved else None
        now = timezone.now()
        rows, parent_id = _rows_store(agent, session, unique, parent_id, now)
        _head_and_activity_save(session, branch, head_id=parent_id, now=now, message_ids=[m.pk for m in rows])
        if session.status == SessionStatus.IDLE:
            _status_set(session, SessionStatus.ACTIVE, reason="new messages", by=changed_by)
        warnings, recovery, state, logged = _side_steps(agent, session, rows, changed_by)
    warnings = [item.warning for item in unique if item.warning] + warnings
    return AppendResult(
        session, rows, duplicates, state, parent_id, saved_branch, warnings, recovery, len(logged)
    )


_OPEN_STATUS_VALUES = [status.value for status in OPEN_STATUSES]


def _named_session_lock(agent: Agent, key: str, model_id: str) -> tuple[Session, Branch] | None:
    """The open session with chat id `key`, locked as it is found (one statement), and its active
    branch, when session_ensure would return it as it is (open, and its model id the one asked for, if
    any): the usual batch, which found it and then locked it in two. None otherwise, and nothing locked: the
    append then takes the usual way (session_ensure, which creates, reopens or restores the session,
    or changes its model id, then its lock) in its transaction."""
    # By hand (row_first): the ORM compiled this query anew for every batch.
    session = row_first(
        Session,
        "agent_id = %s AND external_id = %s AND status = ANY(%s)"
        + (" AND model_id = %s" if model_id else ""),
        [agent.pk, key, _OPEN_STATUS_VALUES, *([model_id] if model_id else [])],
        order_by="last_activity_at DESC, id DESC",  # Session's Meta.ordering, as first() orders
        lock=True,
    )
    return _session_with_branch(session) if session is not None else None


ROUTE_ATTEMPTS = 3


def _session_lock_routed(
    agent: Agent,
    session: Session | None,
    *,
    replay: Sequence[MessageInput] | None,
    session_key: str,
    model_id: str,
):
    """Lock the session `session_ensure` found for this key, finding it again if it stopped being open
    while the append waited for its lock (a close, an archive): a named chat is reopened (restored when
    archived), and a write to the current session goes to the agent's current open session, a new one
    if none, as if the message had come a moment later. It never lands in a closed session unseen by
    that session's handoff and extraction, but for a keyless full save (`replay`, its messages): that
    one goes to the closed session it replays (_session_for_replay), looked for again when the session
    it waited for closed meanwhile, as if it had come a moment later.

    A session found no longer open is left unlocked (`_session_lock_if_open`), so no session row is
    locked when session_ensure runs again: it takes the agent's session lock before a session row, the
    order every writer takes them in."""
    for _ in range(ROUTE_ATTEMPTS):
        replayed = _session_for_replay(agent, replay) if replay is not None else None
        if replayed is not None:
            return replayed
        session = session or session_ensure(agent=agent, external_id=session_key, model_id=model_id)
        locked = _session_lock_if_open(session)
        if locked is not None:
            return locked
        session = None
    raise Conflict("The session kept closing while these messages were stored: send them again.")


RECOVERY_PATH_DEPTH = 200  # how far back the active messages before a user message are looked for


def _recovery_for_append(session: Session, rows: list[Message], warnings: list[dict]) -> dict | None:
    """The recovery block when the newest user message of this append shows lost-context signals. What it
    reads of the stored conversation, and the block, each run in a savepoint of their own (`_guarded`):
    most appends need neither, and open none."""
    users = [m for m in rows if m.role == Role.USER and not m.internal]
    if not users:
        return None
    latest = users[-1]
    lookback = settings.MEMORY_RECOVERY_LOOKBACK
    # The rows of this append are one chain, none of it archived: the messages just before the latest
    # user message are read from memory, and the stored conversation only for what they do not cover.
    before = rows[: rows.index(latest)][-(RECOVERY_PATH_DEPTH + 1) :]
    recent = before[-lookback:]
    depth_left = RECOVERY_PATH_DEPTH - len(before)  # the path is looked at this far back in all
    if len(recent) < lookback and depth_left >= 0:
        stored = _guarded(
            warnings,
            "recovery",
            lambda: selectors.recent_active_messages(
                rows[0].parent_id, lookback - len(recent), max_depth=depth_left
            ),
        )
        if stored is None:
            return None
        recent = stored + recent
    signals = recovery.lost_context_signals(latest.text, recent)
    if not signals:
        return None
    return _guarded(warnings, "recovery", lambda: recovery.recovery_build(session, signals=signals))


# --- write-ahead scan and durable facts ---------------------------------------------------------


def _write_ahead_matches(messages: Iterable[Message]) -> list[tuple[Message, ScanMatch]]:
    """What the write-ahead scan finds in the user messages, each match with its message, in order."""
    return [
        (message, match)
        for message in messages
        if message.role == Role.USER and not message.internal
        for match in scan_message(message.text)
    ]


def _write_ahead_scan(
    *, agent: Agent, session: Session, found: list[tuple[Message, ScanMatch]], changed_by: str
) -> list[SessionStateEntry]:
    """Record the scan's matches: the session's state rows, and each durable fact in long-term memory."""
    entries = []
    for message, match in found:
        durable = match.category in DURABLE_CATEGORIES
        vault_entry = None
        if durable:
            vault_entry = durable_fact_record(
                agent=agent,
                category=match.category,
                text=match.text,
                changed_by=changed_by,
                session=session,
                message=message,
            )
        entries.append(
            SessionStateEntry(
                project_id=agent.project_id,
                agent=agent,
                session=session,
                message=message,
                category=match.category,
                text=match.text,
                trigger=match.trigger[:300],
                durable=durable,
                vault_entry_id=vault_entry.pk if vault_entry else None,
                created_at=message.created_at,
            )
        )
    return rows_create(entries)


def _memory_file_facts(agent: Agent) -> set[str]:
    content = vault_selectors.file_content(agent.pk, MEMORY_FILE)
    if content is None:
        return set()
    facts = set()
    for line in content.splitlines():
        line = line.strip()
        if line.startswith(("- ", "* ")):
            facts.add(normalise_fact(line[2:]))
    return facts


def durable_fact_record(
    *,
    agent: Agent,
    category: str,
    text: str,
    changed_by: str = "",
    session: Session | None = None,
    message: Message | None = None,
) -> VaultEntry | None:
    """Write a durable fact to long-term memory unless it is already there: a vault entry (category
    projects, tags wal + the scan category, source extraction) and a line in the agent's MEMORY.md.

    Duplicates are judged with `normalise_fact` against the facts already in MEMORY.md and the agent's
    write-ahead vault entries; a per-agent advisory lock makes concurrent appends check one at a time.
    Returns the new entry, or None for a duplicate.
    """
    key = normalise_fact(text)
    if not key:
        return None
    with transaction.atomic():
        _advisory_lock(_LOCK_DURABLE_FACTS, agent.pk)
        known = _memory_file_facts(agent)
        if key in known:
            return None
        for content in vault_selectors.entry_contents_tagged(agent.pk, WAL_TAG):
            if normalise_fact(content) == key:
                return None
        entry = vault_services.entry_create(
            agent=agent,
            category="projects",
            content=text,
            tags=[WAL_TAG, category.replace("_", "-")],
            source=EntrySource.EXTRACTION,
            created_by=changed_by or "write-ahead-scan",
            source_session_id=session.pk if session else None,
            source_message_ids=[message.pk] if message else [],
        )
        vault_services.file_append(
            agent=agent,
            path=MEMORY_FILE,
            text=f"- {' '.join(text.split())}\n",
            changed_by=changed_by or "write-ahead-scan",
            header=MEMORY_FILE_HEADER,
        )
    return entry
