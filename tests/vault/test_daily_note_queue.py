"""A day's note is written at most once per MEMORY_DAILY_NOTE_WRITE_SECONDS per agent: the exchanges of
the appends in between are queued (vault.QueuedNoteAppend) and written, in order and logged once, by the
note's next write, by any read of it, or by the job that runs every minute."""

import threading
import zipfile
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_q.models import Schedule

from tests.conftest import ApiClient
from vault import services, tasks
from vault.models import QueuedNoteAppend, WorkspaceFile

NOTE = "memory/2026-03-16.md"
T0 = datetime(2026, 3, 16, 10, 30, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def write_window(settings):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 2
    settings.TIME_ZONE = "UTC"


def _exchange(api, token, question, answer, *, at, session="s1"):
    with time_machine.travel(at, tick=False):
        response = api.post(
            "/agents/agent-a/messages",
            {
                "session": session,
                "messages": [{"role": "user", "text": question}, {"role": "assistant", "text": answer}],
            },
            token=token,
        )
    assert response.status_code == 200, response.content
    assert response.json()["warnings"] == []


def _stored(agent) -> str:
    return WorkspaceFile.objects.get(agent=agent, path=NOTE, deleted_at__isnull=True).content


def _answers(note: str) -> list[str]:
    return [line.removeprefix("**Agent:** ") for line in note.splitlines() if line.startswith("**Agent:** ")]


def test_an_append_soon_after_a_write_is_queued_without_reading_the_note_and_a_read_writes_it(
    api, token_a, agent_a
):
    _exchange(api, token_a, "What port does the API use?", "Port 8080", at=T0)
    assert _answers(_stored(agent_a)) == ["Port 8080"]
    with CaptureQueriesContext(connection) as queries:
        _exchange(api, token_a, "And the admin?", "Port 9090", at=T0 + timedelta(seconds=1))
    # Queued: the note's row was neither read nor written.
    note_sql = [q["sql"] for q in queries.captured_queries if "vault_workspacefile" in q["sql"]]
    assert note_sql and all('"content"' not in sql and "UPDATE" not in sql for sql in note_sql), note_sql
    assert _answers(_stored(agent_a)) == ["Port 8080"]
    assert list(QueuedNoteAppend.objects.values_list("path", flat=True)) == [NOTE]

    with time_machine.travel(T0 + timedelta(seconds=1.5), tick=False):
        response = api.get(f"/agents/agent-a/files/{NOTE}", token=token_a)
    assert response.status_code == 200
    assert _answers(response.json()["content"]) == ["Port 8080", "Port 9090"]
    assert response.json()["size"] == len(response.json()["content"].encode())
    assert _answers(_stored(agent_a)) == ["Port 8080", "Port 9090"]
    assert not QueuedNoteAppend.objects.exists()


def test_the_next_append_after_the_window_writes_the_queue_first_in_order(api, token_a, agent_a):
    for i, seconds in enumerate([0, 0.5, 1.0, 1.5]):
        _exchange(api, token_a, f"question {i}", f"answer {i}", at=T0 + timedelta(seconds=seconds))
    assert _answers(_stored(agent_a)) == ["answer 0"]
    assert QueuedNoteAppend.objects.count() == 3
    _exchange(api, token_a, "question 4", "answer 4", at=T0 + timedelta(seconds=2.5))
    assert _answers(_stored(agent_a)) == [f"answer {i}" for i in range(5)]
    assert not QueuedNoteAppend.objects.exists()
    note = WorkspaceFile.objects.get(agent=agent_a, path=NOTE)
    assert note.size == len(note.content.encode())


def test_the_job_writes_the_queues_older_than_the_window_and_is_scheduled(api, token_a, agent_a):
    _exchange(api, token_a, "q1", "a1", at=T0)
    _exchange(api, token_a, "q2", "a2", at=T0 + timedelta(seconds=1))
    with time_machine.travel(T0 + timedelta(seconds=2), tick=False):
        assert tasks.daily_notes_flush_scheduled() == 0  # the queued block is 1 s old
    assert _answers(_stored(agent_a)) == ["a1"]
    with time_machine.travel(T0 + timedelta(seconds=4), tick=False):
        assert tasks.daily_notes_flush_scheduled() == 1
    assert _answers(_stored(agent_a)) == ["a1", "a2"]
    call_command("setup_schedules", stdout=StringIO())
    schedule = Schedule.objects.get(name="vault: write queued daily-note exchanges")
    assert schedule.func == "vault.tasks.daily_notes_flush_scheduled"
    assert (schedule.schedule_type, schedule.minutes) == (Schedule.MINUTES, 1)


def test_an_exchange_replayed_while_queued_is_logged_once(api, token_a, agent_a):
    """The "logged once a day" check holds across the note and its queue: the same exchange saved again
    in other sessions (a client replaying its history) stays one block."""
    _exchange(api, token_a, "Which cache?", "Redis", at=T0)
    _exchange(api, token_a, "Which queue?", "RabbitMQ", at=T0 + timedelta(seconds=0.5))
    _exchange(api, token_a, "Which cache?", "Redis", at=T0 + timedelta(seconds=0.7), session="s2")
    _exchange(api, token_a, "Which queue?", "RabbitMQ", at=T0 + timedelta(seconds=0.9), session="s3")
    assert QueuedNoteAppend.objects.count() == 3
    services.daily_notes_flush(agent=agent_a)
    assert _answers(_stored(agent_a)) == ["Redis", "RabbitMQ"]


def test_every_reader_sees_the_queued_exchanges(api, token_a, agent_a, client_a):
    """The file list, the curator's page and an export all write the note's queue first."""
    from django.urls import reverse

    from vault.transfer.export import export_zip

    def queue_one(answer, seconds):
        _exchange(api, token_a, "q", answer, at=T0 + timedelta(seconds=seconds))
        assert QueuedNoteAppend.objects.exists()

    _exchange(api, token_a, "q", "first", at=T0)
    queue_one("listed", 0.2)
    listed = api.get("/agents/agent-a/files?prefix=memory/", token=token_a).json()["items"]
    assert [item["size"] for item in listed] == [len(_stored(agent_a).encode())]
    assert _answers(_stored(agent_a)) == ["first", "listed"]

    queue_one("on the page", 0.4)
    url = reverse("vault-file", args=[agent_a.project.slug, agent_a.slug]) + f"?path={NOTE}"
    page = client_a.get(url)
    assert page.status_code == 200 and "on the page" in page.content.decode()

    queue_one("exported", 0.6)
    archive = zipfile.ZipFile(export_zip(project=agent_a.project, agents=[agent_a]))
    exported = [archive.read(name) for name in archive.namelist() if name.endswith("2026-03-16.md")]
    assert len(exported) == 1
    assert _answers(exported[0].decode()) == ["first", "listed", "on the page", "exported"]
    assert not QueuedNoteAppend.objects.exists()


def test_deleting_a_note_drops_its_queue_and_renaming_it_writes_the_queue_first(api, token_a, agent_a):
    _exchange(api, token_a, "q1", "a1", at=T0)
    _exchange(api, token_a, "q2", "a2", at=T0 + timedelta(seconds=0.5))
    renamed = services.file_rename(agent=agent_a, old_path=NOTE, new_path="archive/2026-03-16.md")
    assert _answers(renamed.content) == ["a1", "a2"]
    assert _answers(WorkspaceFile.objects.get(agent=agent_a, path="archive/2026-03-16.md").content) == [
        "a1",
        "a2",
    ]
    assert not QueuedNoteAppend.objects.exists()

    _exchange(api, token_a, "q3", "a3", at=T0 + timedelta(seconds=10))
    _exchange(api, token_a, "q4", "a4", at=T0 + timedelta(seconds=10.5))
    services.file_delete(agent=agent_a, path=NOTE, deleted_by="curator")
    assert not QueuedNoteAppend.objects.exists()
    _exchange(api, token_a, "q5", "a5", at=T0 + timedelta(seconds=11))
    assert _answers(_stored(agent_a)) == ["a5"]


def test_with_no_window_every_append_writes_the_note(settings, api, token_a, agent_a):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    _exchange(api, token_a, "q1", "a1", at=T0)
    _exchange(api, token_a, "q2", "a2", at=T0)
    assert _answers(_stored(agent_a)) == ["a1", "a2"]
    assert not QueuedNoteAppend.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_and_reads_log_every_exchange_exactly_once(agent_a, token_a):
    """Four writers append exchanges to one agent's note while a reader reads it: queued blocks are
    neither lost nor written twice."""
    failures = []
    stop = threading.Event()

    def writer(n):
        api = ApiClient(token_a)
        try:
            for i in range(12):
                response = api.post(
                    "/agents/agent-a/messages",
                    {
                        "session": f"writer-{n}",
                        "messages": [
                            {"role": "user", "text": f"question {n}-{i}"},
                            {"role": "assistant", "text": f"answer {n}-{i}"},
                        ],
                    },
                )
                if response.status_code != 200 or response.json()["warnings"]:
                    failures.append((n, i, response.status_code, response.content[:200]))
        finally:
            connection.close()

    def reader():
        api = ApiClient(token_a)
        try:
            while not stop.is_set():
                path = services.daily_note_path(datetime.now().date())
                response = api.get(f"/agents/agent-a/files/{path}")
                if response.status_code not in (200, 404):
                    failures.append(("reader", response.status_code, response.content[:200]))
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    read = threading.Thread(target=reader)
    read.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    read.join()
    assert failures == []
    services.daily_notes_flush(agent=agent_a)
    notes = "".join(
        WorkspaceFile.objects.filter(agent=agent_a, path__startswith="memory/").values_list(
            "content", flat=True
        )
    )
    answers = _answers(notes)
    expected = {f"answer {n}-{i}" for n in range(4) for i in range(12)}
    assert sorted(answers) == sorted(expected)


def test_a_note_that_fails_to_be_written_keeps_its_queue_and_does_not_fail_the_read(
    api, token_a, agent_a, monkeypatch
):
    from vault.services import daily_notes as files

    _exchange(api, token_a, "q1", "a1", at=T0)
    _exchange(api, token_a, "q2", "a2", at=T0 + timedelta(seconds=0.5))
    real = files.file_append_many

    def broken(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(files, "file_append_many", broken)
    response = api.get(f"/agents/agent-a/files/{NOTE}", token=token_a)
    assert response.status_code == 200
    assert _answers(response.json()["content"]) == ["a1"]
    assert QueuedNoteAppend.objects.count() == 1
    monkeypatch.setattr(files, "file_append_many", real)
    assert services.daily_notes_flush(agent=agent_a) == 1
    assert _answers(_stored(agent_a)) == ["a1", "a2"]


def test_stats_report_the_queue(api, token_a, agent_a, admin_token):
    empty = api.get("/stats", token=admin_token).json()["daily_note_queue"]
    assert empty == {"appends": 0, "oldest_seconds": None}
    _exchange(api, token_a, "q1", "a1", at=T0)
    _exchange(api, token_a, "q2", "a2", at=T0 + timedelta(seconds=0.5))
    _exchange(api, token_a, "q3", "a3", at=T0 + timedelta(seconds=1))
    with time_machine.travel(T0 + timedelta(seconds=30), tick=False):
        queue = api.get("/stats", token=admin_token).json()["daily_note_queue"]
    assert queue == {"appends": 2, "oldest_seconds": 29.5}


def test_the_job_fails_when_a_queue_could_not_be_written(api, token_a, agent_a, monkeypatch):
    """A note whose queued exchanges failed to be written was logged and left with its queue, and the
    every-minute job succeeded all the same: a queue that can never be written (and grows with every
    exchange) showed nowhere in /healthz. The job now writes the other notes, then fails saying which."""
    from vault.services import daily_notes

    _exchange(api, token_a, "q1", "a1", at=T0)
    _exchange(api, token_a, "q2", "a2", at=T0 + timedelta(seconds=1))

    def broken(**kwargs):
        raise RuntimeError("the note cannot be written")

    monkeypatch.setattr(daily_notes, "file_append_many", broken)
    travel = time_machine.travel(T0 + timedelta(seconds=4), tick=False)
    with travel, pytest.raises(daily_notes.QueuedNotesNotWritten, match=NOTE):
        tasks.daily_notes_flush_scheduled()
    assert QueuedNoteAppend.objects.count() == 1  # kept for the next run
