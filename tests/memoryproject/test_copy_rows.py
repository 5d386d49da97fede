"""rows_copy stores new rows with COPY exactly as bulk_create would: every column, generated columns,
triggers, constraints, and Django's errors; row_insert stores one row as save() would."""

import datetime

import pytest
from django.db import IntegrityError, connection, transaction

from memoryproject.copy_rows import ids_allocate, row_insert, rows_copy, rows_create
from sessions_app.models import Message, Session, WorkingBufferEntry
from vault.models import VaultEntry, WorkspaceFile


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


def test_row_insert_stores_a_row_as_save_would(agent_a):
    at = datetime.datetime(2026, 11, 24, 10, 0, tzinfo=datetime.UTC)
    values = {
        "project_id": agent_a.project_id,
        "agent": agent_a,
        "category": "lessons",
        "content": 'Deploy the quokka cluster\ttonight, "quoted" back\\slash açúcar 東京 🚀',
        "content_hash": "ab" * 32,
        "sketch": [-5, 3, 2_000_000_000],
        "tags": ["ops", "deploy"],
        "importance": 0.75,
        "source_message_ids": [1, 2],
        "confidence": None,
        "created_at": at,
        "updated_at": at,
    }
    saved = VaultEntry.objects.create(**{**values, "content": values["content"] + " (saved)"})
    row = VaultEntry(**values)
    assert row_insert(row) is row
    assert row.pk > saved.pk and not row._state.adding and row._state.db == "default"
    stored = VaultEntry.objects.get(pk=row.pk)
    for field in VaultEntry._meta.concrete_fields:
        if not field.generated:
            assert getattr(stored, field.attname) == getattr(row, field.attname), field.name
    assert VaultEntry.objects.filter(pk=row.pk, search_vector="quokka").exists()  # the generated vector
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_vocabularyword WHERE word = 'quokka'")
        assert cursor.fetchone()[0] == 1  # the insert trigger ran


def test_row_insert_applies_auto_now_and_raises_djangos_errors(agent_a):
    # WorkspaceFile's created_at is auto_now_add and its updated_at auto_now: set as save() sets them.
    row = row_insert(
        WorkspaceFile(project_id=agent_a.project_id, agent=agent_a, path="notes.md", content="x")
    )
    stored = WorkspaceFile.objects.get(pk=row.pk)
    assert stored.created_at is not None and stored.updated_at == row.updated_at
    with pytest.raises(IntegrityError), transaction.atomic():
        row_insert(WorkspaceFile(project_id=agent_a.project_id, agent=agent_a, path="notes.md", content="y"))
    assert WorkspaceFile.objects.get(agent=agent_a, path="notes.md").content == "x"
