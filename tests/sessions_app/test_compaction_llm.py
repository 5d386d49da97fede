"""The LLM compaction summariser: what it is sent (within LLM_MAX_INPUT_TOKENS) and which answers it
keeps."""

import pytest

from memoryproject.llm import prompt_tokens
from sessions_app import services
from sessions_app.compaction import EARLIER_HEADING, SUMMARY_PREFIX
from sessions_app.models import Session

pytestmark = pytest.mark.django_db

PADDING = "the migration of the ledger tables to PostgreSQL goes on, table by table, " * 4


def _compact(agent, texts):
    services.messages_append(
        agent=agent,
        messages=[{"role": "user" if i % 2 == 0 else "assistant", "text": t} for i, t in enumerate(texts)],
    )
    return services.session_compact(
        session=Session.objects.get(agent=agent), force=True, keep_first=0, keep_turns=1
    )


def test_a_middle_over_the_input_budget_sends_the_newest_messages(agent_a, fake_llm, settings):
    """The summariser was sent every message it summarises, whole: the middle of a long session (up
    to the agent's own max_input_tokens) went past the model's context and the call failed. Now the
    newest messages that fit LLM_MAX_INPUT_TOKENS are sent, after the heuristic summary of the older."""
    settings.LLM_MAX_INPUT_TOKENS = 1500
    fake_llm.reply("The user is migrating the ledger to PostgreSQL.")
    result = _compact(agent_a, [f"step {i}: {PADDING}" for i in range(40)] + ["what next?"])
    assert (
        result.compacted
        and result.summary.text == f"{SUMMARY_PREFIX}\nThe user is migrating the ledger to PostgreSQL."
    )
    messages = fake_llm.requests[0]["json"]["messages"]
    assert prompt_tokens(messages) <= 1500
    transcript = messages[1]["content"]
    sent = [
        i for i in range(40) if f"User: step {i}: " in transcript or f"Assistant: step {i}: " in transcript
    ]
    assert sent == list(range(40 - len(sent), 40)) and 0 < len(sent) < 40
    earlier = transcript.split(EARLIER_HEADING, 1)[1]
    assert f"{40 - len(sent)} earlier messages" in earlier  # the heuristic summary of the older ones


def test_a_newest_message_over_the_input_budget_is_sent_cut(agent_a, fake_llm, settings):
    settings.LLM_MAX_INPUT_TOKENS = 1500
    fake_llm.reply("A long paste was discussed.")
    result = _compact(agent_a, ["step 0: please read this", "x" * 30000, "what next?"])
    assert result.summary.text.endswith("A long paste was discussed.")
    messages = fake_llm.requests[0]["json"]["messages"]
    assert prompt_tokens(messages) <= 1500
    assert "Assistant: xxxx" in messages[1]["content"] and "x..." in messages[1]["content"]
