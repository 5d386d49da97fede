"""Context window management: the plan, the summary message, emergency mode, tool-result truncation."""

from dataclasses import dataclass, field

import pytest

from sessions_app import selectors, services
from sessions_app.compaction import (
    SUMMARY_PREFIX,
    compaction_plan,
    heuristic_summary,
    tool_result_truncate,
)
from sessions_app.models import Message
from vault.text import token_estimate


@dataclass
class Msg:
    role: str
    text: str
    state: dict = field(default_factory=dict)


def _turns(n: int) -> list[Msg]:
    messages = []
    for i in range(n):
        messages += [Msg("user", f"u{i}"), Msg("assistant", f"a{i}")]
    return messages


# --- truncation ----------------------------------------------------------------------------------


def test_truncation_keeps_70_percent_head_and_20_percent_tail_and_says_how_much_was_cut():
    text = "".join(chr(ord("a") + i % 26) for i in range(20_000))
    result = tool_result_truncate(text, 8000)
    head, marker_and_tail = result.split("\n\n[... ", 1)
    marker, tail = marker_and_tail.split(" ...]\n\n", 1)
    assert head == text[:5600]
    assert tail == text[-1600:]
    assert marker == f"{20_000 - 5600 - 1600} characters truncated"
    assert 12_800 == 20_000 - 5600 - 1600


def test_truncation_leaves_results_within_the_limit_alone():
    assert tool_result_truncate("x" * 8000, 8000) == "x" * 8000
    assert tool_result_truncate("x" * 8001, 8000) != "x" * 8001


# --- plan ----------------------------------------------------------------------------------------


def test_the_plan_keeps_the_first_messages_and_the_last_turns():
    messages = _turns(6)
    plan = compaction_plan(messages, keep_first=2, keep_turns=2)
    assert [m.text for m in plan.keep_first] == ["u0", "a0"]
    assert [m.text for m in plan.summarise] == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert [m.text for m in plan.keep_recent] == ["u4", "a4", "u5", "a5"]


def test_a_turn_includes_its_tool_calls_and_a_summary_is_not_a_turn():
    messages = [
        Msg("user", "u0"),
        Msg("assistant", "a0"),
        Msg("user", SUMMARY_PREFIX, state={"compaction_summary": {}}),
        Msg("user", "u1"),
        Msg("assistant", "call"),
        Msg("tool", "result"),
        Msg("assistant", "a1"),
    ]
    plan = compaction_plan(messages, keep_first=0, keep_turns=1)
    assert [m.text for m in plan.keep_recent] == ["u1", "call", "result", "a1"]
    assert [m.text for m in plan.summarise] == ["u0", "a0", SUMMARY_PREFIX]


def test_a_short_conversation_has_nothing_to_summarise():
    plan = compaction_plan(_turns(2), keep_first=2, keep_turns=2)
    assert plan.summarise == [] and len(plan.keep_recent) == 4


def test_the_heuristic_summary_keeps_facts_decisions_and_requests():
    summary = heuristic_summary(
        [
            Msg("user", "My name is Ana. How do I deploy?"),
            Msg("assistant", "We decided to use blue-green deploys for the API."),
            Msg("tool", "{}"),
        ]
    )
    assert summary.startswith("3 earlier messages (1 from the user, 1 from the agent, 1 tool results)")
    assert "proper_noun: My name is Ana." in summary
    assert "- We decided to use blue-green deploys for the API." in summary
    assert "- My name is Ana. How do I deploy?" in summary
    assert len(heuristic_summary([Msg("user", "word " * 2000)], max_chars=300)) <= 300


# --- service -------------------------------------------------------------------------------------


def _session(agent, turns=6, chars=400):
    messages = []
    for i in range(turns):
        messages += [
            {"role": "user", "text": f"question {i} " + "q" * chars},
            {"role": "assistant", "text": f"answer {i}"},
        ]
    return services.messages_append(agent=agent, messages=messages, session_key="long").session


@pytest.mark.django_db
def test_it_does_not_compact_under_the_trigger_ratio(agent_a):
    session = _session(agent_a, turns=5, chars=100)
    tokens = selectors.conversation_tokens(selectors.session_conversation(session))
    result = services.session_compact(session=session, max_input_tokens=tokens * 2, trigger_ratio=0.5)
    assert result.compacted is False and result.threshold == tokens
    result = services.session_compact(session=session, max_input_tokens=tokens * 2, trigger_ratio=0.49)
    assert result.compacted is True


@pytest.mark.django_db
def test_compaction_replaces_the_middle_with_a_user_summary_and_deletes_nothing(agent_a):
    session = _session(agent_a)
    seen = []

    def summariser(messages):
        seen.extend(m.text[:10] for m in messages)
        return "They talked about questions 1 to 3."

    result = services.session_compact(session=session, max_input_tokens=800, summariser=summariser)
    assert result.compacted
    assert seen == ["question 1", "answer 1", "question 2", "answer 2", "question 3", "answer 3"]
    active = selectors.session_conversation(session, active_only=True)
    assert [m.text[:10] for m in active] == [
        "question 0",
        "answer 0",
        f"{SUMMARY_PREFIX}"[:10],
        "question 4",
        "answer 4",
        "question 5",
        "answer 5",
    ]
    summary = active[2]
    assert summary.role == "user" and summary.internal
    assert summary.text == f"{SUMMARY_PREFIX}\nThey talked about questions 1 to 3."
    assert Message.objects.filter(session=session).count() == 13
    assert Message.objects.filter(session=session, archived=True).count() == 6
    # The whole path still holds every message in order, so nothing is lost for search or branches.
    assert len(selectors.session_conversation(session)) == 13
    # Appending continues after the head as usual.
    services.messages_append(agent=agent_a, messages=[{"role": "user", "text": "next"}], session=session)
    assert selectors.session_conversation(session, active_only=True)[-1].text == "next"


@pytest.mark.django_db
def test_compacting_twice_summarises_the_previous_summary(agent_a):
    session = _session(agent_a, turns=8)
    services.session_compact(session=session, force=True, summariser=lambda m: "first")
    services.messages_append(
        agent=agent_a,
        messages=[{"role": "user", "text": "more"}, {"role": "assistant", "text": "ok"}],
        session=session,
    )
    result = services.session_compact(session=session, force=True, summariser=lambda m: "second")
    assert result.compacted
    active = selectors.session_conversation(session, active_only=True)
    summaries = [m for m in active if m.text.startswith(SUMMARY_PREFIX)]
    assert [s.text.split("\n")[1] for s in summaries] == ["second"]
    assert [m.text[:10] for m in active[-4:]] == ["question 7", "answer 7", "more", "ok"]


@pytest.mark.django_db
def test_emergency_mode_keeps_only_the_last_two_turns_without_the_llm(agent_a):
    session = _session(agent_a)

    def llm(messages):
        raise AssertionError("emergency compaction must not call the LLM")

    result = services.session_compact(session=session, emergency=True, summariser=llm)
    assert result.compacted and result.reason == "emergency"
    active = selectors.session_conversation(session, active_only=True)
    assert [m.role for m in active] == ["user", "user", "assistant", "user", "assistant"]
    assert active[0].text.startswith(SUMMARY_PREFIX)
    assert len(result.archived_ids) == 8


@pytest.mark.django_db
def test_a_failing_summariser_falls_back_to_the_heuristic(agent_a):
    session = _session(agent_a)

    def broken(messages):
        raise RuntimeError("LLM down")

    result = services.session_compact(session=session, force=True, summariser=broken)
    assert result.compacted and "earlier messages" in result.summary.text


@pytest.mark.django_db
def test_a_cjk_summary_is_kept_to_the_summary_tokens(agent_a, settings):
    """The summary was cut to MEMORY_COMPACT_SUMMARY_TOKENS x 4 characters: a CJK summary kept three
    times its tokens."""
    session = _session(agent_a)
    result = services.session_compact(
        session=session, force=True, summariser=lambda m: "他们讨论了问题🙂" * 500
    )
    body = result.summary.text.removeprefix(f"{SUMMARY_PREFIX}\n")
    assert token_estimate(body) <= settings.MEMORY_COMPACT_SUMMARY_TOKENS
    assert body.startswith("他们讨论了问题") and "\ufffd" not in body


@pytest.mark.django_db
def test_long_tool_results_are_truncated_in_the_context_but_stored_whole(agent_a):
    session = services.messages_append(
        agent=agent_a,
        messages=[
            {"role": "user", "text": "read the log"},
            {"role": "tool", "text": "L" * 10_000, "tool_call_id": "c1"},
        ],
        session_key="tools",
    ).session
    context = services.session_compact(session=session, max_input_tokens=100_000).context
    assert "[... 2800 characters truncated ...]" in context[1]["text"]
    assert Message.objects.get(session=session, role="tool").text == "L" * 10_000


@pytest.mark.django_db
def test_a_compaction_whose_conversation_moved_while_it_summarised_gives_up(agent_a):
    """The summary is written with no lock held; a checkout meanwhile moves the conversation off the
    planned one, and the summary, which no longer fits, is not applied: one more plan, then it says so."""
    session = _session(agent_a)
    texts = iter(["question 5", "question 4"])

    def summariser(messages):
        head = Message.objects.get(session=session, text__startswith=next(texts))
        services.message_checkout(session=session, message=head)
        return "stale"

    result = services.session_compact(session=session, force=True, summariser=summariser)
    assert result.compacted is False and result.reason.startswith("the conversation changed")
    assert not Message.objects.filter(session=session, archived=True).exists()
    assert not Message.objects.filter(session=session, internal=True).exists()
    assert [m["text"][:10] for m in result.context][-1] == "question 4"


@pytest.mark.django_db
def test_a_compacted_session_archived_and_restored_keeps_each_messages_reply_context(agent_a):
    # The first kept message after a summary keeps the turn it answered, though its parent is now the
    # summary: the restore must give it back as stored, not derive it again from the summary.
    session = _session(agent_a, turns=8)
    services.session_compact(session=session, force=True, summariser=lambda m: "They talked about it.")
    before = dict(Message.objects.filter(session=session).values_list("id", "reply_to_text"))
    services.session_archive(session=session)
    services.session_restore(session=session)
    assert dict(Message.objects.filter(session=session).values_list("id", "reply_to_text")) == before
