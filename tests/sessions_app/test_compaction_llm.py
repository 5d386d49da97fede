"""The LLM compaction summariser: what it is sent (within LLM_MAX_INPUT_TOKENS) and which answers it
keeps."""

import json
import re

import pytest

from memoryproject.llm import prompt_tokens
from sessions_app import services
from sessions_app.compaction import EARLIER_HEADING, SUMMARY_PREFIX, summary_cut
from sessions_app.models import Session
from tests.fake_llm import completion
from vault.text import token_estimate

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


def test_a_summary_cut_at_max_tokens_is_not_used(agent_a, fake_llm):
    """llm_chat did not look at finish_reason: a summary the model stopped at max_tokens, cut
    mid-sentence, replaced the messages it summarised. It now falls back to the heuristic summary, as
    the summariser does when the LLM fails."""
    fake_llm.reply_raw(json.dumps(completion("The user is migrating the ledger to Postg", "length")))
    result = _compact(agent_a, [f"step {i}: {PADDING}" for i in range(6)] + ["what next?"])
    assert result.compacted and "migrating the ledger" not in result.summary.text
    assert "6 earlier messages" in result.summary.text


def test_a_summary_of_the_length_asked_is_stored_whole(agent_a, fake_llm, settings):
    """The model was asked for three quarters of a word a summary token (225 words for 300 tokens,
    about 1,400 bytes of English) while the summary is kept to 4 bytes a token (1,200 bytes): a summary
    of the length asked was cut mid-sentence. Its max_tokens (600) was under LLM_MAX_TOKENS too, with a
    cut answer now thrown away."""
    sentence = "The team moved the ledger tables to PostgreSQL and checked every row twice. "

    def summary(request):
        words = int(re.search(r"at most (\d+) words", request["messages"][0]["content"]).group(1))
        return " ".join((sentence * words).split()[:words])

    fake_llm.reply_within_budget(summary)
    result = _compact(agent_a, [f"step {i}: {PADDING}" for i in range(6)] + ["what next?"])
    body = result.summary.text.removeprefix(f"{SUMMARY_PREFIX}\n")
    assert body == summary(fake_llm.requests[0]["json"])
    assert token_estimate(body) <= settings.MEMORY_COMPACT_SUMMARY_TOKENS
    assert fake_llm.requests[0]["json"]["max_tokens"] >= settings.LLM_MAX_TOKENS


def test_a_summary_over_the_cap_is_cut_after_its_last_whole_sentence(agent_a, settings):
    settings.MEMORY_COMPACT_SUMMARY_TOKENS = 30
    long = (
        "The user wants the ledger on PostgreSQL. " * 2 + "Next, the billing events go to Kafka with retries."
    )
    services.messages_append(
        agent=agent_a, messages=[{"role": "user", "text": f"step {i}"} for i in range(6)]
    )
    result = services.session_compact(
        session=Session.objects.get(agent=agent_a),
        force=True,
        keep_first=0,
        keep_turns=1,
        summariser=lambda m: long,
    )
    body = result.summary.text.removeprefix(f"{SUMMARY_PREFIX}\n")
    assert body == "The user wants the ledger on PostgreSQL. The user wants the ledger on PostgreSQL."
    assert summary_cut("x" * 200, 120) == "x" * 117 + "..."


@pytest.mark.parametrize(
    "answer",
    ["The user\x00 migrates the ledger.", "The user \ud800 migrates the ledger."],
    ids=["nul", "surrogate"],
)
def test_a_summary_postgresql_cannot_store_is_not_used(agent_a, fake_llm, api, token_a, settings, answer):
    """A model's summary holding a NUL or a lone surrogate (JSON's "\\ud800") went to the INSERT of the
    summary message: the compaction request answered 500 (the scheduled trim failed the same way every
    run) and the session was never compacted. Now the heuristic summary is used, as for a failed call."""
    settings.MEMORY_COMPACT_KEEP_FIRST, settings.MEMORY_COMPACT_KEEP_TURNS = 0, 1
    fake_llm.reply_raw(json.dumps(completion(answer)))
    texts = [f"step {i}: {PADDING}" for i in range(6)] + ["what next?"]
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "text": t} for i, t in enumerate(texts)]
    services.messages_append(agent=agent_a, messages=messages, session_key="long")
    session = Session.objects.get(agent=agent_a)
    response = api.post(f"/agents/{agent_a.slug}/sessions/long/compact", {"force": True}, token=token_a)
    assert response.status_code == 200, response.content
    assert response.json()["compacted"] is True
    summary = Session.objects.get(pk=session.pk).messages.get(internal=True, archived=False).text
    assert "migrates the ledger" not in summary and "earlier messages" in summary
