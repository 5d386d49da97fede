"""bench_write: what the checks add to entry_create (in-process mode), and the CPU split of the HTTP load report."""

import io
import os

import pytest
from django.core.management import call_command

from benchmarks.load import PhaseResult, cpu_by_role, database_pid, proc_table
from vault.models import Agent, VaultEntry


@pytest.mark.django_db
def test_a_corpus_smaller_than_its_agents_still_measures_every_probe():
    # 20 entries name fewer than the 50 agents the probes write for (it raised KeyError).
    out = io.StringIO()
    call_command("bench_write", entries=20, writes=10, keep=True, stdout=out)
    report = out.getvalue()
    assert "writes measured: 10 at 20 existing entries" in report
    assert "added by the checks" in report
    project_entries = VaultEntry.objects.filter(project__slug="bench-write")
    assert project_entries.count() == 20 + 2 * 10  # the corpus, then each probe checked and bare
    assert Agent.objects.filter(project__slug="bench-write").count() <= 50


def test_the_load_report_splits_cpu_between_server_database_and_client():
    table = {
        10: (1, 1.0, "python manage.py serve --no-cluster"),
        11: (10, 5.0, "python -m gunicorn memoryproject.asgi:application"),
        12: (11, 7.0, "python -m gunicorn memoryproject.asgi:application"),
        20: (1, 2.0, "/opt/pgserver/bin/postgres -D /data/pg"),
        21: (20, 3.0, "postgres: postgres memory 127.0.0.1(5000) idle"),
        30: (1, 0.5, "python manage.py bench_write --clients 8"),
        40: (1, 9.0, "python unrelated.py"),
    }
    assert cpu_by_role(table, server_pid=10, client_pid=30) == {
        "server": 13.0,
        "database": 5.0,
        "client": 0.5,
    }
    assert cpu_by_role(table, server_pid=99, client_pid=30)["server"] == 0.0  # server gone: nothing counted

    phase = PhaseResult(name="entries", requests=100, seconds=2.0, cpu={"server": 1.0, "database": 0.5})
    assert (
        "server 1.0 s" in phase.cpu_line() and "per request ms: server 10.0, database 5.0" in phase.cpu_line()
    )
    assert PhaseResult(name="entries").cpu_line() == ""  # no CPU measured (not Linux, or --port)

    mine = proc_table().get(os.getpid())
    if os.path.isdir("/proc"):
        assert mine is not None and mine[1] > 0 and "python" in mine[2]


def test_it_counts_only_its_own_database_server_when_it_knows_it():
    # Other PostgreSQL servers on the machine (another data folder's, the system one) were counted as
    # this load's database CPU: on a shared machine the figure was twice what the load cost.
    table = {
        10: (1, 1.0, "python manage.py serve --no-cluster"),
        20: (1, 2.0, "/opt/pgserver/bin/postgres -D /data/pg"),
        21: (20, 3.0, "postgres: postgres memory [local] COPY"),
        50: (1, 4.0, "/opt/pgserver/bin/postgres -D /other/pg"),
        51: (50, 6.0, "postgres: postgres other [local] COPY"),
        60: (1, 8.0, "postgres: 15/main: postgres test_x 127.0.0.1(38958) idle"),
        30: (1, 0.5, "python manage.py bench_write --clients 8"),
    }
    assert cpu_by_role(table, server_pid=10, client_pid=30, database_pid=20)["database"] == 5.0
    assert cpu_by_role(table, server_pid=10, client_pid=30)["database"] == 23.0  # unknown: every one


def test_it_finds_the_embedded_database_servers_pid_in_its_data_folder(settings, tmp_path):
    settings.EMBEDDED_DATABASE = True
    settings.MEMORY_DATA_DIR = tmp_path
    assert database_pid() is None  # not started
    (tmp_path / "pg").mkdir()
    (tmp_path / "pg" / "postmaster.pid").write_text("4321\n/data/pg\n1700000000\n5432\n")
    assert database_pid() == 4321
    (tmp_path / "pg" / "postmaster.pid").write_text("")
    assert database_pid() is None
    settings.EMBEDDED_DATABASE = False  # DATABASE_URL: a server this machine may not even run
    assert database_pid() is None


@pytest.mark.django_db
def test_the_load_check_finds_every_logged_exchange_and_counts_a_missing_one(settings, agent_a):
    """bench_write --clients also checks the daily notes: every acknowledged reply is logged once its
    note's queue is written (appends within MEMORY_DAILY_NOTE_WRITE_SECONDS are queued)."""
    from benchmarks.load import note_exchanges_missing
    from sessions_app.services import messages_append
    from vault.models import QueuedNoteAppend, WorkspaceFile

    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 60
    bodies = []
    for b in range(3):
        messages = [
            {"role": "user", "text": f"load message 0 of batch {b} from client 0: what next?"},
            {
                "role": "assistant",
                "text": f"load message 1 of batch {b} from client 0: first line\n- [ ] a task",
            },
        ]
        messages_append(agent=agent_a, messages=messages, session_key="load-0")
        bodies.append({"messages": messages})
    assert QueuedNoteAppend.objects.count() == 2  # the first append wrote the note, the others queued
    assert note_exchanges_missing([agent_a], bodies) == 0
    assert not QueuedNoteAppend.objects.exists()
    note = WorkspaceFile.objects.get(agent=agent_a, path__startswith="memory/")
    note.content = note.content.replace("of batch 1 from", "of batch one from")
    note.save()
    assert note_exchanges_missing([agent_a], bodies) == 1


def test_it_counts_the_connections_each_server_process_holds_on_the_port():
    """bench_write --waits prints how the clients' keep-alive connections are spread over the web
    workers (a worker holding most of them serves them under one GIL while the other idles)."""
    import socket

    from benchmarks.load import SplitWatch, established_inodes, worker_connections

    tcp = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:4966 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 100 1\n"
        "   1: 0100007F:4966 0100007F:C350 01 00000000:00000000 00:00000000 00000000 0 0 101 1\n"
        "   2: 0100007F:C350 0100007F:4966 01 00000000:00000000 00:00000000 00000000 0 0 102 1\n"
        "   3: 0100007F:4967 0100007F:C351 01 00000000:00000000 00:00000000 00000000 0 0 103 1\n"
    )
    # 0x4966 = 18790: the listening socket (0A) and the client's end (local port 0xC350) do not count
    assert established_inodes(18790, [tcp]) == {101}
    assert established_inodes(18791, [tcp, ""]) == {103}

    if not os.path.isdir("/proc/net"):
        return
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        accepted = [server.accept()[0] for _ in range(3)]
        try:
            assert worker_connections(os.getpid(), port) == [3]  # this process holds the server's ends
            assert SplitWatch(os.getpid(), port, 3).line() == "\n          connections per web worker: 3"
        finally:
            for sock in clients + accepted:
                sock.close()
