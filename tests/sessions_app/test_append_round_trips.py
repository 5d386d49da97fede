"""The statements a batch of messages costs (issue 16): each one is a round trip and, through the ORM,
0.3-0.7 ms of the server's Python, so the append path asks the database only what it needs."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import selectors
from sessions_app.models import Branch, Message, Session, SessionStatus
from sessions_app.selectors import CLIENT_IDS_STORED_SQL

T0 = datetime(2026, 3, 16, 10, 30, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


def _batch(api, token, number: int, *, at):
    messages = [
        {
            "id": f"b{number}-m{m}",
            "role": "user" if m % 2 == 0 else "assistant",
            "text": f"message {m} of batch {number}: the deploy uses port {8000 + m}",
        }
        for m in range(50)
    ]
    with time_machine.travel(at, tick=False):
        response = api.post(
            "/agents/agent-a/messages", {"session": "load", "messages": messages}, token=token
        )
    assert response.status_code == 200, response.content
    assert response.json()["stored"] == 50 and response.json()["warnings"] == []
    return response.json()


def test_a_batch_to_an_open_session_takes_eighteen_statements(api, token_a, agent_a, settings):
    """A batch to an open session whose day's note was written a moment ago (its exchanges queued):
    the open session its chat id names locked when it is first read (not found, then locked), its active
    branch read once the lock is held; no savepoint around that lock (a session no longer open is not locked, so there is no
    lock to release); the branch's head, the session's activity and its running size bound in one statement,
    and the stored client ids asked for with one array; no savepoint around the recovery check or the
    working buffer when they run no SQL (the buffer far from its threshold, no lost-context signal); the
    agent read with the token. In production the append's transaction is BEGIN and COMMIT; here it is a
    savepoint in the test's transaction, counted (so 18 here, 16 statements and the COPY of the messages and of
    their write-ahead state rows in production)."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 2
    settings.TIME_ZONE = "UTC"
    _batch(api, token_a, 0, at=T0)
    with CaptureQueriesContext(connection) as queries:
        answer = _batch(api, token_a, 1, at=T0 + timedelta(seconds=1))
    statements = [q["sql"] for q in queries.captured_queries]
    lock = next(
        i for i, sql in enumerate(statements) if "FOR UPDATE" in sql and "sessions_app_session" in sql
    )
    # The one savepoint before the lock is the append's transaction (a savepoint inside the test's).
    assert sum(sql.startswith("SAVEPOINT") for sql in statements[:lock]) == 1, statements[: lock + 1]
    assert len(statements) == 18, "\n".join(statements)

    session = Session.objects.get(agent=agent_a, external_id="load")
    head = Message.objects.get(session=session, client_id="b1-m49")
    assert answer["head"] == head.pk
    assert Branch.objects.get(pk=session.active_branch_id).head_id == head.pk
    assert session.last_activity_at == T0 + timedelta(seconds=1)
    assert Message.objects.filter(session=session).count() == 100


def test_a_batch_without_facts_opens_no_savepoint_for_the_write_ahead_scan(api, token_a, agent_a, settings):
    """The scan runs no SQL: only a batch whose user messages it finds something in opens a savepoint to
    record it (two statements); the day's note (the other savepoint) is written in both cases."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0

    def savepoints(texts: list[str], key: str) -> tuple[int, dict]:
        messages = [{"role": "user" if i % 2 == 0 else "assistant", "text": t} for i, t in enumerate(texts)]
        with CaptureQueriesContext(connection) as queries:
            response = api.post(
                "/agents/agent-a/messages", {"session": key, "messages": messages}, token=token_a
            )
        assert response.status_code == 200, response.content
        return sum(q["sql"].startswith("SAVEPOINT") for q in queries.captured_queries), response.json()

    savepoints(["hello", "hi"], "first")  # the day's note created (in a savepoint of its own)
    plain, answer = savepoints(
        ["how does the cache work", "it keeps entries a minute", "thanks", "welcome"], "a"
    )
    assert answer["state"] == [] and answer["warnings"] == []
    facts, answer = savepoints(
        ["how does the cache work", "it keeps entries", "Let's go with PostgreSQL", "noted"], "b"
    )
    assert [item["category"] for item in answer["state"]] == ["decision"]  # not durable: no vault write
    assert facts == plain + 1  # the append's own savepoint (the test's transaction) and the note's in both


def test_a_batch_sent_again_stores_nothing_twice(api, token_a, agent_a):
    first = _batch(api, token_a, 0, at=T0)
    with time_machine.travel(T0 + timedelta(seconds=5), tick=False):
        response = api.post(
            "/agents/agent-a/messages",
            {
                "session": "load",
                "messages": [
                    {
                        "id": "b0-m0",
                        "role": "user",
                        "text": "message 0 of batch 0: the deploy uses port 8000",
                    },
                    {"id": "new-1", "role": "assistant", "text": "a new reply"},
                ],
            },
            token=token_a,
        )
    assert response.status_code == 200, response.content
    assert response.json()["stored"] == 1 and response.json()["duplicates"] == 1
    session = Session.objects.get(agent=agent_a, external_id="load")
    assert Message.objects.filter(session=session).count() == 51
    assert first["head"] != response.json()["head"]


def test_an_append_to_a_session_closed_meanwhile_goes_to_a_new_open_one(api, token_a, agent_a, monkeypatch):
    """The session found open is closed before its lock is taken: the locking statement does not lock
    it, and the append goes to the agent's current open session, a new one, as before."""
    from sessions_app.services import append as append_module
    from sessions_app.services import lifecycle

    _batch(api, token_a, 0, at=T0)
    old = Session.objects.get(agent=agent_a, external_id="load")
    ensure = lifecycle.session_ensure
    calls = []

    def ensure_then_close(**kwargs):
        session = ensure(**kwargs)
        if not calls:
            Session.objects.filter(pk=session.pk).update(status=SessionStatus.CLOSED)
        calls.append(session.pk)
        return session

    monkeypatch.setattr(append_module, "session_ensure", ensure_then_close)
    with time_machine.travel(T0 + timedelta(seconds=5), tick=False):
        response = api.post(
            "/agents/agent-a/messages",
            {"messages": [{"id": "late", "role": "user", "text": "hello again"}]},
            token=token_a,
        )
    assert response.status_code == 200, response.content
    assert len(calls) == 2 and calls[0] == old.pk and calls[1] != old.pk
    assert response.json()["session"]["id"] == calls[1]
    assert Message.objects.get(client_id="late").session_id == calls[1]
    assert Message.objects.filter(session=old).count() == 50


def test_client_ids_that_array_syntax_would_misread_are_found_again(api, token_a, agent_a):
    """The stored client ids are asked for with one array: ids holding its syntax (commas, braces,
    quotes, backslashes, spaces) or spelling NULL are each found again, so a retry stores nothing twice."""
    ids = ["a,b", "{c}", 'd"e', "f\\g", "NULL", "null", "h i", "ünï", "''"]
    body = {
        "session": "odd",
        "messages": [{"id": i, "role": "user", "text": f"text {n}"} for n, i in enumerate(ids)],
    }
    first = api.post("/agents/agent-a/messages", body, token=token_a)
    assert first.status_code == 200 and first.json()["stored"] == len(ids), first.content
    again = api.post("/agents/agent-a/messages", body, token=token_a)
    assert again.status_code == 200, again.content
    assert again.json()["stored"] == 0 and again.json()["duplicates"] == len(ids)
    assert sorted(Message.objects.filter(agent=agent_a).values_list("client_id", flat=True)) == sorted(ids)


def test_a_batch_naming_a_session_it_cannot_write_as_it_is_takes_the_usual_way(api, token_a, agent_a):
    """The open session a chat id names is locked as it is found; a closed one (reopened), another model
    id (changed) and a chat id no session has (created) go through session_ensure as before, and a chat id
    with a NUL is refused before any of it."""

    def post(text: str, **extra):
        return api.post(
            "/agents/agent-a/messages",
            {"session": "named", "messages": [{"role": "user", "text": text}], **extra},
            token=token_a,
        )

    created = post("first", model_id="model-a")
    assert created.status_code == 200, created.content
    session = Session.objects.get(agent=agent_a, external_id="named")
    assert post("second", model_id="model-b").json()["session"]["id"] == session.pk
    session.refresh_from_db()
    assert session.model_id == "model-b"
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.CLOSED)
    reopened = post("third")
    assert reopened.json()["session"]["id"] == session.pk
    session.refresh_from_db()
    assert session.status == SessionStatus.ACTIVE and session.model_id == "model-b"
    assert list(Message.objects.filter(session=session).values_list("text", flat=True)) == [
        "first",
        "second",
        "third",
    ]
    refused = api.post(
        "/agents/agent-a/messages",
        {"session": "na\x00med", "messages": [{"role": "user", "text": "x"}]},
        token=token_a,
    )
    assert refused.status_code in (400, 422) and "NUL" in refused.json()["detail"], refused.content
    assert Session.objects.filter(agent=agent_a).count() == 1


def test_a_message_built_for_the_copy_is_the_one_keyword_arguments_build():
    """_rows_store builds its rows from positional values (half the Python): the same instance, its agent
    and session cached, the search vector deferred; a column left out or unknown is refused."""
    from django.utils import timezone

    from sessions_app.services.append import _message_new
    from vault.models import Agent

    agent, session, now = Agent(pk=3, project_id=2), Session(pk=5), timezone.now()
    values = {
        "id": 7,
        "project_id": 2,
        "agent_id": 3,
        "session_id": 5,
        "parent_id": 6,
        "client_id": "c",
        "role": "user",
        "text": "hello",
        "internal": False,
        "tool_calls": [{"name": "t"}],
        "tool_call_id": "",
        "state": {"k": 1},
        "archived": False,
        "created_at": now,
        "reply_to_text": "before",
    }
    built = _message_new(agent, session, **values)
    expected = Message(
        agent=agent,
        session=session,
        **{k: v for k, v in values.items() if k not in ("agent_id", "session_id")},
    )
    columns = [f.attname for f in Message._meta.concrete_fields if not f.generated]
    assert [getattr(built, c) for c in columns] == [getattr(expected, c) for c in columns]
    assert built.get_deferred_fields() == expected.get_deferred_fields() == {"search_vector"}
    assert built.agent is agent and built.session is session and built._state.adding
    with pytest.raises(TypeError, match="reply_to_text"):
        _message_new(agent, session, **{k: v for k, v in values.items() if k != "reply_to_text"})
    with pytest.raises(TypeError, match="colour"):
        _message_new(agent, session, **values, colour="red")


def test_the_prepared_client_id_check_reads_the_unique_index(api, token_a, agent_a):
    """The append's dedupe statement is prepared, so PostgreSQL plans it once, for any session and ids (a
    generic plan): that plan can use the unique index on (session, client id) only because the statement
    says what the index's predicate says (no empty client id); without it a long session's plan reads every
    message of the session to find a batch's ids. (Which index a plan takes depends on the statistics: here
    the other index on the session is dropped, inside the test's transaction, so that only whether the
    unique index can serve the statement decides.)"""
    _batch(api, token_a, 0, at=T0)
    session = Session.objects.get(agent=agent_a, external_id="load")
    sql = CLIENT_IDS_STORED_SQL.replace("%s", "$1", 1).replace("%s", "$2", 1)
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX message_session_order")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"PREPARE client_ids_check AS {sql}")
        try:
            cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            cursor.execute(f"EXPLAIN EXECUTE client_ids_check({session.pk}, '{{b0-m1,b0-m2,b1-m0}}')")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE client_ids_check")
    assert "message_unique_client_id" in plan, plan
    assert selectors.session_client_ids_stored(session, ["b0-m1", "b0-m2", "b1-m0"]) == {"b0-m1", "b0-m2"}
