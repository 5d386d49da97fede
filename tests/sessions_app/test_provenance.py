"""Entries the server extracts from a conversation say which session and messages they came from."""

import pytest

from vault.models import VaultEntry

pytestmark = pytest.mark.django_db


def test_the_write_ahead_scan_records_the_session_and_message(api, token_a, agent_a):
    body = api.post(
        "/agents/agent-a/messages",
        {
            "session": "chat-1",
            "messages": [{"role": "user", "text": "hello"}, {"role": "user", "text": "My name is Bobur."}],
        },
        token=token_a,
    ).json()
    entry = VaultEntry.objects.get(agent=agent_a, tags__contains=["wal"])
    assert entry.source_session_id == body["session"]["id"]
    assert entry.source_message_ids == [body["items"][1]["id"]]
    shown = api.get(f"/entries/{entry.pk}", token=token_a).json()
    assert shown["source_session_id"] == body["session"]["id"]


def test_sleep_records_the_session_and_messages_of_what_it_extracts(api, token_a, agent_a):
    messages = [
        {"role": "user", "text": "What cache should the sessions use?"},
        {"role": "assistant", "text": "We decided to use Memcached for the session cache from now on."},
        {"role": "user", "text": "Thanks, noted."},
    ]
    body = api.post(
        "/agents/agent-a/sleep", {"session": "chat-2", "messages": messages}, token=token_a
    ).json()
    session_id = body["session"]["id"]
    handoff = VaultEntry.objects.get(pk=body["handoff"]["id"])
    assert handoff.source_session_id == session_id
    assert len(handoff.source_message_ids) == 3
    decision = VaultEntry.objects.get(agent=agent_a, category="decisions", tags__contains=["auto-extract"])
    assert decision.source_session_id == session_id
    assert len(decision.source_message_ids) == 1
    stored = api.get("/agents/agent-a/messages", token=token_a, session="chat-2").json()
    by_id = {m["id"]: m["text"] for m in stored["items"]}
    assert "Memcached" in by_id[decision.source_message_ids[0]]
