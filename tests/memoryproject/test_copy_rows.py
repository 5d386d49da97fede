"""rows_copy stores new rows with COPY exactly as bulk_create would: every column, generated columns,
triggers, constraints, and Django's errors."""

import datetime

import pytest
from django.db import IntegrityError, connection, transaction

from memoryproject.copy_rows import ids_allocate, rows_copy, rows_create
from sessions_app.models import Message, Session, WorkingBufferEntry


def _message(session, pk, **fields) -> Message:
    values = {
        "project_id": session.project_id,
        "agent_id": session.agent_id,
        "session": session,
        "role": "user",
        "text": "hello",
        "created_at": datetime.datetime(2026, 11, 24, 10, 30, tzinfo=datetime.UTC),
    } | fields
    return Message(pk=pk, **values)


def test_rows_are_stored_with_every_column_the_generated_vector_and_the_triggers(agent_a):
    session = Session.objects.create(project=agent_a.project, agent=agent_a)
    first, second = ids_allocate(Message, 2)
    rows = [
        _message(session, first, client_id="c1", text="Deploy the quokka cluster\ttonight, açúcar 東京 🚀"),
        _message(
            session,
            second,
            parent_id=first,
            role="assistant",
            text='Done: "quoted", back\\slash, new\nline',
            tool_calls=[{"name": "run", "arguments": {"cmd": "ls -la", "n": 2, "ok": None}}],
            tool_call_id="call-1",
            state={"mood": "ok", "list": [1, 2.5, True]},
            internal=True,
            reply_to_text="Deploy the quokka cluster tonight",
        ),
    ]
    rows_copy(rows)
    assert all(not row._state.adding and row._state.db == "default" for row in rows)
    stored = {m.pk: m for m in Message.objects.filter(pk__in=[first, second])}
    for row in rows:
        for field in Message._meta.concrete_fields:
            if not field.generated:
                assert getattr(stored[row.pk], field.attname) == getattr(row, field.attname), field.name
    assert stored[second].parent_id == first and stored[first].parent_id is None
    assert stored[first].tool_calls == [] and stored[first].state == {}  # the fields' defaults
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, search_vector @@ to_tsquery('english', 'quokka') FROM sessions_app_message"
            " WHERE id = ANY(%s) ORDER BY id",
            [[first, second]],
        )
        # The first by its text, the second by the turn it answers (its reply context).
        assert cursor.fetchall() == [(first, True), (second, True)]
        cursor.execute("SELECT count(*) FROM search_vocabularyword WHERE word IN ('quokka', 'cluster')")
        assert cursor.fetchone()[0] == 2  # the statement trigger saw the copied rows


def test_a_constraint_violation_is_djangos_integrity_error_and_nothing_is_stored(agent_a):
    session = Session.objects.create(project=agent_a.project, agent=agent_a)
    first, second = ids_allocate(Message, 2)
    rows_copy([_message(session, first, client_id="same")])
    with pytest.raises(IntegrityError), transaction.atomic():
        rows_copy(
            [
                _message(session, second, text="new"),
                _message(session, ids_allocate(Message, 1)[0], client_id="same"),
            ]
        )
    assert list(Message.objects.filter(session=session).values_list("pk", flat=True)) == [first]


def test_rows_need_their_primary_keys(agent_a):
    session = Session.objects.create(project=agent_a.project, agent=agent_a)
    with pytest.raises(ValueError, match="primary keys"):
        rows_copy([_message(session, None)])
    rows_copy([])  # nothing to store


def test_rows_create_takes_keys_from_the_sequence_and_stores_rows_as_bulk_create_would(agent_a):
    session = Session.objects.create(project=agent_a.project, agent=agent_a)
    [message_id] = ids_allocate(Message, 1)
    rows_copy([_message(session, message_id)])
    at = datetime.datetime(2026, 11, 24, 10, 0, tzinfo=datetime.UTC)
    [before] = WorkingBufferEntry.objects.bulk_create(
        [WorkingBufferEntry(session=session, message_id=message_id, side="human", text="bulk", created_at=at)]
    )
    rows = [
        WorkingBufferEntry(
            session=session,
            message_id=message_id if i else None,
            side="agent" if i % 2 else "human",
            text=f'row {i}: tab\there, quote " back\\slash, new\nline',
            created_at=at + datetime.timedelta(minutes=i),
        )
        for i in range(3)
    ]
    assert rows_create(rows) is rows
    keys = [row.pk for row in rows]
    assert len(set(keys)) == 3 and min(keys) > before.pk
    assert all(not row._state.adding and row._state.db == "default" for row in rows)
    stored = {row.pk: row for row in WorkingBufferEntry.objects.filter(session=session)}
    assert set(stored) == {before.pk, *keys}
    for row in rows:
        for field in WorkingBufferEntry._meta.concrete_fields:
            assert getattr(stored[row.pk], field.attname) == getattr(row, field.attname), field.name
    # The sequence moved past the copied keys: the next ordinary insert does not collide with them.
    after = WorkingBufferEntry.objects.create(session=session, side="human", text="x", created_at=at)
    assert after.pk > max(keys)
    assert rows_create([]) == []
