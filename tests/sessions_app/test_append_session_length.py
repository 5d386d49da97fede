"""What an append costs does not grow with its session: the working buffer's bound is the session's
running `context_bytes_bound`, kept by the append, not a sum over every stored message; a write that
may grow the messages otherwise clears it, and the buffer still starts where the conversation reaches
its threshold."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import selectors, services, transfer
from sessions_app.models import Session
from tests.sessions_app.test_session_files import export_to

pytestmark = pytest.mark.django_db


def _post(api, token, messages, **extra):
    response = api.post(
        "/agents/agent-a/messages", {"messages": messages, "session": "long", **extra}, token=token
    )
    assert response.status_code == 200, response.content
    return response.json()


def _batch(number: int, size: int = 50) -> list[dict]:
    return [
        {
            "id": f"b{number}-m{m}",
            "role": "user" if m % 2 == 0 else "assistant",
            "text": f"turn {m} of {number}",
        }
        for m in range(size)
    ]


def _bytes_stored(session: Session) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT SUM(octet_length(text) + octet_length(tool_calls::text) + 8) FROM sessions_app_message "
            "WHERE session_id = %s AND NOT archived",
            [session.pk],
        )
        return cursor.fetchone()[0]


def test_an_append_reads_none_of_the_sessions_earlier_messages_but_its_parent(api, token_a, agent_a):
    for number in range(6):
        _post(api, token_a, _batch(number), max_input_tokens=1_000_000)
    with CaptureQueriesContext(connection) as queries:
        _post(api, token_a, _batch(6))
    by_session = [
        q["sql"] for q in queries.captured_queries if "FROM sessions_app_message WHERE session_id" in q["sql"]
    ]
    # The client ids' look-up (an index probe per id) is the one read of the session's messages.
    assert len(by_session) == 1 and "client_id = ANY" in by_session[0], by_session
    assert not any(
        "SAVEPOINT" in q["sql"] and "RELEASE" not in q["sql"] for q in queries.captured_queries[-3:]
    )


def test_the_running_bound_is_what_the_stored_messages_add_up_to(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "héllo wörld 你好"}], max_input_tokens=1_000_000)
    _post(
        api,
        token_a,
        [
            {
                "role": "assistant",
                "text": "",
                "tool_calls": [{"id": "c1", "name": "run", "arguments": {"n": 1.5}}],
            },
            {"role": "tool", "text": "done ✓", "tool_call_id": "c1"},
        ],
    )
    session = Session.objects.get(external_id="long")
    assert session.context_bytes_bound == _bytes_stored(session)


def test_the_buffer_starts_at_the_threshold_when_a_summary_outweighs_what_it_replaced(api, token_a, agent_a):
    """A compaction's summary is a message the append did not count: it clears the bound, which the
    next append counts again."""
    _post(api, token_a, [{"role": "user", "text": f"turn {i}"} for i in range(8)], max_input_tokens=1000)
    session = Session.objects.get(external_id="long")
    long_summary = lambda messages: "x" * 1200  # noqa: E731 - 300 tokens, the most kept
    assert services.session_compact(
        session=session, force=True, keep_first=0, keep_turns=1, summariser=long_summary
    ).compacted
    answer = _post(api, token_a, [{"role": "user", "text": "y" * 800}])  # over 500 tokens active in all
    assert answer["session"]["buffer_started_at"] is not None and answer["buffer_logged"] == 1


def test_the_buffer_starts_at_the_threshold_when_an_import_grew_the_session(
    tmp_path, project, agent_a, target
):
    """An import that adds a session's new messages to its copy here clears the copy's bound."""
    services.messages_append(
        agent=agent_a, session_key="chat-1", messages=[{"role": "user", "text": "one", "client_id": "m1"}]
    )
    transfer.import_memory_dir(path=export_to(tmp_path / "first", project), project=target)
    copy = Session.objects.get(project=target)
    small = services.messages_append(
        agent=copy.agent,
        session=copy,
        messages=[{"role": "user", "text": "b" * 4, "client_id": "m2"}],
        max_input_tokens=1000,
    )
    assert small.session.context_bytes_bound is not None and small.session.buffer_started_at is None
    chat = Session.objects.get(project=project)
    services.messages_append(
        agent=agent_a,
        session=chat,
        messages=[
            {"role": "user", "text": "b" * 4, "client_id": "m2"},  # the same message, written on both sides
            {"role": "assistant", "text": "x" * 2000, "client_id": "m3"},
        ],
    )
    transfer.import_memory_dir(path=export_to(tmp_path / "second", project), project=target)
    copy.refresh_from_db()
    after = services.messages_append(
        agent=copy.agent, session=copy, messages=[{"role": "user", "text": "c" * 4}]
    )
    assert after.session.buffer_started_at is not None and after.buffer_logged == 1


def _mixed_conversation(api, token, settings):
    settings.MEMORY_TOOL_RESULT_MAX_CHARS = 100
    _post(api, token, [{"role": "system", "text": "be brief"}], max_input_tokens=1_000_000)
    _post(
        api,
        token,
        [
            {"role": "user", "text": "héllo 你好 " * 7},
            {
                "role": "assistant",
                "text": "",
                "tool_calls": [{"id": "c1", "name": "ls", "arguments": {"p": "é/"}}],
            },
            {"role": "tool", "text": "fïle " * 60, "tool_call_id": "c1"},  # over the limit: cut, then counted
            {"role": "tool", "text": "short", "tool_call_id": "c1"},
            {"role": "assistant", "text": "done"},
        ]
        + [{"role": "user", "text": f"turn {i} " * (i + 1)} for i in range(8)],
    )
    session = Session.objects.get(external_id="long")
    assert services.session_compact(session=session, force=True, keep_first=1, keep_turns=2).compacted
    return session


def test_the_context_counted_from_stored_sizes_is_the_conversations_tokens(api, token_a, agent_a, settings):
    session = _mixed_conversation(api, token_a, settings)
    expected = selectors.conversation_tokens(selectors.session_conversation(session, active_only=True))
    body = api.get(f"/agents/agent-a/sessions/{session.pk}/buffer", token=token_a).json()
    assert body["context_tokens"] == expected > 0
    stats = api.get(f"/agents/agent-a/sessions/{session.pk}/stats", token=token_a)
    assert stats.status_code == 200 and stats.json()["context_tokens"] == expected, stats.content


def test_the_buffers_usage_loads_no_message_whose_size_says_its_count(api, token_a, agent_a):
    for number in range(4):
        _post(api, token_a, _batch(number), max_input_tokens=1_000_000)
    session = Session.objects.get(external_id="long")
    with CaptureQueriesContext(connection) as queries:
        body = api.get(f"/agents/agent-a/sessions/{session.pk}/buffer", token=token_a).json()
    assert body["context_tokens"] == sum(
        -(-len(f"turn {m} of {n}") // 4) for n in range(4) for m in range(50)
    )
    loaded = [q["sql"] for q in queries.captured_queries if '"sessions_app_message"."text"' in q["sql"]]
    assert loaded == [], loaded
