"""The exchange log of an append: each finished user -> assistant exchange of its new messages written to
the agent's daily note."""

from django.conf import settings
from django.utils import timezone

from sessions_app import selectors
from sessions_app.models import Message, Role
from vault import services as vault_services
from vault.models import Agent
from vault.redaction import project_redaction_enabled, redact
from vault.text import ASCII_CUT, text_clip

EXCHANGE_LOOKBACK = 50  # how far back, before an append, the user side of its first exchange is looked for


def _is_turn_end(message: Message) -> bool:
    """An agent's reply that ends the user side of the next exchange (internal ones are skipped)."""
    return message.role == Role.ASSISTANT and not message.internal


def _exchange_lookback(new_messages: list[Message]) -> list[Message]:
    """The stored messages before `new_messages` that the user side of their first exchange can reach.

    Only the append's first agent reply looks back past the append (every later one stops at it), and
    only as far as the previous agent reply: so nothing when that first reply is empty (not logged),
    the parent alone when it is an agent's reply (the usual case: the previous append ended with one),
    else the path up to EXCHANGE_LOOKBACK messages back."""
    first_reply = next(m for m in new_messages if _is_turn_end(m))
    parent_id = new_messages[0].parent_id
    if parent_id is None or not first_reply.text.strip():
        return []
    parent = new_messages[0].parent  # loaded by _rows_store
    if parent is not None and _is_turn_end(parent):
        return [parent]
    return selectors.message_path(parent_id, max_depth=EXCHANGE_LOOKBACK)


def _daily_notes_append(*, agent: Agent, new_messages: list[Message], changed_by: str) -> None:
    """Append each finished user -> assistant exchange to the daily note of the assistant's date.

    The user side is every user message since the previous assistant message on the path (looked up
    in the stored conversation when the exchange began in an earlier call).
    """
    if not any(_is_turn_end(m) for m in new_messages):
        return
    lookback = _exchange_lookback(new_messages)
    # This append's texts were redacted before they were stored; the stored ones before it are redacted
    # again here, in case the project switched redaction on since (only when one of them is logged).
    earlier = {m.pk for m in lookback if m.role == Role.USER and not m.internal}
    redacting = bool(earlier) and project_redaction_enabled(agent.project_id)
    path = lookback + new_messages
    first_new = len(lookback)
    max_chars = settings.MEMORY_DAILY_NOTE_CHARS
    blocks = []
    for index in range(first_new, len(path)):
        message = path[index]
        if not _is_turn_end(message) or not message.text.strip():
            continue
        user_texts = []
        for previous in reversed(path[:index]):
            if previous.internal or previous.role in (Role.TOOL, Role.SYSTEM):
                continue
            if _is_turn_end(previous):
                break
            user_texts.append(
                redact(previous.text) if redacting and previous.pk in earlier else previous.text
            )
        if not user_texts:
            continue
        user = " / ".join(
            text_clip(t, max_chars, flatten=False, mark=ASCII_CUT) for t in reversed(user_texts)
        )
        when = timezone.localtime(message.created_at)
        user = text_clip(user, max_chars, flatten=False, mark=ASCII_CUT)
        reply = text_clip(message.text, max_chars, flatten=False, mark=ASCII_CUT)
        blocks.append((message.created_at, f"\n## [{when:%H:%M:%S}]\n**User:** {user}\n**Agent:** {reply}\n"))
    if blocks:
        # The exchanges' texts are stored messages (redacted, clipped), whose words the messages' INSERT
        # already added to the typo vocabulary.
        vault_services.daily_notes_append(
            agent=agent, blocks=blocks, changed_by=changed_by, words_known=True, redacted=True
        )
