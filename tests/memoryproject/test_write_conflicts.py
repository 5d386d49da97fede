"""A request whose transaction loses a deadlock to a concurrent write is told so (409, Retry-After,
retry), not that the database is unavailable (503), and its retry stores everything once."""

import threading
from unittest import mock

import psycopg
import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.db import OperationalError, connection, transaction

from sessions_app.models import Branch, Message, Session
from tests.conftest import ApiClient, until_another_connection_waits_for_a_lock

pytestmark = pytest.mark.django_db(transaction=True)

FIRST = [{"role": "user", "text": "We deploy on Fridays", "client_id": "c1"}]
SECOND = [{"role": "user", "text": "Use Redis for the cache", "client_id": "c2"}]


def deadlock_error() -> OperationalError:
    """The error Django raises when PostgreSQL picks this transaction as a deadlock's victim."""
    try:
        try:
            raise psycopg.errors.DeadlockDetected("deadlock detected")
        except psycopg.Error as exc:
            raise OperationalError(str(exc)) from exc
    except OperationalError as wrapped:
        return wrapped


def deadlocked(session_key: str, request):
    """Run `request` on another connection while this one holds the session's branch row and then asks
    for the session row: the append locks the session, then waits for its branch, a lock cycle
    PostgreSQL breaks by failing the append (this side checks for deadlocks only after 10 s)."""
    session = Session.objects.get(external_id=session_key)
    out = {}

    def other():
        try:
            out["result"] = request()
        finally:
            connection.close()

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL deadlock_timeout = '10s'")
        Branch.objects.select_for_update().filter(session=session).first()
        thread = threading.Thread(target=other)
        thread.start()
        until_another_connection_waits_for_a_lock()
        Session.objects.select_for_update().get(pk=session.pk)
    thread.join(20)
    assert not thread.is_alive()
    return out["result"]


def test_a_deadlocked_append_is_a_409_to_retry_and_the_retry_stores_it_once(agent_a, token_a):
    api = ApiClient()
    assert (
        api.post("/agents/agent-a/messages", {"session": "s1", "messages": FIRST}, token=token_a).status_code
        == 200
    )
    response = deadlocked(
        "s1",
        lambda: api.post("/agents/agent-a/messages", {"session": "s1", "messages": SECOND}, token=token_a),
    )
    assert response.status_code == 409, response.content
    assert response["Retry-After"] == "1"
    detail = response.json()["detail"]
    assert "concurrent write conflicted" in detail and "deadlock" in detail and "Retry" in detail
    assert "unavailable" not in detail
    assert list(Message.objects.values_list("client_id", flat=True)) == ["c1"]  # rolled back whole

    retried = api.post("/agents/agent-a/messages", {"session": "s1", "messages": SECOND}, token=token_a)
    assert retried.status_code == 200
    assert sorted(Message.objects.values_list("client_id", flat=True)) == ["c1", "c2"]


def test_a_curator_page_that_loses_a_deadlock_is_a_409_saying_retry(client):
    client.force_login(User.objects.create_superuser("root", password="pw-123456789"))
    with mock.patch.object(SessionStore, "load", side_effect=deadlock_error()):
        response = client.get("/")
    assert response.status_code == 409 and response["Retry-After"] == "1"
    assert b"concurrent write conflicted" in response.content and b"unreachable" not in response.content
