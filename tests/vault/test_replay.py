"""Replaying the same conversation ten times leaves one copy of each memory."""

from collections import Counter

import pytest

from sessions_app.models import Message, Session
from vault.models import VaultEntry, WorkspaceFile

pytestmark = pytest.mark.django_db

CONVERSATION = [
    {"role": "user", "text": "My name is Marina and I prefer answers in Portuguese."},
    {"role": "assistant", "text": "Noted. Which cache should we use for the sessions?"},
    {"role": "user", "text": "We decided to use Redis for caching sessions, with a 1 hour TTL."},
    {"role": "assistant", "text": "I learned that the cache keys must be versioned on every deploy."},
    {"role": "user", "text": "Remember that deploys happen on Fridays only."},
    {"role": "assistant", "text": "Decided: the ledger keeps using PostgreSQL 16 for now."},
]


def memory_state(agent):
    entries = Counter(
        (e.category, " ".join(e.content.split()))
        for e in VaultEntry.objects.filter(agent=agent).exclude(status__in=["rejected"])
    )
    memory_file = WorkspaceFile.objects.get(agent=agent, path="MEMORY.md").content
    daily = {f.path: f.content for f in WorkspaceFile.objects.filter(agent=agent, path__startswith="memory/")}
    return entries, memory_file, daily


@pytest.mark.parametrize(
    "variant",
    ["same-session", "new-session-each-time", "client-ids"],
)
def test_replaying_a_conversation_ten_times_leaves_one_copy_of_each_memory(api, token_a, agent_a, variant):
    def body(i):
        messages = [
            {**m, "id": f"m{n}"} if variant == "client-ids" else dict(m) for n, m in enumerate(CONVERSATION)
        ]
        payload = {"messages": messages}
        if variant != "new-session-each-time":
            payload["session"] = "chat-replay"
        return payload

    first = api.post("/agents/agent-a/sleep", body(0), token=token_a)
    assert first.status_code == 200, first.content
    assert first.json()["decisions"] and first.json()["lessons"] and first.json()["handoff"]
    after_one = memory_state(agent_a)
    entries, memory_file, _ = after_one
    assert all(count == 1 for count in entries.values()), entries
    assert sum(1 for key in entries if key[0] == "handoffs") == 1
    assert "Redis" in " ".join(text for _, text in entries)
    for i in range(1, 10):
        response = api.post("/agents/agent-a/sleep", body(i), token=token_a)
        assert response.status_code == 200, response.content
    assert memory_state(agent_a) == after_one
    # A keyless replay of a closed conversation lands in the same session too.
    assert Session.objects.filter(agent=agent_a).count() == 1
    assert Message.objects.filter(agent=agent_a).count() == len(CONVERSATION)


def test_a_keyless_save_of_a_different_conversation_starts_a_new_session(api, token_a, agent_a):
    api.post("/agents/agent-a/sleep", {"messages": CONVERSATION}, token=token_a)
    other = [{"role": "user", "text": "Something else entirely"}, {"role": "assistant", "text": "Sure."}]
    assert api.post("/agents/agent-a/sleep", {"messages": other}, token=token_a).status_code == 200
    assert Session.objects.filter(agent=agent_a).count() == 2


def test_a_keyless_replay_goes_to_its_closed_session_while_another_conversation_is_open(
    api, token_a, agent_a
):
    """Another conversation opened a session after this one was closed; replaying this one (with a new
    message) copied it whole into that session and moved the other conversation off its main branch.
    It lands in the closed session it replays; the open one keeps its own conversation."""
    closed = api.post("/agents/agent-a/sleep", {"messages": CONVERSATION[:2]}, token=token_a)
    assert closed.status_code == 200, closed.content
    other = api.post(
        "/agents/agent-a/messages",
        {"messages": [{"role": "user", "text": "Unrelated: rotate the API keys"}]},
        token=token_a,
    )
    assert other.status_code == 200, other.content
    replay = api.post(
        "/agents/agent-a/messages", {"mode": "full", "messages": CONVERSATION[:3]}, token=token_a
    )
    assert replay.status_code == 200, replay.content
    assert replay.json()["stored"] == 1 and replay.json()["duplicates"] == 2
    assert replay.json()["session"]["id"] == closed.json()["session"]["id"]
    assert replay.json()["session"]["status"] == "closed"
    listed = api.get(f"/agents/agent-a/messages?session={other.json()['session']['id']}", token=token_a)
    assert [m["text"] for m in listed.json()["items"]] == ["Unrelated: rotate the API keys"]
    assert Message.objects.filter(agent=agent_a).count() == 4


def test_a_daily_note_logs_the_same_exchange_once_a_day_and_keeps_different_ones(agent_a):
    from datetime import UTC, datetime

    from vault import services

    def log(when, user, agent):
        services.daily_note_append(
            agent=agent_a,
            when=datetime(2026, 3, 16, *when, tzinfo=UTC),
            text=f"\n## [{when[0]:02d}:{when[1]:02d}:00]\n**User:** {user}\n**Agent:** {agent}\n",
        )

    log((10, 0), "hi", "hello")
    log((11, 0), "hi", "hello")  # the same exchange again: not logged twice
    log((12, 0), "hi", "hello there")  # starts like the first one, but is another exchange
    log((13, 0), "oh hi", "hello")
    services.daily_note_append(agent=agent_a, when=datetime(2026, 3, 16, tzinfo=UTC), text="free text\n")
    services.daily_note_append(agent=agent_a, when=datetime(2026, 3, 16, tzinfo=UTC), text="free text\n")
    log((10, 0), "hi", "hello")
    content = WorkspaceFile.objects.get(agent=agent_a, path="memory/2026-03-16.md").content
    assert content.count("**Agent:** hello\n") == 2  # 10:00 hi/hello and 13:00 oh hi/hello
    assert "## [11:00:00]" not in content and "**Agent:** hello there" in content
    assert content.count("free text") == 2  # only logged exchanges are de-duplicated
    other_day = WorkspaceFile.objects.filter(agent=agent_a, path="memory/2026-03-17.md")
    assert not other_day.exists()
