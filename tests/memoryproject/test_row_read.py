"""row_first reads one row as the ORM's first() would give it (the same values, JSON decoded, the same
columns deferred, the same order), in a prepared statement; the append and a day's note use it."""

import datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memoryproject.copy_rows import ids_allocate, rows_copy
from memoryproject.row_read import row_first
from sessions_app.models import Branch, Message, Session
from vault import services
from vault.models import WorkspaceFile

pytestmark = pytest.mark.django_db

T0 = datetime.datetime(2026, 11, 24, 10, 30, tzinfo=datetime.UTC)


def _same(orm, read) -> None:
    assert type(read) is type(orm)
    values = {key: value for key, value in orm.__dict__.items() if key != "_state"}
    assert {key: value for key, value in read.__dict__.items() if key != "_state"} == values
    assert read.get_deferred_fields() == orm.get_deferred_fields()
    assert (read._state.adding, read._state.db) == (False, "default")


def test_it_reads_a_message_as_first_does_json_decoded_and_its_vector_deferred(agent_a):
    session = Session.objects.create(project=agent_a.project, agent=agent_a, external_id="chat")
    (pk,) = ids_allocate(Message, 1)
    rows_copy(
        [
            Message(
                pk=pk,
                project_id=agent_a.project_id,
                agent=agent_a,
                session=session,
                role="assistant",
                text="ran it",
                tool_calls=[{"name": "run", "arguments": {"cmd": "ls", "n": 2, "ok": None}}],
                state={"mood": "ok", "list": [1, 2.5, True]},
                created_at=T0,
            )
        ]
    )
    read = row_first(Message, "id = %s", [pk])
    _same(Message.objects.filter(pk=pk).first(), read)
    assert read.tool_calls == [{"name": "run", "arguments": {"cmd": "ls", "n": 2, "ok": None}}]
    assert read.get_deferred_fields() == {"search_vector"}
    assert row_first(Message, "id = %s", [pk + 1000]) is None


def test_it_takes_the_first_row_in_the_order_it_is_given(agent_a):
    older = Session.objects.create(project=agent_a.project, agent=agent_a, last_activity_at=T0)
    newer = Session.objects.create(
        project=agent_a.project, agent=agent_a, last_activity_at=T0 + datetime.timedelta(hours=1)
    )
    where, params = "agent_id = %s AND external_id = %s", [agent_a.pk, ""]
    by_meta = row_first(Session, where, params, order_by="last_activity_at DESC, id DESC")
    assert by_meta.pk == newer.pk == Session.objects.filter(agent=agent_a, external_id="").first().pk
    _same(Session.objects.get(pk=newer.pk), by_meta)
    assert row_first(Session, where, params).pk == older.pk  # by primary key when no order is given


def test_it_locks_the_row_it_reads_with_a_prepared_statement(agent_a):
    services.file_write(agent=agent_a, path="memory/2026-11-24.md", content="# notes\n", changed_by="test")
    where = "agent_id = %s AND path = %s AND deleted_at IS NULL"
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        read = row_first(WorkspaceFile, where, [agent_a.pk, "memory/2026-11-24.md"], lock=True)
    _same(WorkspaceFile.objects.get(pk=read.pk), read)
    assert read.get_deferred_fields() == {"search_vector"}
    (statement,) = [q["sql"] for q in queries.captured_queries if "vault_workspacefile" in q["sql"]]
    # Server-bound: the statement's text is the same for every file, so PostgreSQL prepares it once.
    assert statement.endswith('LIMIT 1 FOR UPDATE OF "vault_workspacefile"') and "path = $2" in statement


def test_a_batch_reads_its_session_branch_and_parent_with_prepared_statements(api, token_a, agent_a):
    def batch(number):
        messages = [
            {"id": f"b{number}-m{m}", "role": "user" if m % 2 == 0 else "assistant", "text": f"turn {m}"}
            for m in range(4)
        ]
        response = api.post(
            "/agents/agent-a/messages", {"session": "load", "messages": messages}, token=token_a
        )
        assert response.status_code == 200, response.content

    batch(0)
    with CaptureQueriesContext(connection) as queries:
        batch(1)
    reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT")
        and "LIMIT 1" in q["sql"]
        and any(f'FROM "{model._meta.db_table}"' in q["sql"] for model in (Session, Branch, Message))
    ]
    assert len(reads) == 3, reads
    # Bound on the server (the text the same for every batch), not compiled with the values inlined.
    assert all("$1" in sql and "'load'" not in sql for sql in reads), reads
    session = Session.objects.get(agent=agent_a, external_id="load")
    assert Branch.objects.get(pk=session.active_branch_id).head.client_id == "b1-m3"


def test_an_append_to_a_days_note_locks_it_with_a_prepared_statement(agent_a):
    path = "memory/2026-11-24.md"
    services.file_write(agent=agent_a, path=path, content="# notes\n", changed_by="test")
    with CaptureQueriesContext(connection) as queries:
        services.file_append(agent=agent_a, path=path, text="- one more\n", changed_by="test")
    locks = [
        q["sql"]
        for q in queries.captured_queries
        if "FOR UPDATE" in q["sql"] and "vault_workspacefile" in q["sql"]
    ]
    assert locks and all("path = $2" in sql for sql in locks), locks
    assert WorkspaceFile.objects.get(agent=agent_a, path=path).content == "# notes\n- one more\n"
