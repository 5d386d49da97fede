"""Checkpoints, handoffs and closing a session (its decisions and lessons distilled into the vault)."""

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryproject.errors import InvalidInput, NotFound
from sessions_app import selectors
from sessions_app.maintenance.extraction import extraction_enqueue, insight_sources
from sessions_app.models import Checkpoint, Message, Role, Session, SessionStatus
from sessions_app.services.append import AppendResult, messages_append
from sessions_app.services.common import (
    MessageInput,
    _guarded,
    _session_lock,
    _session_not_archived_check,
    _status_set,
    message_input_check,
    session_label_check,
)
from vault import services as vault_services
from vault.models import Agent, EntrySource, VaultEntry
from vault.redaction import redact_for_project
from vault.text import text_check, text_clip

logger = logging.getLogger(__name__)


# --- checkpoints, handoffs, close ---------------------------------------------------------------


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
    session_label_check("chat_id", chat_id)
    session_label_check("model_id", model_id)
    with transaction.atomic():
        if session is not None:  # the session first, then the checkpoint, as sleep takes them
            session = Session.objects.select_for_update().get(pk=session.pk)
        return _checkpoint_write(agent, messages, session, chat_id, model_id)


def _checkpoint_write(
    agent: Agent,
    messages: Sequence[MessageInput | dict] | None,
    session: Session | None,
    chat_id: str,
    model_id: str,
) -> Checkpoint:
    if messages is not None:
        items = [message_input_check(raw, index) for index, raw in enumerate(messages)]
        kept = [
            {"role": i.role, "text": redact_for_project(i.text, agent.project_id)}
            for i in items
            if not i.internal
        ]
    elif session is not None:
        _session_not_archived_check(session)  # else an empty checkpoint replaced the saved one
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
    """The handoff: the last MEMORY_HANDOFF_MESSAGES user/agent messages as "[User]: text" or
    "[Agent]: text", each on one line and cut to MEMORY_HANDOFF_MESSAGE_CHARS characters (text_clip,
    unmarked: never inside a character as a reader sees it)."""
    chat = [m for m in messages if m.role in (Role.USER, Role.ASSISTANT) and m.text.strip()]
    lines = []
    for message in chat[-settings.MEMORY_HANDOFF_MESSAGES :]:
        label = "User" if message.role == Role.USER else "Agent"
        lines.append(f"[{label}]: {text_clip(message.text, settings.MEMORY_HANDOFF_MESSAGE_CHARS, mark='')}")
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
    """The sleep: store the final messages (as a full-conversation save, so nothing is dropped),
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
            handoff = vault_services.handoff_store(
                agent=agent,
                content=handoff_text,
                tags=["auto-handoff", "session-close"],
                source=EntrySource.EXTRACTION,
                created_by=changed_by,
                source_session_id=session.pk,
                source_message_ids=_handoff_message_ids(conversation),
            )
        chat = [m for m in conversation if m.role in (Role.USER, Role.ASSISTANT)]
        insights, _ = vault_services.insights_store(
            agent=agent,
            texts=[m.text for m in chat],
            tags=["auto-extract", "session-close", f"session-{session.pk}"],
            source=EntrySource.EXTRACTION,
            created_by=changed_by,
            source_session_id=session.pk,
            source_messages=lambda: insight_sources(chat),
        )
        decisions = [entry for entry in insights if entry.category == "decisions"]
        lessons = [entry for entry in insights if entry.category == "lessons"]
        session.closed_at = timezone.now()
        session.save(update_fields=["closed_at"])
        _status_set(session, SessionStatus.CLOSED, reason="sleep", by=changed_by)
        _guarded(
            [],
            "extraction_enqueue",
            lambda: extraction_enqueue(agent=agent, session_id=session.pk, trigger_source="close"),
        )
    return CloseResult(session, checkpoint, handoff, decisions, lessons, appended)
