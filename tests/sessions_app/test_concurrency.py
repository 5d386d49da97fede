"""Writers of one session on two connections: a message arriving while its session is being closed,
an append while the session is being compacted."""

import threading

import pytest
from django.db import connection, transaction

from sessions_app import selectors, services
from sessions_app.models import Branch, Message, Session, SessionTransition
from sessions_app.services import append as append_services
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


# --- compaction and appends ----------------------------------------------------------------------------

TURNS = 6


def _long_session(agent):
    messages = []
    for i in range(TURNS):
        messages += [
            {"role": "user", "text": f"question {i} about the orders service", "client_id": f"u{i}"},
            {"role": "assistant", "text": f"answer {i}: we decided to shard by tenant", "client_id": f"a{i}"},
        ]
    return services.messages_append(agent=agent, session_key="long", messages=messages).session


def test_an_append_does_not_wait_for_the_compaction_summary(agent_a):
    """The compaction held the session's row lock while the summariser (an LLM: seconds to a minute)
    ran, so every append to the session waited for the model. The summary is now written with no lock
    held, and applied afterwards to the messages it summarised, the new message kept after them."""
    session = _long_session(agent_a)
    started, release = threading.Event(), threading.Event()
    summarised = []

    def slow_summariser(messages):
        summarised.append([m.client_id for m in messages])
        started.set()
        release.wait(20)
        return "the orders service is sharded by tenant"

    compaction, compacted = _in_thread(
        lambda: services.session_compact(session=session, force=True, summariser=slow_summariser)
    )
    try:
        assert started.wait(10)
        append, appended = _in_thread(
            lambda: services.messages_append(
                agent=agent_a,
                session_key="long",
                messages=[{"role": "user", "text": "and the cache?", "client_id": "u6"}],
            )
        )
        append.join(5)
        assert not append.is_alive(), "the append waited for the summariser"
        assert "error" not in appended, appended
    finally:
        release.set()
        compaction.join(20)
        append.join(20)
    assert "error" not in compacted, compacted
    result = compacted["result"]
    assert result.compacted is True
    middle = ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert summarised == [middle]
    assert sorted(
        Message.objects.filter(pk__in=result.archived_ids).values_list("client_id", flat=True)
    ) == sorted(middle)
    active = selectors.session_conversation(session, active_only=True)
    assert [m.client_id or "summary" for m in active] == ["u0", "a0", "summary", "u4", "a4", "u5", "a5", "u6"]
    assert active[2].text.endswith("the orders service is sharded by tenant")
    assert [m["id"] for m in result.context] == [m.pk for m in active]
    assert Message.objects.filter(session=session).count() == 2 * TURNS + 2  # nothing lost


def test_two_compactions_at_once_summarise_the_messages_once(agent_a):
    """A compaction whose messages another compaction summarised while its summariser ran applies
    nothing: it looks again, and the conversation is under the threshold now."""
    session = _long_session(agent_a)
    window = {"max_input_tokens": 1000, "trigger_ratio": 0.1}  # 100 tokens: over it, under it once compacted
    other = {}

    def summariser(messages):
        if not other:  # the first call: another compaction runs to its end meanwhile
            other["thread"], other["out"] = _in_thread(
                lambda: services.session_compact(session=session, summariser=lambda m: "second", **window)
            )
            other["thread"].join(10)
            other["waited"] = other["thread"].is_alive()
        return "first"

    try:
        result = services.session_compact(session=session, summariser=summariser, **window)
    finally:
        other["thread"].join(20)
    assert other["waited"] is False, "the other compaction waited for this one's summariser"
    assert other["out"]["result"].compacted is True
    assert result.compacted is False and result.reason == "under the threshold"
    assert result.tokens_before < 100
    summaries = [m for m in Message.objects.filter(session=session) if selectors.is_compaction_summary(m)]
    assert [s.text.rsplit("\n", 1)[-1] for s in summaries] == ["second"]
    archived = list(
        Message.objects.filter(session=session, archived=True).values_list("client_id", flat=True)
    )
    assert sorted(archived) == sorted(["u1", "a1", "u2", "a2", "u3", "a3"])


# --- a keyless full save of a closed conversation and other writers --------------------------------

SAVED = [
    {"role": "user", "text": "Plan the orders migration to PostgreSQL"},
    {"role": "assistant", "text": "Step one: dump the orders table."},
]
SAVED_MORE = [*SAVED, {"role": "user", "text": "And step two: restore it on the new cluster"}]


def _closed_conversation(agent):
    """The frontend's conversation: saved whole without a chat id, then closed with sleep."""
    session = services.messages_append(agent=agent, messages=SAVED, full=True).session
    services.session_close(agent=agent, session=session)
    return session


def _texts(session):
    return [m.text for m in selectors.session_conversation(session)]


def test_a_replay_saved_while_another_writer_opens_a_session_stays_in_its_closed_session(
    agent_a, monkeypatch
):
    """A keyless full save of a closed conversation, while another writer's append has opened a new
    session and not stored its message yet: the save took the new (empty, open) session for its own,
    copied the whole conversation into it, and the other writer's message was stored after that copy,
    as if it continued the replayed conversation. The save goes to the session it replays whatever else
    is open, and the other writer's session holds its message alone."""
    closed = _closed_conversation(agent_a)
    real_ensure = append_services.session_ensure
    saver = {}

    def ensure_then_save(**kwargs):
        session = real_ensure(**kwargs)
        if not saver:  # the other writer's session is open (committed, empty): the save comes now
            saver["thread"], saver["out"] = _in_thread(
                lambda: services.messages_append(agent=agent_a, messages=SAVED_MORE, full=True)
            )
            saver["thread"].join(10)
        return session

    monkeypatch.setattr(append_services, "session_ensure", ensure_then_save)
    other = services.messages_append(
        agent=agent_a, messages=[{"role": "user", "text": "Unrelated: rotate the API keys"}]
    ).session
    assert not saver["thread"].is_alive()
    assert "error" not in saver["out"], saver["out"]
    assert saver["out"]["result"].session.pk == closed.pk
    assert _texts(closed) == [m["text"] for m in SAVED_MORE]
    assert other.pk != closed.pk
    assert _texts(other) == ["Unrelated: rotate the API keys"]
    assert Message.objects.filter(agent=agent_a).count() == len(SAVED_MORE) + 1  # nothing stored twice


def test_a_save_waiting_for_its_session_to_close_does_not_copy_it_into_a_new_session(agent_a):
    """A keyless full save found its conversation's session open and waited for its row while a sleep
    closed it; it then went to a new session and stored the whole conversation there again. A save that
    comes after the close lands in the closed session it replays, and so does this one."""
    session = services.messages_append(agent=agent_a, messages=SAVED, full=True).session
    with transaction.atomic():
        services.session_close(agent=agent_a, session=session)
        thread, out = _in_thread(
            lambda: services.messages_append(agent=agent_a, messages=SAVED_MORE, full=True)
        )
        until_another_connection_waits_for_a_lock()
    thread.join(10)
    assert not thread.is_alive()
    assert "error" not in out, out
    assert out["result"].session.pk == session.pk
    assert Session.objects.filter(agent=agent_a).count() == 1
    assert _texts(session) == [m["text"] for m in SAVED_MORE]
    assert Message.objects.filter(agent=agent_a).count() == len(SAVED_MORE)


def _named_chat_saved_keyless(agent):
    """A named chat, current, whose conversation the frontend then saves whole without a chat id."""
    session = services.messages_append(agent=agent, session_key="chat_orders", messages=SAVED[:1]).session
    assert services.messages_append(agent=agent, messages=SAVED, full=True).session.pk == session.pk
    return session


def test_a_replay_of_a_closed_named_chat_stays_in_that_chat(agent_a):
    """A keyless full save of the current session's conversation, retried after a sleep closed that
    session, went to a new session (a copy of the conversation) when the session was a named chat:
    only closed sessions without a chat id were looked at. The retry lands in the closed chat, as it
    does in a closed session without one, and the answer names that (closed) session."""
    session = _named_chat_saved_keyless(agent_a)
    services.session_close(agent=agent_a, session=session)
    result = services.messages_append(agent=agent_a, messages=SAVED_MORE, full=True)
    assert result.session.pk == session.pk
    assert result.session.status == "closed"
    assert Session.objects.filter(agent=agent_a).count() == 1
    assert _texts(session) == [m["text"] for m in SAVED_MORE]
    assert Message.objects.filter(agent=agent_a).count() == len(SAVED_MORE)


def test_a_save_waiting_for_its_named_chat_to_close_does_not_copy_it_into_a_new_session(agent_a):
    """As test_a_save_waiting_for_its_session_to_close_does_not_copy_it_into_a_new_session, with the
    conversation's session a named chat: the save waited for the chat's row while a sleep closed it,
    then copied the whole conversation into a new session."""
    session = _named_chat_saved_keyless(agent_a)
    with transaction.atomic():
        services.session_close(agent=agent_a, session=session)
        thread, out = _in_thread(
            lambda: services.messages_append(agent=agent_a, messages=SAVED_MORE, full=True)
        )
        until_another_connection_waits_for_a_lock()
    thread.join(10)
    assert not thread.is_alive()
    assert "error" not in out, out
    assert out["result"].session.pk == session.pk
    assert Session.objects.filter(agent=agent_a).count() == 1
    assert _texts(session) == [m["text"] for m in SAVED_MORE]


def test_a_replay_of_an_older_keyless_conversation_is_found_after_a_named_chat_closed(agent_a):
    """The named chat closed last does not hide the closed conversation without a chat id that a
    keyless save replays."""
    closed = _closed_conversation(agent_a)
    named = services.messages_append(
        agent=agent_a, session_key="chat_other", messages=[{"role": "user", "text": "Rotate the API keys"}]
    ).session
    services.session_close(agent=agent_a, session=named)
    result = services.messages_append(agent=agent_a, messages=SAVED_MORE, full=True)
    assert result.session.pk == closed.pk
    assert _texts(closed) == [m["text"] for m in SAVED_MORE]
    assert _texts(named) == ["Rotate the API keys"]


def test_a_new_keyless_conversation_does_not_go_to_a_closed_named_chat(agent_a):
    """Only a closed session whose first messages are the save's is a replay."""
    named = services.messages_append(agent=agent_a, session_key="chat_other", messages=SAVED).session
    services.session_close(agent=agent_a, session=named)
    other = [{"role": "user", "text": "Plan the billing export"}, *SAVED[1:]]
    result = services.messages_append(agent=agent_a, messages=other, full=True)
    assert result.session.pk != named.pk
    assert result.session.external_id == ""


GREETING = [
    {"role": "system", "text": "You are the team's coding assistant."},
    {"role": "user", "text": "hi"},
]


@pytest.mark.parametrize("chat_id", ["", "chat_orders"])
def test_a_new_conversation_opening_as_a_closed_one_did_is_not_taken_for_its_replay(agent_a, chat_id):
    """A replay was recognised by its first two messages alone. Frontends open every conversation the
    same way (one system prompt, then "hi"), so a new conversation saved whole after a sleep went into
    the last closed one: it took that session's active branch, and the closed conversation was moved
    to a preserved branch of a closed session nobody looks at. A replay holds the whole conversation it
    replays (or is an earlier, shorter save of it): one that departs from it is a new conversation."""
    first = [*GREETING, {"role": "assistant", "text": "Hello! Shall we look at the orders migration?"}]
    if chat_id:
        services.messages_append(agent=agent_a, session_key=chat_id, messages=first[:1])
    closed = services.messages_append(agent=agent_a, messages=first, full=True).session
    services.session_close(agent=agent_a, session=closed)
    # A real replay, longer or shorter (a retry of an earlier save arriving late), lands there.
    longer = [*first, {"role": "user", "text": "Yes, the orders table first"}]
    for replay in (first[:2], longer):
        assert services.messages_append(agent=agent_a, messages=replay, full=True).session.pk == closed.pk
    assert _texts(closed) == [m["text"] for m in longer]
    second = [*GREETING, {"role": "assistant", "text": "Hello! What are we building today?"}]
    result = services.messages_append(agent=agent_a, messages=second, full=True)
    assert result.session.pk != closed.pk
    assert _texts(result.session) == [m["text"] for m in second]
    assert _texts(closed) == [m["text"] for m in longer]
    assert not Branch.objects.filter(session=closed).exclude(pk=closed.active_branch_id).exists()


def test_an_exchange_logged_while_a_message_is_forgotten_is_kept(agent_a, settings):
    """Forgetting a message rewrites the daily notes that logged it; an exchange appended to the same
    note meanwhile waits for the note's lock and is written after the erase, not lost, and the
    forgotten text does not come back."""
    from django.utils import timezone

    from memoryproject.maintenance import forget
    from vault import selectors as vault_selectors

    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    said = [
        {"role": "user", "text": "my locker code is 4417", "client_id": "f1"},
        {"role": "assistant", "text": "noted the locker", "client_id": "f2"},
    ]
    services.messages_append(agent=agent_a, session_key="s1", messages=said)
    secret = Message.objects.get(client_id="f1")
    later = [
        {"role": "user", "text": "deploy on friday", "client_id": "g1"},
        {"role": "assistant", "text": "friday it is", "client_id": "g2"},
    ]
    with transaction.atomic():
        forget(project=agent_a.project, agent_ids=None, deleted_by="t", message_ids=[secret.pk])
        thread, out = _in_thread(
            lambda: services.messages_append(agent=agent_a, session_key="s2", messages=later)
        )
        until_another_connection_waits_for_a_lock()
    thread.join(10)
    assert not thread.is_alive()
    assert "error" not in out, out
    note = vault_selectors.daily_note_content(agent_a.pk, timezone.localdate())
    assert "4417" not in note
    assert "deploy on friday" in note and "noted the locker" in note


def test_a_message_appended_while_the_head_is_forgotten_follows_the_heads_parent(agent_a):
    """The append read the branch's head, the message being forgotten, and stored its message as that
    message's reply: a foreign-key violation at commit, a 500, the message lost (and a deadlock, a 503,
    when the append held the session first). Forgetting a message now locks its session first, as an
    append does, so the append reads the head the erase left."""
    from memoryproject.maintenance import forget

    session = services.messages_append(agent=agent_a, session_key="s1", messages=CONVERSATION).session
    head = Message.objects.get(client_id="c2")
    with transaction.atomic():
        forget(project=agent_a.project, agent_ids=None, deleted_by="t", message_ids=[head.pk])
        thread, out = _in_thread(
            lambda: services.messages_append(
                agent=agent_a,
                session_key="s1",
                messages=[{"role": "user", "text": "and then?", "client_id": "c3"}],
            )
        )
        until_another_connection_waits_for_a_lock()
    thread.join(10)
    assert not thread.is_alive()
    assert "error" not in out, out
    assert _texts(session) == ["Let's go with PostgreSQL for the orders", "and then?"]


def test_a_checkpoint_saved_while_the_session_is_put_to_sleep_waits_for_it(agent_a):
    """POST /checkpoint locked the agent's checkpoint and only then, committing, its session, which
    sleep locks first and then saves the checkpoint: the two deadlocked (a 503 for one of them, in 4
    of 6 tries against a live server). A checkpoint of a session now takes the session first."""
    session = services.messages_append(agent=agent_a, session_key="s1", messages=CONVERSATION).session
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)  # sleep holds its session ...
        thread, out = _in_thread(lambda: services.checkpoint_save(agent=agent_a, session=session))
        until_another_connection_waits_for_a_lock()
        services.session_close(agent=agent_a, session=session)  # ... and then saves the checkpoint
    thread.join(10)
    assert not thread.is_alive()
    assert "error" not in out, out
