"""Writes to short-term memory: appends, the write-ahead scan, checkpoints, session close, branches and
compaction. The API, pages, commands and tasks all call these."""

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from memoryproject.errors import Conflict, InvalidInput, NotFound, TooLarge
from memoryproject.llm import llm_configured
from vault import services as vault_services
from vault.extraction import insights_extract
from vault.models import Agent, EntrySource, VaultEntry, WorkspaceFile
from vault.redaction import project_redaction_enabled, redact, redact_for_project
from vault.text import text_check

from . import selectors
from .compaction import (
    SUMMARY_PREFIX,
    SUMMARY_STATE_KEY,
    Summariser,
    compaction_plan,
    heuristic_summary,
    llm_summary,
    tool_result_truncate,
)
from .models import Branch, Checkpoint, Message, Role, Session, SessionStateEntry, SessionStatus
from .scan import DURABLE_CATEGORIES, normalise_fact, scan_message

logger = logging.getLogger(__name__)
DEFAULT_SUMMARISER = "sessions_app.compaction.heuristic_summary"

MAIN_BRANCH = "main"
ROLE_ALIASES = {"agent": Role.ASSISTANT, "human": Role.USER}
MEMORY_FILE = "MEMORY.md"
MEMORY_FILE_HEADER = "# MEMORY.md\n\n"
WAL_TAG = "wal"
# pg_advisory_xact_lock namespaces (first key); the second key is the agent id.
_LOCK_SESSION_CREATE = 73_001
_LOCK_DURABLE_FACTS = 73_002


def _advisory_lock(namespace: int, key: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [namespace, key])


# --- input ---------------------------------------------------------------------------------------


@dataclass
class MessageInput:
    role: str
    text: str = ""
    client_id: str = ""
    internal: bool = False
    tool_calls: list = field(default_factory=list)
    tool_call_id: str = ""
    state: dict = field(default_factory=dict)
    created_at: datetime | None = None


def _input_check(raw: MessageInput | dict, index: int) -> MessageInput:
    item = raw if isinstance(raw, MessageInput) else MessageInput(**raw)
    loc = ["messages", index]

    def invalid(message: str, field_name: str):
        return InvalidInput(f"messages[{index}]: {message}", [{"loc": [*loc, field_name], "msg": message}])

    role = ROLE_ALIASES.get(item.role, item.role) if isinstance(item.role, str) else item.role
    if role not in Role.values:
        raise invalid(
            f"unknown role {item.role!r}; use one of: {', '.join(Role.values)} (or 'agent')", "role"
        )
    if item.text is None:
        item.text = ""
    try:
        text_check(
            item.text,
            field="text",
            allow_empty=True,
            max_bytes=settings.MEMORY_MAX_MESSAGE_BYTES,
            limit_setting="MEMORY_MAX_MESSAGE_BYTES",
        )
    except (InvalidInput, TooLarge) as exc:
        exc.detail = f"messages[{index}]: {exc.detail}"
        raise
    if role in (Role.USER, Role.SYSTEM) and not item.text.strip():
        raise invalid("text must not be empty for user and system messages", "text")
    for name in ("client_id", "tool_call_id"):
        value = getattr(item, name) or ""
        if not isinstance(value, str) or len(value) > 200:
            raise invalid(f"{name} must be a string of at most 200 characters", name)
        if "\x00" in value:
            raise invalid(f"{name} must not contain NUL (\\u0000) characters", name)
        setattr(item, name, value.strip())
    if not isinstance(item.tool_calls, list):
        raise invalid("tool_calls must be a list", "tool_calls")
    if not isinstance(item.state, dict):
        raise invalid("state must be an object", "state")
    _message_size_check(item, index)
    item.role = role
    return item


def _message_size_check(item: MessageInput, index: int) -> None:
    """The text, tool calls and state of one message count together against MEMORY_MAX_MESSAGE_BYTES:
    any of them can carry a large payload, and all of them are stored and read back."""
    try:
        extra = json.dumps([item.tool_calls, item.state], ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            f"messages[{index}]: tool_calls or state contains invalid Unicode (lone surrogates)",
            [{"loc": ["messages", index, "tool_calls"], "msg": "invalid unicode"}],
        ) from None
    except ValueError as exc:
        raise InvalidInput(
            f"messages[{index}]: tool_calls or state cannot be stored as JSON: {exc}",
            [{"loc": ["messages", index, "tool_calls"], "msg": "not JSON"}],
        ) from None
    size = len(item.text.encode("utf-8")) + len(extra)
    limit = settings.MEMORY_MAX_MESSAGE_BYTES
    if size > limit:
        raise TooLarge(
            f"messages[{index}]: text, tool_calls and state together are {size} bytes; the limit is "
            f"{limit} bytes (MEMORY_MAX_MESSAGE_BYTES).",
            [{"loc": ["messages", index], "msg": "too large"}],
        )


# --- sessions ------------------------------------------------------------------------------------


def _session_create(agent: Agent, *, external_id: str = "", model_id: str = "") -> Session:
    session = Session.objects.create(
        project_id=agent.project_id, agent=agent, external_id=external_id, model_id=model_id
    )
    branch = Branch.objects.create(session=session, name=MAIN_BRANCH)
    session.active_branch = branch
    session.save(update_fields=["active_branch"])
    return session


def session_ensure(*, agent: Agent, external_id: str = "", model_id: str = "") -> Session:
    """The session to write to: the one with this chat id (created, or reopened if closed), else the
    agent's current open session, else a new one. Safe when first writes race."""
    external_id = (external_id or "").strip()
    if len(external_id) > 200:
        raise InvalidInput(
            "session must be at most 200 characters", [{"loc": ["session"], "msg": "too long"}]
        )
    if "\x00" in external_id:
        raise InvalidInput(
            "session must not contain NUL (\\u0000) characters",
            [{"loc": ["session"], "msg": "contains NUL characters"}],
        )
    if len(model_id or "") > 200:
        raise InvalidInput(
            "model_id must be at most 200 characters", [{"loc": ["model_id"], "msg": "too long"}]
        )
    with transaction.atomic():
        _advisory_lock(_LOCK_SESSION_CREATE, agent.pk)
        if external_id:
            session = Session.objects.filter(agent=agent, external_id=external_id).first()
        else:
            session = selectors.session_current(agent)
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


def _session_lock(session: Session) -> tuple[Session, Branch]:
    """Lock the session row (appends, checkouts and compaction of one session run one at a time) and
    return it with its active branch, creating "main" for sessions made before branches existed."""
    session = Session.objects.select_for_update().get(pk=session.pk)
    if session.status == SessionStatus.ARCHIVED:
        raise Conflict(
            "The session is archived: restore it first (POST /agents/{agent}/sessions/{id}/restore)."
        )
    branch = Branch.objects.filter(pk=session.active_branch_id).first() if session.active_branch_id else None
    if branch is None:
        branch, _ = Branch.objects.get_or_create(session=session, name=MAIN_BRANCH)
        session.active_branch = branch
        session.save(update_fields=["active_branch"])
    return session, branch


def _head_preserve(session: Session, branch: Branch, *, new_head_id: int | None) -> Branch | None:
    """Before the active branch's head moves off its current message, make sure that message stays
    reachable: if no other branch's path contains it, a branch named "<branch>-<message id>" keeps it."""
    old_head = branch.head_id
    if old_head is None or old_head == new_head_id:
        return None
    if new_head_id is not None and old_head in selectors.message_path_ids(new_head_id):
        return None
    for other in Branch.objects.filter(session=session).exclude(pk=branch.pk):
        if other.head_id is not None and old_head in selectors.message_path_ids(other.head_id):
            return None
    saved, _ = Branch.objects.get_or_create(
        session=session,
        name=f"{branch.name}-{old_head}"[:100],
        defaults={"head_id": old_head, "from_message_id": old_head},
    )
    return saved


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


def _ids_allocate(count: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence('sessions_app_message', 'id')) FROM generate_series(1, %s)",
            [count],
        )
        return [row[0] for row in cursor.fetchall()]


REPLAY_MATCH_MESSAGES = 2


def _session_for_replay(agent: Agent, items: Sequence[MessageInput]) -> Session | None:
    """The closed session a keyless full save is a replay of, if any.

    Seed 000's frontend saves the whole conversation without a chat id and closes it with `sleep`; a
    retry or replay of that save must land in the same session, not start a new copy of it. The agent's
    most recently closed session is that session when its first messages have the same roles and texts.
    """
    head = [(item.role, item.text) for item in items[:REPLAY_MATCH_MESSAGES]]
    if not head:
        return None
    if selectors.session_current(agent) is not None:
        return None  # an open session takes the save, as before
    candidate = (
        Session.objects.filter(agent=agent, status=SessionStatus.CLOSED, external_id="")
        .order_by("-last_activity_at", "-id")
        .first()
    )
    if candidate is None:
        return None
    first = list(
        Message.objects.filter(session=candidate)
        .order_by("created_at", "id")
        .values_list("role", "text")[: len(head)]
    )
    return candidate if first == head else None


REPLY_CONTEXT_CHARS = 300


def _reply_context(text: str | None) -> str:
    """The part of the previous turn stored with a message for search (its end: what is answered)."""
    text = " ".join((text or "").split())
    return text if len(text) <= REPLY_CONTEXT_CHARS else text[-REPLY_CONTEXT_CHARS:]


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

    A message whose client id is already stored in the session is skipped. With `full` (seed 000's
    autosave of the whole conversation), messages without a client id are matched against the stored
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
    items = [_input_check(raw, index) for index, raw in enumerate(messages)]
    max_input_tokens = max_input_tokens_check(max_input_tokens)
    if project_redaction_enabled(agent.project_id):  # one look-up for the whole batch
        for item in items:
            item.text = redact(item.text)
    if session is None and full and not (session_key or "").strip():
        session = _session_for_replay(agent, items)
    if session is None:
        session = session_ensure(agent=agent, external_id=session_key, model_id=model_id)
    elif session.agent_id != agent.pk:
        raise NotFound("Session not found.")
    with transaction.atomic():
        session, branch = _session_lock(session)
        client_ids = [item.client_id for item in items if item.client_id]
        known = set(
            Message.objects.filter(session=session, client_id__in=client_ids).values_list(
                "client_id", flat=True
            )
        )
        parent_id = branch.head_id
        new: list[MessageInput] = []
        duplicates = 0
        saved_branch = None
        if full:
            stored = [
                m for m in selectors.message_path(branch.head_id) if not selectors.is_compaction_summary(m)
            ]
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
        if max_input_tokens and session.max_input_tokens != max_input_tokens:
            session.max_input_tokens = max_input_tokens
            session.save(update_fields=["max_input_tokens"])
        if not unique:
            return AppendResult(session, [], duplicates, [], branch.head_id)
        if parent_id != branch.head_id:
            preserved = _head_preserve(session, branch, new_head_id=parent_id)
            saved_branch = preserved.name if preserved else None
        now = timezone.now()
        ids = _ids_allocate(len(unique))
        rows = []
        previous = _reply_context(
            Message.objects.filter(pk=parent_id).values_list("text", flat=True).first() if parent_id else ""
        )
        for pk, item in zip(ids, unique, strict=True):
            rows.append(
                Message(
                    pk=pk,
                    project_id=agent.project_id,
                    agent=agent,
                    session=session,
                    parent_id=parent_id,
                    client_id=item.client_id,
                    role=item.role,
                    text=item.text,
                    internal=bool(item.internal),
                    tool_calls=item.tool_calls,
                    tool_call_id=item.tool_call_id,
                    state=item.state,
                    created_at=item.created_at or now,
                    reply_to_text=previous,
                )
            )
            parent_id = pk
            previous = _reply_context(item.text)
        Message.objects.bulk_create(rows)
        branch.head_id = parent_id
        branch.save(update_fields=["head"])
        session.last_activity_at = now
        session.save(update_fields=["last_activity_at"])
        if session.status == SessionStatus.IDLE:
            _status_set(session, SessionStatus.ACTIVE, reason="new messages", by=changed_by)
        warnings: list[dict] = []
        recovery = _guarded(warnings, "recovery", lambda: _recovery_for_append(session, rows))
        state = _guarded(
            warnings,
            "write_ahead_scan",
            lambda: _write_ahead_scan(agent=agent, session=session, messages=rows, changed_by=changed_by),
            default=[],
        )
        _guarded(
            warnings,
            "daily_note",
            lambda: _daily_notes_append(agent=agent, new_messages=rows, changed_by=changed_by),
        )
        logged = _guarded(
            warnings,
            "working_buffer",
            lambda: working_buffer_update(session=session, messages=rows),
            default=[],
        )
    return AppendResult(
        session, rows, duplicates, state, parent_id, saved_branch, warnings, recovery, len(logged)
    )


def _recovery_for_append(session: Session, rows: list[Message]) -> dict | None:
    """The recovery block when the newest user message of this append shows lost-context signals."""
    users = [m for m in rows if m.role == Role.USER and not m.internal]
    if not users:
        return None
    latest = users[-1]
    history = [m for m in selectors.message_path(latest.parent_id, max_depth=200) if not m.archived]
    signals = selectors.lost_context_signals(latest.text, history)
    if not signals:
        return None
    return selectors.recovery_build(session, signals=signals)


# --- write-ahead scan and durable facts (seed 002) -----------------------------------------------


def _write_ahead_scan(
    *, agent: Agent, session: Session, messages: Iterable[Message], changed_by: str
) -> list[SessionStateEntry]:
    entries = []
    for message in messages:
        if message.role != Role.USER or message.internal:
            continue
        for match in scan_message(message.text):
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
    return SessionStateEntry.objects.bulk_create(entries)


def _memory_file_facts(agent: Agent) -> set[str]:
    file = WorkspaceFile.objects.filter(agent=agent, path=MEMORY_FILE, deleted_at__isnull=True).first()
    if file is None:
        return set()
    facts = set()
    for line in file.content.splitlines():
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
        for content in VaultEntry.objects.filter(agent=agent, tags__contains=[WAL_TAG]).values_list(
            "content", flat=True
        ):
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


# --- daily notes (seed 002) ----------------------------------------------------------------------


def _clip(text: str, max_chars: int) -> str:
    text = text.strip()
    return text if len(text) <= max_chars else text[: max_chars - 3].rstrip() + "..."


def _daily_notes_append(*, agent: Agent, new_messages: list[Message], changed_by: str) -> None:
    """Append each finished user -> assistant exchange to the daily note of the assistant's date.

    The user side is every user message since the previous assistant message on the path (looked up
    in the stored conversation when the exchange began in an earlier call).
    """
    if not any(m.role == Role.ASSISTANT and not m.internal for m in new_messages):
        return
    lookback = selectors.message_path(new_messages[0].parent_id, max_depth=50)
    path = lookback + new_messages
    first_new = len(lookback)
    max_chars = settings.MEMORY_DAILY_NOTE_CHARS
    blocks = []
    for index in range(first_new, len(path)):
        message = path[index]
        if message.role != Role.ASSISTANT or message.internal or not message.text.strip():
            continue
        user_texts = []
        for previous in reversed(path[:index]):
            if previous.internal or previous.role in (Role.TOOL, Role.SYSTEM):
                continue
            if previous.role == Role.ASSISTANT:
                break
            user_texts.append(previous.text)
        if not user_texts:
            continue
        user = " / ".join(_clip(t, max_chars) for t in reversed(user_texts))
        when = timezone.localtime(message.created_at)
        blocks.append(
            (
                message.created_at,
                f"\n## [{when:%H:%M:%S}]\n**User:** {_clip(user, max_chars)}\n**Agent:** "
                f"{_clip(message.text, max_chars)}\n",
            )
        )
    if blocks:
        vault_services.daily_notes_append(agent=agent, blocks=blocks, changed_by=changed_by)


# --- checkpoints, handoffs, close (seed 000) -----------------------------------------------------


def _public_messages(messages: Iterable[Message]) -> list[Message]:
    return [m for m in messages if not m.internal and not selectors.is_compaction_summary(m)]


def checkpoint_save(
    *,
    agent: Agent,
    messages: Sequence[MessageInput | dict] | None = None,
    session: Session | None = None,
    chat_id: str = "",
    model_id: str = "",
) -> Checkpoint:
    """Save the agent's checkpoint (replacing the previous one): the last MEMORY_CHECKPOINT_MESSAGES
    non-internal messages of `messages`, or of the session's conversation when none are given, with the
    chat id and model id."""
    for name, value in (("chat_id", chat_id), ("model_id", model_id)):
        if len(value or "") > 200:
            raise InvalidInput(f"{name} must be at most 200 characters", [{"loc": [name], "msg": "too long"}])
    if messages is not None:
        items = [_input_check(raw, index) for index, raw in enumerate(messages)]
        kept = [
            {"role": i.role, "text": redact_for_project(i.text, agent.project_id)}
            for i in items
            if not i.internal
        ]
    elif session is not None:
        kept = [
            {"role": m.role, "text": m.text}
            for m in _public_messages(selectors.session_conversation(session))
        ]
    else:
        raise InvalidInput("Give the messages to checkpoint, or save messages to a session first.")
    kept = kept[-settings.MEMORY_CHECKPOINT_MESSAGES :]
    if session is not None:
        chat_id = chat_id or session.external_id
        model_id = model_id or session.model_id
    checkpoint, _ = Checkpoint.objects.update_or_create(
        agent=agent,
        defaults={
            "project_id": agent.project_id,
            "session": session,
            "messages": kept,
            "chat_id": chat_id or "",
            "model_id": model_id or "",
            "saved_at": timezone.now(),
        },
    )
    return checkpoint


def handoff_format(messages: Sequence[Message | MessageInput]) -> str:
    """Seed 000's handoff: the last MEMORY_HANDOFF_MESSAGES user/agent messages as "[User]: text" or
    "[Agent]: text", each cut to MEMORY_HANDOFF_MESSAGE_CHARS characters."""
    chat = [m for m in messages if m.role in (Role.USER, Role.ASSISTANT) and m.text.strip()]
    lines = []
    for message in chat[-settings.MEMORY_HANDOFF_MESSAGES :]:
        label = "User" if message.role == Role.USER else "Agent"
        lines.append(f"[{label}]: {' '.join(message.text.split())[: settings.MEMORY_HANDOFF_MESSAGE_CHARS]}")
    return "\n".join(lines)


def _handoff_message_ids(messages: Sequence[Message]) -> list[int]:
    """The ids of the messages handoff_format quotes."""
    chat = [m for m in messages if m.role in (Role.USER, Role.ASSISTANT) and m.text.strip()]
    return [m.pk for m in chat[-settings.MEMORY_HANDOFF_MESSAGES :] if getattr(m, "pk", None)]


@dataclass
class CloseResult:
    session: Session
    checkpoint: Checkpoint
    handoff: VaultEntry | None
    decisions: list[VaultEntry]
    lessons: list[VaultEntry]
    appended: AppendResult | None


def _insight_sources(messages: Sequence[Message]) -> dict[str, int]:
    """The id of the message each insight of the conversation was first found in, by normalised text."""
    found: dict[str, int] = {}
    for message in messages:
        insights = insights_extract(
            [message.text],
            max_per_kind=settings.MEMORY_INSIGHTS_MAX,
            max_chars=settings.MEMORY_INSIGHT_CHARS,
            min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
        )
        for text in (*insights.decisions, *insights.lessons):
            found.setdefault(normalise_fact(text), message.pk)
    return found


def _insight_store(
    agent: Agent,
    category: str,
    texts: list[str],
    changed_by: str,
    session: Session | None = None,
    sources: dict[str, int] | None = None,
) -> list[VaultEntry]:
    existing = {
        normalise_fact(c)
        for c in VaultEntry.objects.filter(
            agent=agent, category=category, tags__contains=["auto-extract"]
        ).values_list("content", flat=True)
    }
    stored = []
    for text in texts:
        if normalise_fact(text) in existing:
            continue
        existing.add(normalise_fact(text))
        source_id = (sources or {}).get(normalise_fact(text))
        stored.append(
            vault_services.entry_create(
                agent=agent,
                category=category,
                content=text,
                tags=["auto-extract", "session-close", *([f"session-{session.pk}"] if session else [])],
                source=EntrySource.EXTRACTION,
                created_by=changed_by,
                source_session_id=session.pk if session else None,
                source_message_ids=[source_id] if source_id else [],
            )
        )
    return stored


def session_close(
    *,
    agent: Agent,
    session: Session | None = None,
    session_key: str = "",
    messages: Sequence[MessageInput | dict] | None = None,
    summary: str = "",
    model_id: str = "",
    changed_by: str = "",
) -> CloseResult:
    """Seed 000's sleep: store the final messages (as a full-conversation save, so nothing is dropped),
    save a checkpoint, write a handoff entry (tags auto-handoff, session-close) from the last messages,
    extract decisions and lessons from the whole conversation (tags auto-extract, session-close), and
    close the session. An insight already extracted earlier is not stored twice."""
    if summary:
        text_check(summary, field="summary")
    with transaction.atomic():
        appended = None
        if messages:
            appended = messages_append(
                agent=agent,
                messages=messages,
                session=session,
                session_key=session_key,
                model_id=model_id,
                full=True,
                changed_by=changed_by,
            )
            session = appended.session
        elif session is None:
            session = selectors.session_find(agent, session_key or None)
        if session is None:
            raise NotFound("No open session to close: send the conversation's messages.")
        session, _ = _session_lock(session)
        conversation = _public_messages(selectors.session_conversation(session))
        checkpoint = checkpoint_save(agent=agent, session=session)
        handoff_text = handoff_format(conversation)
        if summary.strip():
            handoff_text = f"{summary.strip()}\n\n{handoff_text}".strip()
        handoff = None
        if handoff_text:
            handoff = vault_services.entry_create(
                agent=agent,
                category="handoffs",
                content=handoff_text,
                tags=["auto-handoff", "session-close"],
                source=EntrySource.EXTRACTION,
                created_by=changed_by,
                source_session_id=session.pk,
                source_message_ids=_handoff_message_ids(conversation),
            )
        insights = insights_extract(
            [m.text for m in conversation if m.role in (Role.USER, Role.ASSISTANT)],
            max_per_kind=settings.MEMORY_INSIGHTS_MAX,
            max_chars=settings.MEMORY_INSIGHT_CHARS,
            min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
        )
        chat = [m for m in conversation if m.role in (Role.USER, Role.ASSISTANT)]
        sources = _insight_sources(chat) if insights.decisions or insights.lessons else {}
        decisions = _insight_store(agent, "decisions", insights.decisions, changed_by, session, sources)
        lessons = _insight_store(agent, "lessons", insights.lessons, changed_by, session, sources)
        session.closed_at = timezone.now()
        session.save(update_fields=["closed_at"])
        _status_set(session, SessionStatus.CLOSED, reason="sleep", by=changed_by)
        _guarded(
            [],
            "extraction_enqueue",
            lambda: vault_services.extraction_enqueue(
                agent=agent, session_id=session.pk, trigger_source="close"
            ),
        )
    return CloseResult(session, checkpoint, handoff, decisions, lessons, appended)


# --- branches and time travel (seed 003) ---------------------------------------------------------


def _branch_name_check(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100 or "\x00" in name:
        raise InvalidInput(
            "branch name must be 1-100 characters", [{"loc": ["name"], "msg": "invalid branch name"}]
        )
    return name


def branch_create(*, session: Session, name: str, message: Message | None = None) -> Branch:
    """Create a branch pointing at `message` (default: the current head). It does not become active."""
    name = _branch_name_check(name)
    with transaction.atomic():
        session, active = _session_lock(session)
        if message is not None and message.session_id != session.pk:
            raise NotFound("Message not found in this session.")
        if Branch.objects.filter(session=session, name=name).exists():
            raise Conflict(f"Branch {name!r} already exists.")
        head_id = message.pk if message is not None else active.head_id
        return Branch.objects.create(session=session, name=name, head_id=head_id, from_message_id=head_id)


def branch_checkout(*, session: Session, name: str) -> Branch:
    """Make a branch the active one: appends go after its head, the conversation is its path."""
    with transaction.atomic():
        session, _ = _session_lock(session)
        branch = Branch.objects.filter(session=session, name=name).first()
        if branch is None:
            raise NotFound(f"Branch {name!r} not found.")
        session.active_branch = branch
        session.save(update_fields=["active_branch"])
        return branch


def message_checkout(*, session: Session, message: Message) -> tuple[Branch, Branch | None]:
    """Time travel: move the active branch's head back to `message`. Later messages are not deleted:
    if no other branch reaches them, a branch "<branch>-<old head id>" keeps them. Returns the active
    branch and that preserved branch (or None)."""
    with transaction.atomic():
        session, branch = _session_lock(session)
        if message.session_id != session.pk:
            raise NotFound("Message not found in this session.")
        preserved = _head_preserve(session, branch, new_head_id=message.pk)
        branch.head_id = message.pk
        branch.save(update_fields=["head"])
        return branch, preserved


# --- context window management (seeds 001, 002, 003) ---------------------------------------------


@dataclass
class CompactResult:
    compacted: bool
    reason: str
    tokens_before: int
    tokens_after: int
    threshold: int
    summary: Message | None = None
    archived_ids: list[int] = field(default_factory=list)
    context: list[dict] = field(default_factory=list)


def summariser_default() -> Summariser:
    """The configured summariser (MEMORY_COMPACT_SUMMARISER); the heuristic one if that cannot load."""
    if llm_configured() and settings.MEMORY_COMPACT_SUMMARISER == DEFAULT_SUMMARISER:
        return llm_summary
    try:
        return import_string(settings.MEMORY_COMPACT_SUMMARISER)
    except ImportError:
        logger.warning("MEMORY_COMPACT_SUMMARISER %r cannot be imported", settings.MEMORY_COMPACT_SUMMARISER)
        return heuristic_summary


def context_render(messages: Sequence[Message]) -> list[dict]:
    """Messages as they go into a model's context: tool results over the limit are truncated."""
    limit = settings.MEMORY_TOOL_RESULT_MAX_CHARS
    return [
        {
            "id": m.pk,
            "role": m.role,
            "text": tool_result_truncate(m.text, limit) if m.role == Role.TOOL else m.text,
            "tool_calls": m.tool_calls,
            "tool_call_id": m.tool_call_id,
        }
        for m in messages
    ]


def session_compact(
    *,
    session: Session,
    max_input_tokens: int | None = None,
    trigger_ratio: float | None = None,
    emergency: bool = False,
    force: bool = False,
    summariser: Summariser | None = None,
    keep_first: int | None = None,
    keep_turns: int | None = None,
) -> CompactResult:
    """Compact a session's context when it passes `trigger_ratio` of the model's `max_input_tokens`
    (or always with `force`/`emergency`): keep the first messages and the most recent turns, and replace
    the middle with one `user` message prefixed with SUMMARY_PREFIX (seed 001: a user message, so old
    input is never raised to system level). Emergency mode keeps only the last
    MEMORY_COMPACT_EMERGENCY_TURNS turns and summarises without the LLM.

    Nothing is deleted: the replaced messages are marked archived and stay stored and searchable; the
    summary is inserted in the tree just before the kept recent messages.
    """
    max_input_tokens = max_input_tokens or settings.MEMORY_MODEL_MAX_INPUT_TOKENS
    trigger_ratio = settings.MEMORY_COMPACT_TRIGGER_RATIO if trigger_ratio is None else trigger_ratio
    if max_input_tokens < 1 or not 0 < trigger_ratio <= 1:
        raise InvalidInput("max_input_tokens must be positive and trigger_ratio in (0, 1].")
    threshold = int(max_input_tokens * trigger_ratio)
    with transaction.atomic():
        session, branch = _session_lock(session)
        active = selectors.session_conversation(session, active_only=True)
        before = selectors.conversation_tokens(active)
        if not (force or emergency or before > threshold):
            return CompactResult(
                False, "under the threshold", before, before, threshold, context=context_render(active)
            )
        if emergency:
            plan = compaction_plan(active, keep_first=0, keep_turns=settings.MEMORY_COMPACT_EMERGENCY_TURNS)
            summarise = heuristic_summary
        else:
            plan = compaction_plan(
                active,
                keep_first=settings.MEMORY_COMPACT_KEEP_FIRST if keep_first is None else keep_first,
                keep_turns=settings.MEMORY_COMPACT_KEEP_TURNS if keep_turns is None else keep_turns,
            )
            summarise = summariser or summariser_default()
        if not plan.summarise or not plan.keep_recent:
            return CompactResult(
                False, "nothing to compact", before, before, threshold, context=context_render(active)
            )
        try:
            summary_body = summarise(plan.summarise)
        except Exception:
            logger.exception("summariser failed; using the heuristic summary")
            summary_body = heuristic_summary(plan.summarise)
        max_chars = settings.MEMORY_COMPACT_SUMMARY_TOKENS * 4
        summary_body = (summary_body or "").strip()[:max_chars] or heuristic_summary(plan.summarise)
        archived_ids = [m.pk for m in plan.summarise]
        Message.objects.filter(pk__in=archived_ids).update(archived=True)
        last_archived = plan.summarise[-1]
        summary = Message.objects.create(
            project_id=session.project_id,
            agent_id=session.agent_id,
            session=session,
            parent_id=last_archived.pk,
            role=Role.USER,
            text=f"{SUMMARY_PREFIX}\n{summary_body}",
            internal=True,
            state={SUMMARY_STATE_KEY: {"replaces": archived_ids, "emergency": emergency}},
            created_at=timezone.now(),
        )
        first_recent = plan.keep_recent[0]
        Message.objects.filter(pk=first_recent.pk).update(parent_id=summary.pk)
        after_messages = [*plan.keep_first, summary, *plan.keep_recent]
        after = selectors.conversation_tokens(after_messages)
    return CompactResult(
        True,
        "emergency" if emergency else ("forced" if force and before <= threshold else "over the threshold"),
        before,
        after,
        threshold,
        summary,
        archived_ids,
        context_render(after_messages),
    )


# --- resilience (seed 000) ------------------------------------------------------------------------


def _guarded(warnings: list[dict], source: str, work, default=None):
    """Run one optional step in a savepoint: a failure is logged and reported in `warnings`, and what it
    wrote is rolled back, so appends and context injection never fail because one source failed."""
    try:
        with transaction.atomic():
            return work()
    except Exception as exc:  # noqa: BLE001 - silent resilience: every source may fail on its own
        logger.exception("%s failed; continuing without it", source)
        warnings.append({"source": source, "detail": f"{type(exc).__name__}: {exc}"[:300]})
        return default


# --- working buffer (seed 002) --------------------------------------------------------------------

BUFFER_USER_CHARS = 2000


def _reply_summary(text: str, max_chars: int) -> str:
    """A short summary of an agent reply: its first sentences, whitespace collapsed, cut to max_chars."""
    flat = " ".join(text.split())
    if len(flat) <= max_chars:
        return flat
    cut = flat[:max_chars]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if end >= max_chars // 3:
        return cut[: end + 1]
    return cut[: max_chars - 3].rstrip() + "..."


def max_input_tokens_check(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1000 <= value <= 100_000_000:
        raise InvalidInput(
            "max_input_tokens must be an integer between 1000 and 100000000",
            [{"loc": ["max_input_tokens"], "msg": "out of range"}],
        )
    return value


def working_buffer_update(*, session: Session, messages: Sequence[Message]) -> list:
    """Log the new exchange in the session's working buffer: activate it when the active context reaches
    MEMORY_WORKING_BUFFER_RATIO of the model window, and once active log every later user message and a
    summary of every agent reply. The caller holds the session row lock."""
    from .models import WorkingBufferEntry

    if session.buffer_started_at is None:
        window = session.max_input_tokens or settings.MEMORY_MODEL_MAX_INPUT_TOKENS
        if selectors.session_tokens_upper_bound(session) < int(window * settings.MEMORY_WORKING_BUFFER_RATIO):
            return []  # far from the threshold: no need to load the whole conversation to know it
        status = selectors.buffer_usage(session)
        if status["context_tokens"] < status["threshold_tokens"]:
            return []
        session.buffer_started_at = timezone.now()
        session.save(update_fields=["buffer_started_at"])
    rows = []
    for message in messages:
        if message.internal or not message.text.strip() or selectors.is_compaction_summary(message):
            continue
        if message.role == Role.USER:
            side, text = WorkingBufferEntry.Side.HUMAN, _clip(message.text, BUFFER_USER_CHARS)
        elif message.role == Role.ASSISTANT:
            side = WorkingBufferEntry.Side.AGENT
            text = _reply_summary(message.text, settings.MEMORY_WORKING_BUFFER_SUMMARY_CHARS)
        else:
            continue
        rows.append(
            WorkingBufferEntry(
                session=session, message_id=message.pk, side=side, text=text, created_at=message.created_at
            )
        )
    return WorkingBufferEntry.objects.bulk_create(rows)


# --- lifecycle (seed 004) -------------------------------------------------------------------------

LIFECYCLE_ACTOR = "lifecycle"
DELETED = "deleted"


def transition_record(*, session: Session, to_status: str, reason: str, by: str = "", from_status: str = ""):
    from .models import SessionTransition

    now = timezone.now()
    return SessionTransition.objects.create(
        project_id=session.project_id,
        agent_id=session.agent_id,
        session=session,
        session_pk=session.pk,
        from_status=from_status or session.status,
        to_status=to_status,
        reason=reason[:300],
        by=(by or LIFECYCLE_ACTOR)[:200],
        at=now,
    )


def _status_set(session: Session, to_status: str, *, reason: str, by: str = "") -> None:
    previous = session.status
    if previous == to_status:
        return
    session.status = to_status
    session.status_changed_at = timezone.now()
    session.save(update_fields=["status", "status_changed_at"])
    transition_record(session=session, from_status=previous, to_status=to_status, reason=reason, by=by)


_MESSAGE_FIELDS = (
    "id", "parent_id", "client_id", "role", "text", "internal", "tool_calls", "tool_call_id", "state",
    "archived", "created_at",
)  # fmt: skip


def session_archive(*, session: Session, reason: str = "", by: str = "") -> "SessionArchive":  # noqa: F821
    """Move a session's messages to cold storage: one SessionArchive row holding every message row as
    zlib-compressed JSON (ids, parents, client ids, timestamps, tool calls, state), the branch heads and
    the write-ahead-scan links, plus the plain text for search. The Message rows leave the hot table."""
    import json
    import zlib

    from .models import SessionArchive

    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        if session.status == SessionStatus.ARCHIVED:
            raise Conflict("The session is already archived.")
        messages = list(
            Message.objects.filter(session=session).order_by("created_at", "id").values(*_MESSAGE_FIELDS)
        )
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
            archived_at=timezone.now(),
        )
        Message.objects.filter(session=session).update(parent=None)
        Message.objects.filter(session=session).delete()
        _status_set(session, SessionStatus.ARCHIVED, reason=reason or "archived", by=by)
    return archive


def session_restore(*, session: Session, by: str = "", reason: str = "restored on demand") -> Session:
    """Bring an archived session back: every message row exactly as it was, branch heads and scan links
    re-attached, the archive row removed. The session comes back idle (closed if it was closed) with its
    activity time set to now, so the lifecycle does not archive it again at once."""
    import json
    import zlib

    from .models import SessionArchive

    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        archive = SessionArchive.objects.filter(session=session).first()
        if session.status != SessionStatus.ARCHIVED or archive is None:
            raise Conflict("The session is not archived.")
        data = json.loads(zlib.decompress(bytes(archive.payload)).decode("utf-8"))
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
                )
                for row in data["messages"]
            ]
        )
        for branch_id, (head_id, from_id) in data["branches"].items():
            Branch.objects.filter(pk=int(branch_id), session=session).update(
                head_id=head_id, from_message_id=from_id
            )
        for entry_id, message_id in data["state"].items():
            SessionStateEntry.objects.filter(pk=int(entry_id), session=session).update(message_id=message_id)
        archive.delete()
        session.last_activity_at = timezone.now()
        session.save(update_fields=["last_activity_at"])
        back = SessionStatus.CLOSED if data.get("status") == SessionStatus.CLOSED else SessionStatus.IDLE
        _status_set(session, back, reason=reason, by=by)
    return session


def session_delete(*, session: Session, reason: str, by: str = "") -> None:
    """Delete a session for good (retention), audited with vault's DeletionAudit (hash and size of its
    messages, never their content) and a final SessionTransition that outlives it."""
    import hashlib

    from vault.models import DeletionAudit

    from .models import SessionArchive

    with transaction.atomic():
        session = Session.objects.select_for_update().select_related("agent").get(pk=session.pk)
        archive = SessionArchive.objects.filter(session=session).first()
        if archive is not None:
            text, count = archive.text, archive.message_count
            digest = hashlib.sha256(bytes(archive.payload)).hexdigest()
        else:
            texts = list(
                Message.objects.filter(session=session).order_by("id").values_list("text", flat=True)
            )
            text, count = "\n".join(texts), len(texts)
            digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
        now = timezone.now()
        DeletionAudit.objects.create(
            project_id=session.project_id,
            agent_slug=session.agent.slug,
            kind="session",
            object_id=session.pk,
            category=session.status,
            reason=DeletionAudit.Reason.PURGE,
            criteria={"reason": reason, "messages": count, "external_id": session.external_id},
            content_sha256=digest,
            content_chars=len(text),
            item_created_at=session.created_at,
            deleted_by=(by or LIFECYCLE_ACTOR)[:200],
            deleted_at=now,
        )
        transition_record(session=session, to_status=DELETED, reason=reason, by=by)
        Message.objects.filter(session=session).update(parent=None)
        session.delete()


def lifecycle_run(*, now: datetime | None = None) -> dict:
    """One pass of the session lifecycle (the scheduled task): active sessions without activity for
    MEMORY_SESSION_IDLE_MINUTES become idle (and their extraction is queued, trigger "quiet"); sessions
    inactive for MEMORY_SESSION_ARCHIVE_DAYS are archived; archived sessions inactive for
    MEMORY_SESSION_RETENTION_DAYS (0 = never) are deleted. One session failing does not stop the rest."""
    from datetime import timedelta

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
                session = Session.objects.select_for_update().select_related("agent").get(pk=session_id)
                if session.status != SessionStatus.ACTIVE or session.last_activity_at >= idle_cutoff:
                    continue
                _status_set(
                    session,
                    SessionStatus.IDLE,
                    reason=f"no activity for {settings.MEMORY_SESSION_IDLE_MINUTES} minutes",
                )
                vault_services.extraction_enqueue(
                    agent=session.agent, session_id=session.pk, trigger_source="quiet"
                )
                counts["idle"] += 1
        except Exception:
            logger.exception("lifecycle: marking session %s idle failed", session_id)
            counts["errors"] += 1
    archive_cutoff = now - timedelta(days=settings.MEMORY_SESSION_ARCHIVE_DAYS)
    for session in list(
        Session.objects.exclude(status=SessionStatus.ARCHIVED).filter(last_activity_at__lt=archive_cutoff)
    ):
        try:
            session_archive(
                session=session, reason=f"no activity for {settings.MEMORY_SESSION_ARCHIVE_DAYS} days"
            )
            counts["archived"] += 1
        except Exception:
            logger.exception("lifecycle: archiving session %s failed", session.pk)
            counts["errors"] += 1
    days = settings.MEMORY_SESSION_RETENTION_DAYS
    if days:
        delete_cutoff = now - timedelta(days=days)
        for session in list(
            Session.objects.filter(status=SessionStatus.ARCHIVED, last_activity_at__lt=delete_cutoff)
        ):
            try:
                session_delete(session=session, reason=f"retention: no activity for {days} days")
                counts["deleted"] += 1
            except Exception:
                logger.exception("lifecycle: deleting session %s failed", session.pk)
                counts["errors"] += 1
    return counts
