"""bench_write --waits: what the database's sessions were doing during a load phase."""

import threading
import time

import pytest
from django.db import connection, connections

from benchmarks.db_waits import WaitSampler


def test_the_report_gives_each_states_mean_and_leaves_idle_and_rare_states_out():
    sampler = WaitSampler()
    sampler.add({"running": 1, "in transaction": 2, "idle": 5})
    sampler.add({"IO:WalSync": 1, "in transaction": 2, "idle": 5})
    sampler.add({"in transaction": 2, "idle": 5})
    sampler.add({"in transaction": 2, "idle": 5, "Lock:advisory": 0})
    assert sampler.means() == {
        "idle": 5.0,
        "in transaction": 2.0,
        "running": 0.25,
        "IO:WalSync": 0.25,
        "Lock:advisory": 0.0,
    }
    assert sampler.line() == (
        "\n          database sessions (mean of 4 samples): in transaction 2.00, running 0.25, IO:WalSync 0.25"
    )
    assert WaitSampler().line() == ""  # no sample taken
    only_idle = WaitSampler()
    only_idle.add({"idle": 3})
    assert only_idle.line() == ""


@pytest.mark.django_db(transaction=True)
def test_it_sees_a_session_waiting_on_a_lock_and_one_holding_a_transaction_open():
    """The states a slow phase is read from: a backend blocked on another's lock, and a transaction left
    open between statements (the web process working)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(4242, 1)")
    entered = threading.Event()

    def blocked():
        try:
            with connections["default"].cursor() as cursor:
                entered.set()
                cursor.execute("SELECT pg_advisory_lock(4242, 1)")
                cursor.execute("SELECT pg_advisory_unlock(4242, 1)")
        finally:
            connections["default"].close()

    waiter = threading.Thread(target=blocked)
    waiter.start()
    entered.wait(10)
    try:
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("SELECT 1")
        sampler = WaitSampler(interval=0.01).start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
            sampler.counts["Lock:advisory"] and sampler.counts["in transaction"]
        ):
            time.sleep(0.02)
        sampler.stop()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ROLLBACK")
            cursor.execute("SELECT pg_advisory_unlock(4242, 1)")
        waiter.join(10)
    means = sampler.means()
    assert means["Lock:advisory"] > 0 and means["in transaction"] > 0


@pytest.mark.django_db
def test_a_phase_reports_the_sessions_only_when_asked():
    """bench_write --waits: the phase's line gains the sessions' states (here the test's own transaction,
    open between statements); without it the database is not sampled at all."""
    from benchmarks.load import run_phase

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # inside the test's transaction, which stays open
    sampled = run_phase("entries", 0, [], 1, waits=True)
    assert "database sessions (mean of" in sampled.line() and "in transaction 1.00" in sampled.line()
    assert run_phase("entries", 0, [], 1).waits == ""
