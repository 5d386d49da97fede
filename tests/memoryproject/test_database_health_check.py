"""The kept connection's health check before a request's first query (memoryproject.database_backend)."""

import time
from unittest import mock

import psycopg
import pytest
from django.db import close_old_connections, connection


@pytest.fixture(autouse=True)
def fresh_connection():
    """Each test starts on a new connection: close_old_connections() below also closes one older than
    CONN_MAX_AGE, which a connection opened during a slow test-database setup, or tests before
    this one, may be; the health check would then not be what ended it."""
    connection.close()


def _checked_before_the_next_query():
    # What Django does between two requests: the next request's first query checks the connection.
    close_old_connections()
    assert connection.health_check_enabled and not connection.health_check_done


@pytest.mark.django_db(transaction=True)
def test_a_sound_idle_connection_is_kept_without_a_round_trip(api, token_a):
    assert api.get("/me", token=token_a).status_code == 200
    kept = connection.connection
    _checked_before_the_next_query()
    with mock.patch.object(kept, "cursor", side_effect=AssertionError("a statement was sent")):
        connection.close_if_health_check_failed()
    assert connection.connection is kept and connection.health_check_done
    assert api.get("/me", token=token_a).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_ended_is_replaced_before_the_next_request(api, token_a):
    assert api.get("/me", token=token_a).status_code == 200
    kept = connection.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the server's farewell reaches the socket
        with psycopg.connect(**params, autocommit=True) as other:
            if not other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                break
        time.sleep(0.05)
    _checked_before_the_next_query()
    response = api.post(
        "/agents/agent-a/entries", {"category": "decisions", "content": "kept"}, token=token_a
    )
    assert response.status_code == 201
    assert connection.connection is not kept


@pytest.mark.django_db(transaction=True)
def test_a_connection_idle_for_some_minutes_is_kept_for_the_next_request(api, token_a, monkeypatch):
    """A request on a new connection cost 15-20 ms more (connecting, then each statement planned and the
    catalog read again by the new backend), so a lightly used server keeps its connection across a quiet
    spell: with DATABASE_CONN_MAX_AGE at 60 s, a request every few seconds paid it often (agent search
    p95 42-58 ms against 35, docs/benchmarks.md). Kept an hour by default, then replaced."""
    import django.db.backends.base.base as base

    def requests_end_after(minutes):
        # What Django does after a request and before the next, that many minutes on (the clock moved
        # for that call only: the module's `time` is the time module itself).
        with monkeypatch.context() as later:
            later.setattr(base.time, "monotonic", lambda: now + minutes * 60)
            close_old_connections()

    assert api.get("/me", token=token_a).status_code == 200
    kept, now = connection.connection, time.monotonic()
    requests_end_after(10)
    assert api.get("/me", token=token_a).status_code == 200
    assert connection.connection is kept
    requests_end_after(61)
    assert connection.connection is None
