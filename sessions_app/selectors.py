"""Reads of short-term memory. Tenancy is enforced here: the API passes the Principal asking."""

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from memoryproject.errors import NotFound
from vault.models import Agent
from vault.principal import Principal
from vault.selectors import MAX_ID, agent_get_for_principal

from .compaction import SUMMARY_STATE_KEY, message_tokens
from .models import Branch, Checkpoint, Message, Session, SessionStateEntry, SessionStatus

_PATH_SQL = """
WITH RECURSIVE path(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM sessions_app_message WHERE id = %s
    UNION ALL
    SELECT m.id, m.parent_id, p.depth + 1
    FROM sessions_app_message m JOIN path p ON m.id = p.parent_id
    WHERE p.depth < %s
)
SELECT id FROM path ORDER BY depth DESC
"""

PATH_MAX_DEPTH = 10_000_000


def message_path_ids(head_id: int | None, *, max_depth: int = PATH_MAX_DEPTH) -> list[int]:
    """Ids from the root (or `max_depth` messages back) down to `head_id`, oldest first."""
    if head_id is None:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_PATH_SQL, [head_id, max_depth])
        return [row[0] for row in cursor.fetchall()]


def message_path(head_id: int | None, *, max_depth: int = PATH_MAX_DEPTH) -> list[Message]:
    """The messages from the root down to `head_id`, oldest first."""
    ids = message_path_ids(head_id, max_depth=max_depth)
    by_id = Message.objects.in_bulk(ids)
    return [by_id[i] for i in ids if i in by_id]


def session_head_id(session: Session) -> int | None:
    """The message the session's active branch points to (None for an empty session)."""
    if session.active_branch_id is None:
        return None
    return Branch.objects.filter(pk=session.active_branch_id).values_list("head_id", flat=True).first()


def session_conversation(session: Session, *, active_only: bool = False) -> list[Message]:
    """The conversation: the path from the active branch's head back to the root, oldest first.

    With `active_only`, messages archived by compaction are left out (the compaction summary that
    replaced them is kept), which is what goes into a model's context window.
    """
    messages = message_path(session_head_id(session))
    if active_only:
        messages = [m for m in messages if not m.archived]
    return messages


def session_current(agent: Agent) -> Session | None:
    """The agent's most recently active open session."""
    return (
        Session.objects.filter(agent=agent, status__in=[SessionStatus.ACTIVE, SessionStatus.IDLE])
        .order_by("-last_activity_at", "-id")
        .first()
    )


def session_find(agent: Agent, key: str | None) -> Session | None:
    """A session of the agent by external chat id, then by numeric id; the current one when key is empty
    or "current"."""
    if not key or key == "current":
        return session_current(agent)
    session = Session.objects.filter(agent=agent, external_id=key).first()
    if session is None and key.isdigit() and 1 <= int(key) <= MAX_ID:
        session = Session.objects.filter(agent=agent, pk=int(key)).first()
    return session


def session_get_for_principal(
    principal: Principal, agent: str | Agent, session_id: str | int | None
) -> Session:
    """The agent's session named by chat id, numeric id or "current", if the principal may see the agent;
    NotFound otherwise."""
    slug = agent.slug if isinstance(agent, Agent) else agent
    target = agent_get_for_principal(principal, slug)
    if isinstance(agent, Agent) and agent.pk != target.pk:
        raise NotFound(f"Agent {slug!r} not found.")
    session = session_find(target, None if session_id is None else str(session_id))
    if session is None:
        raise NotFound(f"Session {session_id or 'current'!r} of agent {slug!r} not found.")
    return session


def sessions_for_agent(agent: Agent) -> QuerySet[Session]:
    """The agent's sessions, most recently active first: the agent -> chat id map of seed 000."""
    return Session.objects.filter(agent=agent).order_by("-last_activity_at", "-id")


def messages_window(
    messages: list[Message],
    *,
    order: str = "asc",
    limit: int | None = None,
    offset: int = 0,
    max_tokens: int | None = None,
) -> list[Message]:
    """Seed 003's list(): order, offset and limit, then, with `max_tokens`, the newest of those messages
    that fit the budget. The result keeps the requested order (asc = chronological)."""
    ordered = list(messages) if order == "asc" else list(reversed(messages))
    selected = ordered[offset:] if limit is None else ordered[offset : offset + limit]
    if max_tokens is None:
        return selected
    chronological = selected if order == "asc" else list(reversed(selected))
    kept: list[Message] = []
    used = 0
    for message in reversed(chronological):
        cost = message_tokens(message)
        if used + cost > max_tokens:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    return kept if order == "asc" else list(reversed(kept))


def checkpoint_get_valid(agent: Agent) -> Checkpoint | None:
    """The agent's latest checkpoint if it is younger than MEMORY_CHECKPOINT_DAYS (seed 000's recover)."""
    checkpoint = Checkpoint.objects.filter(agent=agent).first()
    if checkpoint is None or timezone.now() >= checkpoint.valid_until:
        return None
    return checkpoint


def branches_list(session: Session) -> list[dict]:
    """Seed 003's listBranches: name, created, from message, message count (path length), active."""
    result = []
    for branch in Branch.objects.filter(session=session).select_related("from_message"):
        result.append(
            {
                "name": branch.name,
                "created_at": branch.created_at,
                "from_message": branch.from_message_id,
                "from_client_id": branch.from_message.client_id if branch.from_message else "",
                "head": branch.head_id,
                "message_count": len(message_path_ids(branch.head_id)),
                "active": branch.pk == session.active_branch_id,
            }
        )
    return result


def message_find(session: Session, ref: str) -> Message | None:
    """A message of the session by client id, then by numeric id."""
    message = Message.objects.filter(session=session, client_id=ref).exclude(client_id="").first()
    if message is None and ref.isdigit() and 1 <= int(ref) <= MAX_ID:
        message = Message.objects.filter(session=session, pk=int(ref)).first()
    return message


def session_state_list(session: Session) -> QuerySet[SessionStateEntry]:
    return SessionStateEntry.objects.filter(session=session).order_by("created_at", "id")


def session_state_markdown(entries) -> str:
    """Seed 002's SESSION-STATE.md rendering of the write-ahead scan entries."""
    lines = ["# SESSION-STATE.md -- Active Working Memory", ""]
    for entry in entries:
        stamp = timezone.localtime(entry.created_at).isoformat(timespec="seconds")
        lines.append(f"- [{stamp}] **{entry.category}**: {entry.text}")
    return "\n".join(lines) + "\n"


def is_compaction_summary(message: Message) -> bool:
    return bool(isinstance(message.state, dict) and message.state.get(SUMMARY_STATE_KEY))


def conversation_tokens(messages: list[Message]) -> int:
    return sum(message_tokens(m, tool_max_chars=settings.MEMORY_TOOL_RESULT_MAX_CHARS) for m in messages)
