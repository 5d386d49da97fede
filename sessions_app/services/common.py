"""What every write of a session shares: locks, checked message input, creating, finding and locking a
session, its status transitions, and running a side task whose failure must not fail the write."""

import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput, TooLarge
from memoryproject.resilience import failure_detail, guarded
from memoryproject.row_read import row_first
from memoryproject.timestamps import earliest_check, shown, stored
from sessions_app import selectors
from sessions_app.models import Branch, Role, Session, SessionStatus, SessionTransition
from vault.models import Agent
from vault.text import CONTROL_CHARACTERS_RULE, control_characters_in, text_check

logger = logging.getLogger(__name__)


DEFAULT_SUMMARISER = "sessions_app.compaction.heuristic_summary"

MAIN_BRANCH = "main"
ROLE_ALIASES = {"agent": Role.ASSISTANT, "human": Role.USER}
MEMORY_FILE = "MEMORY.md"
MEMORY_FILE_HEADER = "# MEMORY.md\n\n"
WAL_TAG = "wal"
REPLY_CONTEXT_CHARS = 300


def reply_context(text: str | None) -> str:
    """The part of the previous turn stored with a message for search (its end: what is answered).
    Every writer of a message row derives it so: an append, an import, a restore from an archive."""
    text = " ".join((text or "").split())
    return text if len(text) <= REPLY_CONTEXT_CHARS else text[-REPLY_CONTEXT_CHARS:]


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
    # Set by message_input_check when the timestamp sent was later than the clock (stored as received):
    # the warning the reply carries for it, if the message is stored.
    warning: dict | None = None


def session_label_check(name: str, value: str | None, *, controls: bool = True) -> None:
    """A chat id or model id stored on a session or checkpoint: at most 200 characters, no NUL (which
    PostgreSQL text cannot hold: its refusal named nothing), and no control characters, the rule of
    names shown in listings (vault.text.control_characters_in), as a new session's key and a branch
    name. `controls=False` for a session key that may name a session stored before that rule, which is
    still found by it (session_key_new_check holds new ones to it)."""
    if len(value or "") > 200:
        raise InvalidInput(f"{name} must be at most 200 characters", [{"loc": [name], "msg": "too long"}])
    if "\x00" in (value or ""):
        raise InvalidInput(
            f"{name} must not contain NUL (\\u0000) characters",
            [{"loc": [name], "msg": "contains NUL characters"}],
        )
    if controls and control_characters_in(value or ""):  # shown raw on the session pages and exports
        raise InvalidInput(
            f"Invalid input: {name}: {CONTROL_CHARACTERS_RULE}",
            [{"loc": [name], "msg": CONTROL_CHARACTERS_RULE}],
        )


def message_input_check(raw: MessageInput | dict, index: int) -> MessageInput:
    """One message (the `index`th of a call) checked and normalised against the rules every stored
    message meets: role, text (characters, MEMORY_MAX_MESSAGE_BYTES), ids, tool calls and state. Raises
    the InvalidInput or TooLarge the whole call fails with; an import checks each message first, so that
    one message breaking them is skipped alone."""
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
        exc.errors = [{**error, "loc": [*loc, *error.get("loc", [])]} for error in exc.errors]
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
    if isinstance(item.created_at, datetime):
        try:
            sent = earliest_check(item.created_at)
        except ValueError as exc:
            raise invalid(f"timestamp {exc}", "timestamp") from None
        item.created_at = stored(sent)
        if item.created_at != sent:
            item.warning = {
                "source": "timestamp",
                "loc": [*loc, "timestamp"],
                "detail": f"messages[{index}]: timestamp {shown(sent)} is later than the server's clock; "
                f"stored as the time it was received, {shown(item.created_at)}",
            }
    _message_size_check(item, index)
    item.role = role
    return item


# A NUL in JSON text: the escape \u0000 after an even number of backslashes (the others are escaped ones).
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _message_size_check(item: MessageInput, index: int) -> None:
    """The text, tool calls and state of one message count together against MEMORY_MAX_MESSAGE_BYTES:
    any of them can carry a large payload, and all of them are stored and read back."""
    try:
        # allow_nan=False: Python's json and the SDK's parser read NaN and Infinity, which no JSON holds
        # (PostgreSQL's jsonb refused them, failing the whole batch with a message naming no message).
        extra = json.dumps([item.tool_calls, item.state], ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            f"messages[{index}]: tool_calls or state contains invalid Unicode (lone surrogates)",
            [{"loc": ["messages", index, "tool_calls"], "msg": "invalid unicode"}],
        ) from None
    except ValueError as exc:
        if "Out of range float" in str(exc):
            raise InvalidInput(
                f"messages[{index}]: every number in tool_calls and state must be a finite number "
                "(NaN and Infinity are not JSON)",
                [{"loc": ["messages", index, "tool_calls"], "msg": "not a finite number"}],
            ) from None
        raise InvalidInput(
            f"messages[{index}]: tool_calls or state cannot be stored as JSON: {exc}",
            [{"loc": ["messages", index, "tool_calls"], "msg": "not JSON"}],
        ) from None
    text = extra.decode("utf-8")
    if "\\u0000" in text and _JSON_NUL.search(text):
        # PostgreSQL's jsonb stores no NUL character, in a key or a value.
        raise InvalidInput(
            f"messages[{index}]: tool_calls and state must not contain NUL (\\u0000) characters",
            [{"loc": ["messages", index, "tool_calls"], "msg": "contains NUL characters"}],
        )
    size = len(item.text.encode("utf-8")) + len(extra)
    limit = settings.MEMORY_MAX_MESSAGE_BYTES
    if size > limit:
        raise TooLarge(
            f"messages[{index}]: text, tool_calls and state together are {size} bytes; the limit is "
            f"{limit} bytes (MEMORY_MAX_MESSAGE_BYTES).",
            [{"loc": ["messages", index], "msg": "too large"}],
        )


# --- sessions ------------------------------------------------------------------------------------


def session_key_new_check(key: str) -> None:
    """A new session's chat id: no control characters, as a file's path (a newline, an escape sequence
    or a right-to-left override was stored and shown raw on the session pages, in exports and in every
    listing). Checked only where a session is created: a session stored with one before is still found,
    written to and closed by its key."""
    if control_characters_in(key):
        raise InvalidInput(
            f"Invalid input: session: {CONTROL_CHARACTERS_RULE}",
            [{"loc": ["session"], "msg": CONTROL_CHARACTERS_RULE}],
        )


def _session_create(agent: Agent, *, external_id: str = "", model_id: str = "") -> Session:
    session_key_new_check(external_id)
    session = Session.objects.create(
        project_id=agent.project_id, agent=agent, external_id=external_id, model_id=model_id
    )
    branch = Branch.objects.create(session=session, name=MAIN_BRANCH)
    session.active_branch = branch
    session.save(update_fields=["active_branch"])
    return session


OPEN_STATUSES = (SessionStatus.ACTIVE, SessionStatus.IDLE)


def _session_lock(session: Session) -> tuple[Session, Branch]:
    """Lock the session row (appends, checkouts and compaction of one session run one at a time) and
    return it with its active branch, creating "main" for sessions made before branches existed."""
    return _session_with_branch(Session.objects.select_for_update().get(pk=session.pk))


def _session_lock_if_open(session: Session) -> tuple[Session, Branch] | None:
    """As `_session_lock`, but None when the session is no longer open (closed or archived since the
    caller found it), and then not locked: the caller finds the session to write to again.

    The status is a condition of the locking statement: a row that is not open is not locked (one a
    writer changes meanwhile is read again once its lock is released, and left unlocked if it closed),
    so no savepoint is needed to release it, two round trips an append saved."""
    locked = Session.objects.select_for_update().filter(pk=session.pk, status__in=OPEN_STATUSES).first()
    if locked is None:
        Session.objects.get(pk=session.pk)  # deleted since it was found: Session.DoesNotExist, as before
        return None
    return _session_with_branch(locked)


def _session_not_archived_check(session: Session) -> None:
    """An archived session's messages are in cold storage: a write that reads or extends its
    conversation is refused until it is restored."""
    if session.status == SessionStatus.ARCHIVED:
        raise Conflict(
            "The session is archived: restore it first (POST /agents/{agent}/sessions/{id}/restore)."
        )


def _session_with_branch(session: Session) -> tuple[Session, Branch]:
    _session_not_archived_check(session)
    # Read after the session's lock is held, in a statement of its own: read with the session (a join),
    # the branch row was the one the statement's snapshot saw before the lock was granted, and a head a
    # forget had just moved was stale (the append hung its messages from an erased one).
    branch = row_first(Branch, "id = %s", [session.active_branch_id]) if session.active_branch_id else None
    if branch is not None:
        session.active_branch = branch  # cached: the append's answer names it
    else:
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
    # The name may be taken by a branch made by hand (or cut at 100 characters into another's): that
    # one kept nothing, so the next free name is used, the id always kept whole.
    for attempt in range(1, 1_000_000):
        suffix = f"-{old_head}" if attempt == 1 else f"-{old_head}-{attempt}"
        name = branch.name[: 100 - len(suffix)] + suffix
        saved = Branch.objects.filter(session=session, name=name).first()
        if saved is None:
            return Branch.objects.create(
                session=session, name=name, head_id=old_head, from_message_id=old_head
            )
        if saved.head_id == old_head:
            return saved
    raise Conflict(f"No free name for a branch keeping message {old_head}.")


# --- resilience ---------------------------------------------------------------------------------


def _guarded(warnings: list[dict], source: str, work, default=None):
    """Run one optional step in a savepoint: a failure is logged and reported in `warnings`, and what it
    wrote is rolled back, so appends and context injection never fail because one source failed."""
    return guarded(
        source,
        work,
        failed=lambda exc: warnings.append({"source": source, "detail": failure_detail(exc)}),
        default=default,
    )


# --- lifecycle ----------------------------------------------------------------------------------

LIFECYCLE_ACTOR = "lifecycle"
DELETED = "deleted"


def transition_record(*, session: Session, to_status: str, reason: str, by: str = "", from_status: str = ""):

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
