"""The context window: compaction of long sessions into a summary, and the working buffer."""

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from memoryproject.copy_rows import rows_create
from memoryproject.errors import DomainError, InvalidInput
from memoryproject.llm import llm_configured
from sessions_app import recovery, selectors
from sessions_app.compaction import (
    SUMMARY_PREFIX,
    SUMMARY_STATE_KEY,
    Summariser,
    compaction_plan,
    heuristic_summary,
    llm_summary,
    summary_cut,
    tool_result_truncate,
)
from sessions_app.models import Message, Role, Session, WorkingBufferEntry
from sessions_app.services.common import DEFAULT_SUMMARISER, _session_lock
from vault.text import ASCII_CUT, text_check, text_clip

logger = logging.getLogger(__name__)


# --- context window management ------------------------------------------------------------------


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
    """The configured summariser (MEMORY_COMPACT_SUMMARISER, checked at start by
    sessions_app.checks); the heuristic one if that cannot load all the same."""
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


def _summary_body(plan, summarise: Summariser) -> tuple[str, bool]:
    """The summary of the planned middle of the conversation; the heuristic one when the summariser
    fails or says nothing. Called with no lock held: an LLM takes seconds to a minute. The flag says
    whether the heuristic wrote it (it quotes the messages line by line, so a forget can take a
    message's lines out; any other summary is rebuilt without it)."""
    heuristic = summarise is heuristic_summary
    try:
        summary_body = summarise(plan.summarise)
    except Exception:
        logger.exception("summariser failed; using the heuristic summary")
        summary_body = heuristic_summary(plan.summarise)
        heuristic = True
    if not isinstance(summary_body, str):
        logger.warning("summariser answered %s, not text; using the heuristic summary", type(summary_body))
        summary_body = ""
    try:
        # A model can answer a NUL or a lone surrogate (JSON's "\ud800"), which PostgreSQL cannot store:
        # the compaction failed with a 500 (or a failed step, every run) and the session was never compacted.
        text_check(summary_body, field="summary", allow_empty=True, max_bytes=sys.maxsize)
    except DomainError as exc:
        logger.warning("summariser's summary cannot be stored (%s); using the heuristic summary", exc.detail)
        summary_body = ""
    if not summary_body.strip():
        summary_body, heuristic = heuristic_summary(plan.summarise), True
    # Cut in token_estimate's unit, UTF-8 bytes, so that a CJK summary keeps to its tokens too.
    return summary_cut(summary_body.strip(), settings.MEMORY_COMPACT_SUMMARY_TOKENS * 4), heuristic


def _plan_applies(plan, active: Sequence[Message]) -> bool:
    """Whether the planned conversation is still how the active one begins: only messages appended
    since (kept, after the recent ones) are allowed. A compaction of the same messages, a checkout or a
    diverging save since the plan was made means the summary no longer fits where it would go."""
    planned = [m.pk for m in (*plan.keep_first, *plan.summarise, *plan.keep_recent)]
    return [m.pk for m in active[: len(planned)]] == planned


def _summary_insert(session: Session, plan, summary_body: str, *, emergency: bool, heuristic: bool):
    """Archive the planned middle of the conversation and put its summary in the tree in its place,
    just before the kept recent messages; returns the summary message and the archived ids."""
    archived_ids = [m.pk for m in plan.summarise]
    Message.objects.filter(pk__in=archived_ids).update(archived=True)
    summary = Message.objects.create(
        project_id=session.project_id,
        agent_id=session.agent_id,
        session=session,
        parent_id=plan.summarise[-1].pk,
        role=Role.USER,
        text=f"{SUMMARY_PREFIX}\n{summary_body}",
        internal=True,
        state={SUMMARY_STATE_KEY: {"replaces": archived_ids, "emergency": emergency, "heuristic": heuristic}},
        created_at=timezone.now(),
    )
    Message.objects.filter(pk=plan.keep_recent[0].pk).update(parent_id=summary.pk)
    recovery.context_bound_clear([session.pk])  # a summary may outweigh what it replaced
    return summary, archived_ids


COMPACT_ATTEMPTS = 2  # plans summarised; a conversation that changed under each is left as it is
CHANGED_MEANWHILE = "the conversation changed while it was being summarised; nothing was compacted, try again"


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
    the middle with one `user` message prefixed with SUMMARY_PREFIX (a user message, so old
    input is never raised to system level). Emergency mode keeps only the last
    MEMORY_COMPACT_EMERGENCY_TURNS turns and summarises without the LLM.

    Nothing is deleted: the replaced messages are marked archived and stay stored and searchable; the
    summary is inserted in the tree just before the kept recent messages.

    The summariser runs with no lock held, so appends to the session do not wait for it. The summary is
    applied under the session's lock only if the messages it summarised still begin the active
    conversation as planned (messages appended meanwhile stay after the kept ones); otherwise the
    compaction looks again (the conversation may be under the threshold by then, compacted by another
    run), and after COMPACT_ATTEMPTS plans that changed under it, returns `compacted: false` saying so.
    """
    max_input_tokens = max_input_tokens or settings.MEMORY_MODEL_MAX_INPUT_TOKENS
    trigger_ratio = settings.MEMORY_COMPACT_TRIGGER_RATIO if trigger_ratio is None else trigger_ratio
    if max_input_tokens < 1 or not 0 < trigger_ratio <= 1:
        raise InvalidInput("max_input_tokens must be positive and trigger_ratio in (0, 1].")
    threshold = int(max_input_tokens * trigger_ratio)
    for _ in range(COMPACT_ATTEMPTS):
        with transaction.atomic():
            session, _branch = _session_lock(session)  # held only while the plan is read
            active = selectors.session_conversation(session, active_only=True)
        before = selectors.conversation_tokens(active)
        if not (force or emergency or before > threshold):
            return CompactResult(
                False, "under the threshold", before, before, threshold, context=context_render(active)
            )
        if emergency:
            plan = compaction_plan(active, keep_first=0, keep_turns=settings.MEMORY_COMPACT_EMERGENCY_TURNS)
        else:
            plan = compaction_plan(
                active,
                keep_first=settings.MEMORY_COMPACT_KEEP_FIRST if keep_first is None else keep_first,
                keep_turns=settings.MEMORY_COMPACT_KEEP_TURNS if keep_turns is None else keep_turns,
            )
        if not plan.summarise or not plan.keep_recent:
            return CompactResult(
                False, "nothing to compact", before, before, threshold, context=context_render(active)
            )
        summary_body, heuristic = _summary_body(
            plan, heuristic_summary if emergency else summariser or summariser_default()
        )
        with transaction.atomic():
            session, _branch = _session_lock(session)
            active = selectors.session_conversation(session, active_only=True)
            if not _plan_applies(plan, active):
                continue
            before = selectors.conversation_tokens(active)
            summary, archived_ids = _summary_insert(
                session, plan, summary_body, emergency=emergency, heuristic=heuristic
            )
            kept = len(plan.keep_first) + len(plan.summarise)
            after_messages = [*plan.keep_first, summary, *active[kept:]]
            after = selectors.conversation_tokens(after_messages)
        forced = "forced" if force and before <= threshold else "over the threshold"
        return CompactResult(
            True,
            "emergency" if emergency else forced,
            before,
            after,
            threshold,
            summary,
            archived_ids,
            context_render(after_messages),
        )
    before = selectors.conversation_tokens(active)
    return CompactResult(False, CHANGED_MEANWHILE, before, before, threshold, context=context_render(active))


# --- working buffer -----------------------------------------------------------------------------

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
    return text_clip(flat, max_chars, mark=ASCII_CUT)


def max_input_tokens_check(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1000 <= value <= 100_000_000:
        raise InvalidInput(
            "max_input_tokens must be an integer between 1000 and 100000000",
            [{"loc": ["max_input_tokens"], "msg": "out of range"}],
        )
    return value


def _buffer_threshold(session: Session) -> int:
    window = session.max_input_tokens or settings.MEMORY_MODEL_MAX_INPUT_TOKENS
    return int(window * settings.MEMORY_WORKING_BUFFER_RATIO)


def working_buffer_idle(session: Session) -> bool:
    """Whether the session's working buffer has not started and its running bound (already known, no
    SQL) says the conversation is under the threshold: then an append logs nothing."""
    return (
        session.buffer_started_at is None
        and session.context_bytes_bound is not None
        and recovery.session_tokens_upper_bound(session) < _buffer_threshold(session)
    )


def working_buffer_update(*, session: Session, messages: Sequence[Message]) -> list:
    """Log the new exchange in the session's working buffer: activate it when the active context reaches
    MEMORY_WORKING_BUFFER_RATIO of the model window, and once active log every later user message and a
    summary of every agent reply. The caller holds the session row lock."""

    if session.buffer_started_at is None:
        if recovery.session_tokens_upper_bound(session) < _buffer_threshold(session):
            return []  # far from the threshold: no need to load the whole conversation to know it
        status = recovery.buffer_usage(session)
        if status["context_tokens"] < status["threshold_tokens"]:
            return []
        session.buffer_started_at = timezone.now()
        session.save(update_fields=["buffer_started_at"])
    rows = []
    for message in messages:
        if message.internal or not message.text.strip() or selectors.is_compaction_summary(message):
            continue
        if message.role == Role.USER:
            side, text = (
                WorkingBufferEntry.Side.HUMAN,
                text_clip(message.text, BUFFER_USER_CHARS, flatten=False, mark=ASCII_CUT),
            )
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
    return rows_create(rows)
