"""Writers of one session on two connections: a message arriving while its session is being closed,
an append while the session is being compacted."""

import threading

import pytest
from django.db import connection, transaction

from sessions_app import selectors, services
from sessions_app.models import Message, Session, SessionTransition
from tests.conftest import until_another_connection_waits_for_a_lock

pytestmark = pytest.mark.django_db(transaction=True)

CONVERSATION = [
    {"role": "user", "text": "Let's go with PostgreSQL for the orders", "client_id": "c1"},
    {"role": "assistant", "text": "OK, PostgreSQL it is.", "client_id": "c2"},
]


def _in_thread(work):
    """Run `work` on another connection; returns the thread and the dict its result or error lands in."""
    out = {}

    def run():
        try:
            out["result"] = work()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _append_while_closing(agent, session, key, close=None):
    """Close `session` while another connection appends a message to `key`: the append has found the
    session (open) and waits for its row lock when the close commits."""
    with transaction.atomic():
        (close or (lambda: services.session_close(agent=agent, session=session)))()
        thread, out = _in_thread(
            lambda: services.messages_append(
                agent=agent,
                session_key=key,
                messages=[
                    {"role": "user", "text": "One more thing: use Redis for the cache", "client_id": "c3"}
                ],
            )
        )
        until_another_connection_waits_for_a_lock()
    thread.join(10)
    assert not thread.is_alive()
    assert "error" not in out, out
    return out["result"]


def test_a_message_to_a_named_chat_being_closed_reopens_it(agent_a):
    """The append found the chat open and then waited for the close; it stored the message in the
    closed session, where the handoff and extraction of the close had not seen it and nothing would
    reopen it. A write to a named chat reopens it, as it does when it arrives after the close."""
    session = services.messages_append(agent=agent_a, session_key="s1", messages=CONVERSATION).session
    result = _append_while_closing(agent_a, session, "s1")
    session.refresh_from_db()
    assert result.session.pk == session.pk
    assert session.status == "active" and session.closed_at is None
    assert [m.text for m in selectors.session_conversation(session)][
        -1
    ] == "One more thing: use Redis for the cache"
    transitions = list(
        SessionTransition.objects.filter(session=session).order_by("id").values_list("to_status", "reason")
    )
    assert transitions[-2:] == [("closed", "sleep"), ("active", "reopened")]


def test_a_message_to_the_current_session_being_closed_starts_a_new_one(agent_a):
    """Without a chat id a message goes to the agent's current open session; when that one closed while
    the message waited for it, it goes to a new session, as it would have a moment later."""
    session = services.messages_append(agent=agent_a, messages=CONVERSATION).session
    result = _append_while_closing(agent_a, session, "current")
    session.refresh_from_db()
    assert session.status == "closed"
    assert not Message.objects.filter(session=session, client_id="c3").exists()
    assert result.session.pk != session.pk and result.session.status == "active"
    assert [m.text for m in selectors.session_conversation(result.session)] == [
        "One more thing: use Redis for the cache"
    ]
    assert selectors.session_current(agent_a) == result.session
    assert Session.objects.filter(agent=agent_a).count() == 2


def test_a_message_to_a_named_chat_being_archived_restores_it(agent_a):
    """An open chat archived while a message waited for it failed the append with a 409 ("restore it
    first"); a message to an archived chat restores it, and so does this one."""
    session = services.messages_append(agent=agent_a, session_key="s1", messages=CONVERSATION).session
    result = _append_while_closing(
        agent_a, session, "s1", close=lambda: services.session_archive(session=session)
    )
    session.refresh_from_db()
    assert result.session.pk == session.pk and session.status == "active"
    assert [m.client_id for m in selectors.session_conversation(session)] == ["c1", "c2", "c3"]
