"""Services: the write-ahead scan end to end in English and Portuguese, durable-fact dedupe, concurrent
autosaves, handoff format, checkpoints selectors."""

import threading
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from sessions_app import selectors, services
from sessions_app.models import Message, SessionStateEntry
from tests.conftest import ApiClient
from vault.models import VaultEntry, WorkspaceFile

SCANNED = [
    ("correction", "Actually, the server is in Frankfurt"),
    ("correction", "Na verdade, o servidor fica em São Paulo"),
    ("proper_noun", "My name is Bobur"),
    ("proper_noun", "Meu nome é Joana"),
    ("preference", "I prefer dark mode"),
    ("preference", "Prefiro respostas curtas"),
    ("decision", "Let's go with PostgreSQL"),
    ("decision", "Vamos usar Redis para a fila"),
    ("specific_value", "The deadline is 2025-06-15"),
    ("specific_value", "O orçamento é R$ 25.000"),
    ("remember", "Remember that the API key rotates monthly"),
    ("remember", "Não esqueça que a reunião mudou"),
]

ORDINARY = [
    "Can you explain how the cache works?",
    "Thanks, that makes sense.",
    "Pode me mostrar o erro de novo?",
    "Obrigado pela ajuda",
    "What does this function return?",
    "Should we use Redis?",
]


@pytest.mark.django_db
@pytest.mark.parametrize(("category", "text"), SCANNED)
def test_each_category_becomes_a_session_state_entry(agent_a, category, text):
    result = services.messages_append(agent=agent_a, messages=[{"role": "user", "text": text}])
    assert category in [entry.category for entry in result.state]
    stored = SessionStateEntry.objects.get(agent=agent_a, category=category)
    assert stored.message_id == result.stored[0].pk and stored.created_at == result.stored[0].created_at
    assert stored.durable == (category in {"proper_noun", "preference", "remember"})
    assert VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal"]).exists() == stored.durable


@pytest.mark.django_db
def test_ordinary_sentences_record_nothing(agent_a):
    memory_before = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content
    result = services.messages_append(agent=agent_a, messages=[{"role": "user", "text": t} for t in ORDINARY])
    assert result.state == []
    assert not SessionStateEntry.objects.exists()
    assert WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content == memory_before


@pytest.mark.django_db
def test_internal_and_assistant_messages_are_not_scanned(agent_a):
    services.messages_append(
        agent=agent_a,
        messages=[
            {"role": "user", "text": "My name is Ana", "internal": True},
            {"role": "assistant", "text": "I prefer tabs"},
        ],
    )
    assert not SessionStateEntry.objects.exists()


@pytest.mark.django_db
def test_durable_fact_record_dedupes_normalised_text(agent_a):
    first = services.durable_fact_record(agent=agent_a, category="proper_noun", text="My name is Ana.")
    assert first is not None
    assert services.durable_fact_record(agent=agent_a, category="proper_noun", text="my  NAME is ana") is None
    memory = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content
    assert memory.endswith("\n- My name is Ana.\n")
    assert memory.lower().count("my name is ana") == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_of_the_same_fact_write_it_once(admin_token, agent_a):
    errors = []

    def writer(n):
        api = ApiClient(admin_token)
        try:
            response = api.post(
                "/agents/agent-a/messages",
                {
                    "session": f"chat-{n}",
                    "messages": [{"role": "user", "text": "Remember that prod is eu-west-1"}],
                },
            )
            if response.status_code != 200:
                errors.append(response.content)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal"]).count() == 1
    assert WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content.count("eu-west-1") == 1
    assert SessionStateEntry.objects.filter(agent=agent_a).count() == 8


@pytest.mark.django_db(transaction=True)
def test_concurrent_autosaves_store_each_message_once_in_one_chain(admin_token, agent_a):
    """Eight clients save the same growing conversation at once, as the seed's frontend does from two
    tabs plus sendBeacon: every message is stored once and the session stays one chain."""
    conversation = []
    for i in range(20):
        conversation += [
            {"id": f"u{i}", "role": "user", "text": f"question {i}"},
            {"id": f"a{i}", "role": "assistant", "text": f"answer {i}"},
        ]
    errors = []

    def saver(n):
        api = ApiClient(admin_token)
        try:
            for size in range(4, len(conversation) + 1, 4 + n % 3):
                response = api.post(
                    "/agents/agent-a/messages", {"session": "shared", "messages": conversation[:size]}
                )
                if response.status_code != 200:
                    errors.append(response.content)
            api.post("/agents/agent-a/messages", {"session": "shared", "messages": conversation})
        finally:
            connection.close()

    threads = [threading.Thread(target=saver, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Message.objects.filter(agent=agent_a).count() == 40
    session = Message.objects.filter(agent=agent_a).first().session
    assert [m.client_id for m in selectors.session_conversation(session)] == [c["id"] for c in conversation]
    assert Message.objects.filter(agent=agent_a, parent__isnull=True).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_full_saves_without_ids_append_the_tail_once(admin_token, agent_a):
    conversation = [{"role": "user" if i % 2 == 0 else "agent", "text": f"line {i}"} for i in range(12)]
    errors = []

    def saver(n):
        api = ApiClient(admin_token)
        try:
            for size in (4, 8, 12):
                body = {
                    "agentId": "agent-a",
                    "savedAt": "2026-01-01T00:00:00Z",
                    "messages": conversation[:size],
                }
                response = api.post("/agents/agent-a/messages", body)
                if response.status_code != 200:
                    errors.append(response.content)
        finally:
            connection.close()

    threads = [threading.Thread(target=saver, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Message.objects.filter(agent=agent_a).count() == 12


@pytest.mark.django_db
def test_handoff_format_labels_and_caps_each_message():
    messages = [
        services.MessageInput(role="user", text="first\nline"),
        services.MessageInput(role="assistant", text="x" * 300),
        services.MessageInput(role="tool", text="ignored"),
    ]
    assert services.handoff_format(messages) == "[User]: first line\n[Agent]: " + "x" * 200


@pytest.mark.django_db
def test_checkpoint_get_valid_follows_the_setting(agent_a, settings):
    settings.MEMORY_CHECKPOINT_DAYS = 1
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        checkpoint = services.checkpoint_save(agent=agent_a, messages=[{"role": "user", "text": "hi"}])
        assert checkpoint.valid_until == start + timedelta(days=1)
        assert selectors.checkpoint_get_valid(agent_a) == checkpoint
    with time_machine.travel(start + timedelta(days=1), tick=False):
        assert selectors.checkpoint_get_valid(agent_a) is None


@pytest.mark.django_db
def test_a_checkpoint_replaces_the_previous_one(agent_a):
    services.checkpoint_save(agent=agent_a, messages=[{"role": "user", "text": "old"}])
    services.checkpoint_save(agent=agent_a, messages=[{"role": "user", "text": "new"}], chat_id="c")
    checkpoint = selectors.checkpoint_get_valid(agent_a)
    assert checkpoint.messages == [{"role": "user", "text": "new"}] and checkpoint.chat_id == "c"


@pytest.mark.django_db
def test_session_get_for_principal_hides_other_agents_sessions(agent_a, agent_b):
    from memoryproject.errors import NotFound
    from vault.principal import Principal

    session = services.messages_append(
        agent=agent_a, messages=[{"role": "user", "text": "hi"}], session_key="c1"
    ).session
    own = Principal(project_id=agent_a.project_id, scope="write", label="t", agent_id=agent_a.pk)
    other = Principal(project_id=agent_b.project_id, scope="write", label="t", agent_id=agent_b.pk)
    assert selectors.session_get_for_principal(own, "agent-a", "c1") == session
    assert selectors.session_get_for_principal(own, agent_a, session.pk) == session
    assert selectors.session_get_for_principal(own, "agent-a", "current") == session
    with pytest.raises(NotFound):
        selectors.session_get_for_principal(other, "agent-a", "c1")


@pytest.mark.django_db
def test_an_append_to_an_open_session_finds_it_without_the_creation_lock(agent_a):
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import Session, SessionStatus

    def locks_taken(**kwargs) -> int:
        with CaptureQueriesContext(connection) as queries:
            services.session_ensure(agent=agent_a, **kwargs)
        return sum("pg_advisory_xact_lock" in q["sql"] for q in queries)

    assert locks_taken(external_id="chat-1") == 1  # created under the lock
    assert locks_taken(external_id="chat-1") == 0  # open, nothing to change
    assert locks_taken() == 0  # the current session, found the same way
    assert locks_taken(external_id="chat-1", model_id="model-b") == 1  # a change takes the lock
    assert Session.objects.get(agent=agent_a, external_id="chat-1").model_id == "model-b"
    Session.objects.filter(agent=agent_a).update(status=SessionStatus.CLOSED)
    assert locks_taken(external_id="chat-1") == 1  # reopened under the lock
    assert Session.objects.get(agent=agent_a, external_id="chat-1").status == SessionStatus.ACTIVE
    assert Session.objects.filter(agent=agent_a).count() == 1
