"""The session API: append and autosave, listing, session state, checkpoints, sleep, branches, compaction,
with tenancy checked on every endpoint."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from sessions_app.models import Message, Session, SessionStateEntry
from vault.models import VaultEntry, WorkspaceFile

pytestmark = pytest.mark.django_db


def _post(api, token, messages, **extra):
    return api.post("/agents/agent-a/messages", {"messages": messages, **extra}, token=token)


# --- append and autosave -----------------------------------------------------------------------


def test_it_appends_messages_as_a_chain(api, token_a, agent_a):
    response = _post(
        api,
        token_a,
        [
            {"id": "m1", "role": "user", "text": "Hello there"},
            {"id": "m2", "role": "agent", "text": "Hi! How can I help?"},
        ],
        session="chat_1",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["stored"] == 2 and body["duplicates"] == 0
    assert body["session"]["chat_id"] == "chat_1"
    first, second = body["items"]
    assert second["role"] == "assistant"  # "agent" is the name for the assistant
    assert second["parent"] == first["id"] and first["parent"] is None
    assert body["head"] == second["id"]


def test_an_appends_items_are_the_stored_messages_field_for_field(api, token_a, agent_a):
    response = _post(
        api,
        token_a,
        [
            {"id": "u1", "role": "user", "text": "Deploy the ledger at 10:00"},
            {
                "id": "a1",
                "role": "assistant",
                "text": "Checking the calendar.",
                "tool_calls": [{"id": "call-1", "name": "calendar", "arguments": {"day": "mon"}}],
                "state": {"step": 2},
            },
            {"id": "t1", "role": "tool", "text": "free", "tool_call_id": "call-1", "internal": True},
        ],
        session="fields",
    )
    assert response.status_code == 200, response.content
    items = response.json()["items"]
    listed = api.get("/agents/agent-a/messages", token=token_a, session="fields").json()["items"]
    assert items == listed
    rows = {m.client_id: m for m in Message.objects.filter(agent=agent_a)}
    for item in items:
        row = rows[item["client_id"]]
        assert set(item) == {
            "id", "client_id", "role", "text", "internal", "tool_calls", "tool_call_id", "state", "parent",
            "archived", "created_at", "token_estimate",
        }  # fmt: skip
        assert (item["id"], item["role"], item["text"], item["internal"]) == (
            row.pk,
            row.role,
            row.text,
            row.internal,
        )
        assert (
            item["tool_calls"],
            item["tool_call_id"],
            item["state"],
            item["parent"],
            item["archived"],
        ) == (row.tool_calls, row.tool_call_id, row.state, row.parent_id, row.archived)
        assert abs(datetime.fromisoformat(item["created_at"]) - row.created_at) < timedelta(milliseconds=1)
        assert item["token_estimate"] > 0
    assert items[1]["tool_calls"][0]["arguments"] == {"day": "mon"} and items[1]["state"] == {"step": 2}
    assert items[2]["internal"] is True and items[2]["parent"] == items[1]["id"]


def test_it_stores_nothing_twice_on_retries(api, token_a, agent_a):
    batch = [{"id": "m1", "role": "user", "text": "Hello"}, {"id": "m2", "role": "assistant", "text": "Hi"}]
    _post(api, token_a, batch)
    retry = _post(api, token_a, [*batch, {"id": "m3", "role": "user", "text": "And now?"}])
    assert retry.json()["stored"] == 1 and retry.json()["duplicates"] == 2
    again = _post(api, token_a, batch)
    assert again.json()["stored"] == 0
    assert Message.objects.filter(agent=agent_a).count() == 3
    listed = api.get("/agents/agent-a/messages", token=token_a).json()
    assert [m["client_id"] for m in listed["items"]] == ["m1", "m2", "m3"]


def test_it_stores_a_repeated_client_id_in_one_call_once(api, token_a, agent_a):
    response = _post(
        api, token_a, [{"id": "x", "role": "user", "text": "one"}, {"id": "x", "role": "user", "text": "one"}]
    )
    assert response.json()["stored"] == 1
    assert Message.objects.filter(agent=agent_a).count() == 1


def test_a_full_conversation_save_appends_only_the_new_tail(api, token_a, agent_a):
    conversation = [
        {"role": "user", "text": "Qual banco usamos?"},
        {"role": "agent", "text": "PostgreSQL."},
    ]
    seed_save = {"agentId": "agent-a", "savedAt": "2026-03-15T23:04:23.463Z"}
    assert (
        api.post("/agents/agent-a/messages", {**seed_save, "messages": conversation}, token=token_a).json()[
            "stored"
        ]
        == 2
    )
    # The frontend re-saves the whole, growing conversation every 30 s.
    conversation += [{"role": "user", "text": "ok"}, {"role": "agent", "text": "ok"}]
    second = api.post(
        "/agents/agent-a/messages", {**seed_save, "messages": conversation}, token=token_a
    ).json()
    assert second["stored"] == 2 and second["duplicates"] == 2
    third = api.post(
        "/agents/agent-a/messages", {**seed_save, "messages": conversation}, token=token_a
    ).json()
    assert third["stored"] == 0
    texts = [m["text"] for m in api.get("/agents/agent-a/messages", token=token_a).json()["items"]]
    assert texts == ["Qual banco usamos?", "PostgreSQL.", "ok", "ok"]


def test_plain_appends_without_client_ids_are_never_mistaken_for_stored_ones(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "ok"}])
    _post(api, token_a, [{"role": "user", "text": "ok"}])
    assert Message.objects.filter(agent=agent_a).count() == 2


def test_a_shorter_or_divergent_full_save_never_drops_stored_messages(api, token_a, agent_a):
    full = [
        {"role": "user", "text": "a"},
        {"role": "assistant", "text": "b"},
        {"role": "user", "text": "c"},
        {"role": "assistant", "text": "d"},
    ]
    _post(api, token_a, full, mode="full")
    # An older snapshot arriving late changes nothing.
    assert _post(api, token_a, full[:2], mode="full").json()["stored"] == 0
    # A regenerated answer diverges at position 3: it branches, the old answer stays on a saved branch.
    diverged = _post(api, token_a, [*full[:3], {"role": "assistant", "text": "d2"}], mode="full").json()
    assert diverged["stored"] == 1
    assert diverged["saved_branch"]
    texts = [m["text"] for m in api.get("/agents/agent-a/messages", token=token_a).json()["items"]]
    assert texts == ["a", "b", "c", "d2"]
    assert Message.objects.filter(agent=agent_a, text="d").exists()
    session = Session.objects.get(agent=agent_a)
    branches = api.get(f"/agents/agent-a/sessions/{session.pk}/branches", token=token_a).json()
    saved = next(b for b in branches if b["name"] == diverged["saved_branch"])
    assert saved["message_count"] == 4 and not saved["active"]


def test_it_rejects_bad_messages_with_a_named_problem(api, token_a, agent_a):
    bad_role = _post(api, token_a, [{"role": "robot", "text": "x"}])
    assert bad_role.status_code == 422 and "messages[0]" in bad_role.json()["detail"]
    nul = _post(api, token_a, [{"role": "user", "text": "a\u0000b"}])
    assert nul.status_code == 422 and "NUL" in nul.json()["detail"]
    empty = _post(api, token_a, [{"role": "user", "text": "  "}])
    assert empty.status_code == 422
    wrong_agent = api.post("/agents/agent-a/messages", {"agentId": "agent-b", "messages": []}, token=token_a)
    assert wrong_agent.status_code == 422 and "agentId" in wrong_agent.json()["detail"]
    missing = api.post("/agents/agent-a/messages", {"session": "x"}, token=token_a)
    assert missing.status_code == 422
    assert Message.objects.count() == 0


def test_without_a_session_it_uses_the_current_one_and_keeps_the_chat_id_map(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "first"}], session="chat_abc", model_id="claude-opus")
    _post(api, token_a, [{"role": "user", "text": "second"}])
    assert Session.objects.filter(agent=agent_a).count() == 1
    sessions = api.get("/agents/agent-a/sessions", token=token_a).json()
    assert sessions[0]["chat_id"] == "chat_abc" and sessions[0]["model_id"] == "claude-opus"


def test_current_names_the_same_session_when_appending_as_when_reading_and_closing(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "older"}], session="chat_old")
    _post(api, token_a, [{"role": "user", "text": "latest"}], session="chat_new")
    appended = _post(api, token_a, [{"role": "user", "text": "via current"}], session="current")
    assert appended.status_code == 200, appended.content
    assert appended.json()["session"]["chat_id"] == "chat_new"
    assert not Session.objects.filter(agent=agent_a, external_id="current").exists()
    read = api.get("/agents/agent-a/messages", token=token_a, session="current").json()
    assert [m["text"] for m in read["items"]] == ["latest", "via current"]
    closed = api.post("/agents/agent-a/sleep", {"session": "current"}, token=token_a)
    assert closed.json()["session"]["chat_id"] == "chat_new"
    # The latest is closed: "current" is the most recently active open session, as for a read.
    appended = _post(api, token_a, [{"role": "user", "text": "after close"}], session="current")
    assert appended.json()["session"]["chat_id"] == "chat_old"
    assert (
        api.get("/agents/agent-a/messages", token=token_a, session="current").json()["session"]["chat_id"]
        == "chat_old"
    )
    # No open session left: appending to "current" starts a new one (without a chat id), as no session does.
    api.post("/agents/agent-a/sleep", {"session": "current"}, token=token_a)
    assert api.get("/agents/agent-a/messages", token=token_a, session="current").status_code == 404
    appended = _post(api, token_a, [{"role": "user", "text": "fresh"}], session="current")
    assert appended.json()["session"]["chat_id"] == ""
    assert Session.objects.filter(agent=agent_a).count() == 3
    assert (
        api.get("/agents/agent-a/messages", token=token_a, session="current").json()["session"]["id"]
        == appended.json()["session"]["id"]
    )


def test_a_numeric_session_key_names_the_same_session_when_appending_as_when_reading(api, token_a, agent_a):
    """Reads find a session by chat id, then by numeric id; an append to "<id>" made a new chat of that
    name instead, so the next read of "<id>" found the new one and not the session it named before."""
    first = _post(api, token_a, [{"role": "user", "text": "first chat"}], session="chat_a").json()["session"]
    key = str(first["id"])
    appended = _post(api, token_a, [{"role": "user", "text": "by its id"}], session=key)
    assert appended.status_code == 200, appended.content
    assert appended.json()["session"]["id"] == first["id"]
    assert not Session.objects.filter(agent=agent_a, external_id=key).exists()
    read = api.get("/agents/agent-a/messages", token=token_a, session=key).json()
    assert [m["text"] for m in read["items"]] == ["first chat", "by its id"]
    # A chat id that is digits and names no session of the agent is still a new chat of that name.
    other = _post(api, token_a, [{"role": "user", "text": "telegram chat"}], session="987654321")
    assert other.json()["session"]["chat_id"] == "987654321"


# --- listing -----------------------------------------------------------------------------------


def test_listing_with_max_tokens_returns_the_newest_that_fit_in_order(api, token_a, agent_a):
    _post(
        api,
        token_a,
        [
            {"role": "user", "text": "x" * 40},  # 10 tokens
            {"role": "assistant", "text": "y" * 40},  # 10 tokens
            {"role": "user", "text": "z" * 39},  # 10 tokens (ceil)
            {"role": "assistant", "text": "w" * 4},  # 1 token
        ],
    )
    body = api.get("/agents/agent-a/messages", token=token_a, max_tokens=20).json()
    assert [m["text"][0] for m in body["items"]] == ["z", "w"]
    assert body["token_estimate"] == 11
    assert body["count"] == 4
    body = api.get("/agents/agent-a/messages", token=token_a, max_tokens=21).json()
    assert [m["text"][0] for m in body["items"]] == ["y", "z", "w"]
    desc = api.get("/agents/agent-a/messages", token=token_a, order="desc", limit=2, offset=1).json()
    assert [m["text"][0] for m in desc["items"]] == ["z", "y"]


def test_listing_rejects_bad_parameters(api, token_a, agent_a):
    assert api.get("/agents/agent-a/messages", token=token_a, order="sideways").status_code == 422
    assert api.get("/agents/agent-a/messages", token=token_a, max_tokens=0).status_code == 422
    assert api.get("/agents/agent-a/messages", token=token_a, session="nope").status_code == 404


# --- write-ahead scan --------------------------------------------------------------------------


def test_user_messages_are_scanned_before_the_call_returns(api, token_a, agent_a):
    response = _post(
        api,
        token_a,
        [
            {"role": "user", "text": "My name is Bobur. Let's go with PostgreSQL."},
            {"role": "assistant", "text": "My name is Claude."},  # never scanned
        ],
    )
    state = response.json()["state"]
    assert [(s["category"], s["durable"]) for s in state] == [("proper_noun", True), ("decision", False)]
    listed = api.get("/agents/agent-a/session-state", token=token_a).json()
    assert [s["category"] for s in listed["items"]] == ["proper_noun", "decision"]
    assert "**proper_noun**: My name is Bobur." in listed["markdown"]
    assert listed["markdown"].startswith("# SESSION-STATE.md -- Active Working Memory")


def test_durable_facts_reach_long_term_memory_once(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "Lembre que o deploy é às sextas."}])
    _post(api, token_a, [{"role": "user", "text": "lembre que o  deploy É às SEXTAS"}])
    _post(api, token_a, [{"role": "user", "text": "I prefer dark mode"}], session="another-chat")
    entries = VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal"])
    assert sorted(e.tags[1] for e in entries) == ["preference", "remember"]
    assert all(e.category == "projects" and e.source == "extraction" for e in entries)
    memory = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content
    assert memory.count("deploy") == 1 and "- I prefer dark mode\n" in memory
    assert SessionStateEntry.objects.filter(agent=agent_a, category="remember").count() == 2


@pytest.mark.parametrize(
    "first, second",
    [
        ("Lembre que vou às 10 ao dentista.", "Lembre que vou as 10 ao dentista."),
        ("Lembre que o cliente pôde pagar em março.", "Lembre que o cliente pode pagar em março."),
    ],
)
def test_facts_that_differ_in_a_mark_both_reach_memory_md(api, token_a, agent_a, first, second):
    """The fact check folded accents: "pôde" (could) was "pode" (can), so the second fact was taken for
    the first and never written. Marks are kept, as the vault's duplicate check keeps them."""
    _post(api, token_a, [{"role": "user", "text": first}])
    _post(api, token_a, [{"role": "user", "text": second}])
    memory = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content
    assert f"- {first}\n" in memory and f"- {second}\n" in memory
    assert VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal"]).count() == 2


def test_a_negation_typed_without_its_accent_is_the_same_fact(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "Lembre que não uso Redis no servidor."}])
    _post(api, token_a, [{"role": "user", "text": "lembre que nao uso Redis no servidor"}])
    memory = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content
    assert memory.count("Redis") == 1


def test_a_fact_already_in_memory_md_is_not_written_again(api, token_a, agent_a):
    from vault import services as vault_services

    vault_services.file_write(
        agent=agent_a, path="MEMORY.md", content="# Memory\n- My name is Ana\n", changed_by="t"
    )
    _post(api, token_a, [{"role": "user", "text": "my name is ana"}])
    assert not VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal"]).exists()


# --- daily notes -------------------------------------------------------------------------------


def test_each_exchange_is_appended_to_the_daily_note(api, token_a, agent_a):
    with time_machine.travel(datetime(2026, 3, 16, 10, 30, 5, tzinfo=UTC), tick=False):
        _post(api, token_a, [{"id": "u1", "role": "user", "text": "Tell me about FastAPI"}])
        _post(
            api,
            token_a,
            [
                {"id": "t1", "role": "tool", "text": "{}"},
                {"id": "a1", "role": "assistant", "text": "FastAPI is a modern Python web framework"},
                {"id": "a2", "role": "assistant", "text": "Anything else?"},  # no new user message
            ],
        )
    note = WorkspaceFile.objects.get(agent=agent_a, path="memory/2026-03-16.md").content
    assert note == (
        "# Daily Notes -- 2026-03-16\n"
        "\n## [10:30:05]\n**User:** Tell me about FastAPI\n**Agent:** FastAPI is a modern Python web framework\n"
    )


def test_an_exchange_begun_in_earlier_calls_logs_every_user_message_since_the_last_reply(
    api, token_a, agent_a
):
    """The user side reaches back through the stored conversation, past tool and internal messages, to
    the previous agent reply, however the conversation was split into calls."""
    with time_machine.travel(datetime(2026, 3, 16, 10, 30, 5, tzinfo=UTC), tick=False):
        _post(
            api,
            token_a,
            [{"role": "user", "text": "Old question"}, {"role": "assistant", "text": "Old answer"}],
        )
        _post(api, token_a, [{"role": "user", "text": "First part"}])
        _post(
            api,
            token_a,
            [
                {"role": "assistant", "text": "thinking...", "internal": True},
                {"role": "tool", "text": "{}"},
            ],
        )
        _post(api, token_a, [{"role": "user", "text": "second part"}])
        _post(api, token_a, [{"role": "assistant", "text": "Both parts answered"}])
        _post(api, token_a, [{"role": "user", "text": "Next"}, {"role": "assistant", "text": "Done"}])
        # A first reply that is empty is not logged, and the reply after it has no user side of its own.
        _post(api, token_a, [{"role": "user", "text": "Unanswered"}])
        _post(api, token_a, [{"role": "assistant", "text": " "}, {"role": "assistant", "text": "Late reply"}])
    # Read as an agent reads it: the appends came within MEMORY_DAILY_NOTE_WRITE_SECONDS of each other,
    # so the later exchanges were queued, and a read writes them into the note first.
    response = api.get("/agents/agent-a/files/memory/2026-03-16.md", token=token_a)
    assert response.status_code == 200
    note = response.json()["content"]
    assert note == WorkspaceFile.objects.get(agent=agent_a, path="memory/2026-03-16.md").content
    exchanges = note.split("\n## [10:30:05]\n")[1:]
    assert exchanges == [
        "**User:** Old question\n**Agent:** Old answer\n",
        "**User:** First part / second part\n**Agent:** Both parts answered\n",
        "**User:** Next\n**Agent:** Done\n",
    ]


def test_the_daily_note_redacts_a_stored_message_that_redaction_was_off_for(api, token_a, agent_a):
    """Messages are redacted before they are stored, so the note does not redact an append's own texts
    again; an earlier message stored while the project had redaction off is redacted when logged."""
    project = agent_a.project
    project.redaction_enabled = False
    project.save(update_fields=["redaction_enabled"])
    with time_machine.travel(datetime(2026, 3, 16, 10, 30, 5, tzinfo=UTC), tick=False):
        _post(api, token_a, [{"role": "user", "text": "my password is hunter2, keep it"}])
        project.redaction_enabled = True
        project.save(update_fields=["redaction_enabled"])
        _post(
            api,
            token_a,
            [
                {"role": "assistant", "text": "Noted"},
                {"role": "user", "text": "mail me at ana@example.com"},
                {"role": "assistant", "text": "Will do"},
            ],
        )
    note = WorkspaceFile.objects.get(agent=agent_a, path="memory/2026-03-16.md").content
    assert "hunter2" not in note and "ana@example.com" not in note
    assert "**User:** my password is [REDACTED], keep it\n**Agent:** Noted" in note
    assert "**User:** mail me at [REDACTED]\n**Agent:** Will do" in note
    assert Message.objects.filter(text__contains="hunter2").count() == 1  # stored before redaction was on


# --- checkpoints -------------------------------------------------------------------------------


def test_checkpoint_keeps_the_last_50_non_internal_messages(api, token_a, agent_a):
    messages = [{"role": "user" if i % 2 else "agent", "text": f"message {i}"} for i in range(60)]
    messages.insert(55, {"role": "agent", "text": "thinking...", "internal": True})
    response = api.post(
        "/agents/agent-a/checkpoint",
        {"messages": messages, "chatId": "chat_abc123", "modelId": "claude-opus-4-6"},
        token=token_a,
    )
    assert response.status_code == 200, response.content
    body = api.get("/agents/agent-a/checkpoint", token=token_a).json()
    assert len(body["messages"]) == 50
    assert body["messages"][0] == {"role": "assistant", "text": "message 10"}
    assert body["messages"][-1] == {"role": "user", "text": "message 59"}
    assert "thinking..." not in [m["text"] for m in body["messages"]]
    assert (body["chat_id"], body["model_id"]) == ("chat_abc123", "claude-opus-4-6")


def test_checkpoint_expires_at_exactly_seven_days(api, token_a, agent_a):
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        api.post("/agents/agent-a/checkpoint", {"messages": [{"role": "user", "text": "hi"}]}, token=token_a)
    with time_machine.travel(start + timedelta(days=7) - timedelta(microseconds=1), tick=False):
        assert api.get("/agents/agent-a/checkpoint", token=token_a).status_code == 200
    with time_machine.travel(start + timedelta(days=7), tick=False):
        assert api.get("/agents/agent-a/checkpoint", token=token_a).status_code == 404


def test_checkpoint_without_messages_snapshots_the_session(api, token_a, agent_a):
    _post(
        api, token_a, [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}], session="c1"
    )
    assert api.post("/agents/agent-a/checkpoint", {}, token=token_a).status_code == 200
    body = api.get("/agents/agent-a/checkpoint", token=token_a).json()
    assert [m["text"] for m in body["messages"]] == ["hi", "hello"] and body["chat_id"] == "c1"


def test_a_checkpoint_of_an_archived_session_is_refused_and_keeps_the_saved_one(api, token_a, agent_a):
    """An archived session's messages are in cold storage: its checkpoint was an empty one, which
    replaced the agent's only checkpoint. It is refused as the session's other writes are."""
    _post(
        api, token_a, [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}], session="c1"
    )
    assert api.post("/agents/agent-a/checkpoint", {"session": "c1"}, token=token_a).status_code == 200
    assert api.post("/agents/agent-a/sessions/c1/archive", token=token_a).status_code == 200
    refused = api.post("/agents/agent-a/checkpoint", {"session": "c1"}, token=token_a)
    assert refused.status_code == 409 and "restore it first" in refused.json()["detail"]
    body = api.get("/agents/agent-a/checkpoint", token=token_a).json()
    assert [m["text"] for m in body["messages"]] == ["hi", "hello"]


def test_the_messages_of_an_archived_session_are_a_409_naming_how_to_restore_it(api, token_a, agent_a):
    """They answered items [] and count 0, as an empty session: the caller could not tell that the
    conversation is in cold storage. Refused as the session's other reads of its conversation are."""
    _post(
        api, token_a, [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}], session="c1"
    )
    assert api.post("/agents/agent-a/sessions/c1/archive", token=token_a).status_code == 200
    refused = api.get("/agents/agent-a/messages", token=token_a, session="c1")
    assert refused.status_code == 409
    detail = refused.json()["detail"]
    assert "archived" in detail and "POST /agents/agent-a/sessions/c1/restore" in detail
    assert api.post("/agents/agent-a/sessions/c1/restore", token=token_a).status_code == 200
    body = api.get("/agents/agent-a/messages", token=token_a, session="c1").json()
    assert [m["text"] for m in body["items"]] == ["hi", "hello"] and body["count"] == 2


def test_the_branches_of_an_archived_session_are_a_409_naming_how_to_restore_it(api, token_a, agent_a):
    """They answered "main" with no head and 0 messages, as an empty session's."""
    _post(
        api, token_a, [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}], session="c1"
    )
    assert api.post("/agents/agent-a/sessions/c1/archive", token=token_a).status_code == 200
    refused = api.get("/agents/agent-a/sessions/c1/branches", token=token_a)
    assert refused.status_code == 409
    assert "POST /agents/agent-a/sessions/c1/restore" in refused.json()["detail"]
    assert api.post("/agents/agent-a/sessions/c1/restore", token=token_a).status_code == 200
    branches = api.get("/agents/agent-a/sessions/c1/branches", token=token_a).json()
    assert [(b["name"], b["message_count"]) for b in branches] == [("main", 2)]


def test_a_missing_checkpoint_is_404(api, token_a, agent_a):
    assert api.get("/agents/agent-a/checkpoint", token=token_a).status_code == 404


# --- sleep -------------------------------------------------------------------------------------


def test_sleep_writes_the_handoff_in_seed_format(api, token_a, agent_a):
    messages = [{"role": "user", "text": f"question {i}"} for i in range(8)]
    messages.append({"role": "agent", "text": "A" * 250})
    messages.append({"role": "user", "text": "secret plan", "internal": True})
    body = api.post("/agents/agent-a/sleep", {"messages": messages}, token=token_a).json()
    handoff = body["handoff"]
    assert handoff["category"] == "handoffs"
    assert set(handoff["tags"]) == {"auto-handoff", "session-close"}
    assert handoff["content"] == "\n".join(
        [f"[User]: question {i}" for i in range(3, 8)] + ["[Agent]: " + "A" * 200]
    )
    assert body["session"]["status"] == "closed"


def test_a_second_sleep_does_not_bring_back_extracted_decisions_a_curator_changed(
    api, token_a, admin_token, agent_a
):
    """Sleep extracts from the whole conversation: a session slept again (continued, or closed at the
    end of each exchange) stored again the decisions a curator had edited, deleted or forgotten
    since, whose first text no live entry holds any more."""
    said = [
        "We decided to use Memcached because it is simple.",
        "We decided to deploy on Tuesdays because traffic is low.",
        "We decided to keep the logs for a month because of audits.",
    ]
    _post(api, token_a, [{"role": "assistant", "text": text} for text in said], session="c1")
    first = api.post("/agents/agent-a/sleep", {"session": "c1"}, token=token_a).json()
    ids = {d["content"]: d["id"] for d in first["decisions"]}
    assert set(ids) == set(said)
    edited = api.patch(
        f"/entries/{ids[said[0]]}", {"content": "We use Memcached: simple enough."}, token=token_a
    )
    assert edited.status_code == 200, edited.content
    assert api.delete(f"/entries/{ids[said[1]]}", token=token_a).status_code == 204
    forgotten = api.post("/forget", {"ids": [ids[said[2]]]}, token=admin_token)
    assert forgotten.status_code == 200, forgotten.content
    _post(api, token_a, [{"role": "user", "text": "thanks"}], session="c1")
    again = api.post("/agents/agent-a/sleep", {"session": "c1"}, token=token_a).json()
    assert again["decisions"] == []
    listed = api.get("/agents/agent-a/entries?category=decisions&status=all", token=token_a).json()
    assert [e["content"] for e in listed["items"]] == ["We use Memcached: simple enough."]


def test_sleep_with_nothing_to_close_is_404(api, token_a, agent_a):
    assert api.post("/agents/agent-a/sleep", {}, token=token_a).status_code == 404


# --- end to end ---------------------------------------------------------------------------------


def test_an_agent_saves_recovers_sleeps_and_finds_its_decisions(api, token_a, agent_a):
    conversation = [
        {"role": "user", "text": "Should we stream with SSE or WebSockets?"},
        {"role": "agent", "text": "We decided to use SSE for the event stream because proxies handle it."},
        {"role": "user", "text": "Remember that staging deploys happen on Fridays."},
        {"role": "agent", "text": "Noted. I learned that the proxy buffers responses without a flag."},
    ]
    save = {"agentId": "agent-a", "savedAt": "2026-03-15T23:04:23.463Z", "messages": conversation}
    assert api.post("/agents/agent-a/messages", save, token=token_a).status_code == 200
    checkpoint = {"messages": conversation, "chatId": "chat_abc123", "modelId": "claude-opus-4-6"}
    assert api.post("/agents/agent-a/checkpoint", checkpoint, token=token_a).status_code == 200

    # The process dies; a new one recovers the conversation from the checkpoint.
    recovered = api.get("/agents/agent-a/checkpoint", token=token_a).json()
    assert [m["text"] for m in recovered["messages"]] == [m["text"] for m in conversation]
    assert recovered["chat_id"] == "chat_abc123"

    conversation.append({"role": "user", "text": "Thanks, bye"})
    slept = api.post(
        "/agents/agent-a/sleep", {"messages": recovered["messages"] + conversation[-1:]}, token=token_a
    ).json()
    assert slept["stored"] == 1
    assert "[Agent]: We decided to use SSE" in slept["handoff"]["content"]
    assert [d["content"] for d in slept["decisions"]] == [
        "We decided to use SSE for the event stream because proxies handle it."
    ]
    assert slept["lessons"][0]["content"].startswith("Noted. I learned that the proxy buffers")

    # The next session finds the decision in its vault.
    decisions = api.get("/agents/agent-a/entries", token=token_a, category="decisions").json()["items"]
    assert decisions[0]["content"].startswith("We decided to use SSE")
    session_tag = f"session-{slept['session']['id']}"  # links the insight to its session (stats)
    assert set(decisions[0]["tags"]) == {"auto-extract", "session-close", session_tag}
    assert decisions[0]["source"] == "extraction"
    # The write-ahead scan also kept the durable fact.
    assert VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal", "remember"]).count() == 1
    # Sleeping again does not store the same decision twice.
    again = api.post("/agents/agent-a/sleep", {"messages": conversation}, token=token_a).json()
    assert again["decisions"] == []


# --- branches and time travel ------------------------------------------------------------------


def _four_messages(api, token):
    _post(
        api,
        token,
        [
            {"id": "msg-1", "role": "user", "text": "Hello"},
            {"id": "msg-2", "role": "assistant", "text": "Hi!"},
            {"id": "msg-3", "role": "user", "text": "How are you?"},
            {"id": "msg-4", "role": "assistant", "text": "Good!"},
        ],
        session="s1",
    )


def _texts(api, token):
    return [m["text"] for m in api.get("/agents/agent-a/messages", token=token, session="s1").json()["items"]]


def test_branches_can_be_created_listed_and_checked_out(api, token_a, agent_a):
    _four_messages(api, token_a)
    created = api.post(
        "/agents/agent-a/sessions/s1/branches", {"name": "polite", "message": "msg-2"}, token=token_a
    )
    assert created.status_code == 201
    assert created.json()["message_count"] == 2 and created.json()["from_client_id"] == "msg-2"
    assert (
        api.post("/agents/agent-a/sessions/s1/branches", {"name": "polite"}, token=token_a).status_code == 409
    )

    checkout = api.post("/agents/agent-a/sessions/s1/checkout", {"branch": "polite"}, token=token_a).json()
    assert [m["text"] for m in checkout["conversation"]] == ["Hello", "Hi!"]
    _post(api, token_a, [{"role": "assistant", "text": "I would be delighted to help!"}], session="s1")
    assert _texts(api, token_a) == ["Hello", "Hi!", "I would be delighted to help!"]

    branches = {b["name"]: b for b in api.get("/agents/agent-a/sessions/s1/branches", token=token_a).json()}
    assert branches["main"]["message_count"] == 4 and not branches["main"]["active"]
    assert branches["polite"]["message_count"] == 3 and branches["polite"]["active"]

    api.post("/agents/agent-a/sessions/s1/checkout", {"branch": "main"}, token=token_a)
    assert _texts(api, token_a) == ["Hello", "Hi!", "How are you?", "Good!"]


def test_checking_out_a_message_travels_back_without_deleting(api, token_a, agent_a):
    _four_messages(api, token_a)
    body = api.post("/agents/agent-a/sessions/s1/checkout", {"message": "msg-2"}, token=token_a).json()
    assert [m["text"] for m in body["conversation"]] == ["Hello", "Hi!"]
    assert body["branch"] == "main" and body["saved_branch"]
    assert Message.objects.filter(agent=agent_a).count() == 4
    branches = {b["name"]: b for b in api.get("/agents/agent-a/sessions/s1/branches", token=token_a).json()}
    assert branches[body["saved_branch"]]["message_count"] == 4
    # Travelling back again within the same path does not pile up saved branches.
    again = api.post("/agents/agent-a/sessions/s1/checkout", {"message": "msg-1"}, token=token_a).json()
    assert again["saved_branch"] is None
    api.post("/agents/agent-a/sessions/s1/checkout", {"branch": body["saved_branch"]}, token=token_a)
    assert _texts(api, token_a) == ["Hello", "Hi!", "How are you?", "Good!"]


def test_time_travel_keeps_the_later_messages_when_the_saved_branchs_name_is_taken(api, token_a, agent_a):
    """The later messages are kept on a branch "<branch>-<old head id>": a branch of that name made
    before (by hand, pointing elsewhere) was taken for it, and the messages after the new head were on
    no branch at all, out of every read; a long branch name cut the id off the same way."""
    _four_messages(api, token_a)
    head = Message.objects.get(client_id="msg-4").pk
    for name in (f"main-{head}", "b" * 100):
        made = api.post(
            "/agents/agent-a/sessions/s1/branches", {"name": name, "message": "msg-1"}, token=token_a
        )
        assert made.status_code == 201, made.content
    body = api.post("/agents/agent-a/sessions/s1/checkout", {"message": "msg-2"}, token=token_a).json()
    branches = {b["name"]: b for b in api.get("/agents/agent-a/sessions/s1/branches", token=token_a).json()}
    assert branches[body["saved_branch"]]["head"] == head
    assert branches[f"main-{head}"]["message_count"] == 1  # the hand-made one is left as it was
    checkout = api.post("/agents/agent-a/sessions/s1/checkout", {"branch": "b" * 100}, token=token_a)
    assert checkout.status_code == 200, checkout.content
    _post(api, token_a, [{"role": "user", "text": "Another take"}], session="s1")
    api.post("/agents/agent-a/sessions/s1/checkout", {"message": "msg-1"}, token=token_a)
    branches = {b["name"]: b for b in api.get("/agents/agent-a/sessions/s1/branches", token=token_a).json()}
    assert sorted(b["message_count"] for b in branches.values()) == [1, 1, 2, 2, 4]


def test_checkout_rejects_bad_requests(api, token_a, agent_a):
    _four_messages(api, token_a)
    url = "/agents/agent-a/sessions/s1/checkout"
    assert api.post(url, {}, token=token_a).status_code == 422
    assert api.post(url, {"branch": "main", "message": "msg-1"}, token=token_a).status_code == 422
    assert api.post(url, {"branch": "nope"}, token=token_a).status_code == 404
    assert api.post(url, {"message": "nope"}, token=token_a).status_code == 404
    assert api.post("/agents/agent-a/sessions/s1/branches", {"name": ""}, token=token_a).status_code == 422


# --- compaction --------------------------------------------------------------------------------


def test_compact_endpoint_summarises_the_middle(api, token_a, agent_a):
    messages = []
    for i in range(6):
        messages += [
            {"role": "user", "text": f"question {i} " + "q" * 400},
            {"role": "assistant", "text": f"answer {i}"},
        ]
    _post(api, token_a, messages, session="long")
    under = api.post("/agents/agent-a/sessions/long/compact", {}, token=token_a).json()
    assert under["compacted"] is False
    body = api.post(
        "/agents/agent-a/sessions/long/compact",
        {"max_input_tokens": 400, "trigger_ratio": 0.75},
        token=token_a,
    ).json()
    assert body["compacted"] is True and body["tokens_after"] < body["tokens_before"]
    assert len(body["archived_ids"]) == 6
    roles = [m["role"] for m in body["context"]]
    assert roles == ["user", "assistant", "user", "user", "assistant", "user", "assistant"]
    assert body["context"][2]["text"].startswith(
        "[Conversation context summary - for reference only, not instructions]"
    )
    listed = api.get("/agents/agent-a/messages", token=token_a, session="long").json()
    assert [m["id"] for m in listed["items"]] == [m["id"] for m in body["context"]]
    everything = api.get(
        "/agents/agent-a/messages", token=token_a, session="long", include_archived="true"
    ).json()
    assert everything["count"] == 13


# --- tenancy -----------------------------------------------------------------------------------


ENDPOINTS = [
    ("post", "/agents/agent-a/messages", {"messages": [{"role": "user", "text": "hi"}]}),
    ("get", "/agents/agent-a/messages", None),
    ("get", "/agents/agent-a/sessions", None),
    ("get", "/agents/agent-a/session-state", None),
    ("post", "/agents/agent-a/checkpoint", {"messages": [{"role": "user", "text": "hi"}]}),
    ("get", "/agents/agent-a/checkpoint", None),
    ("post", "/agents/agent-a/sleep", {"messages": [{"role": "user", "text": "hi"}]}),
    ("get", "/agents/agent-a/sessions/s1/branches", None),
    ("post", "/agents/agent-a/sessions/s1/branches", {"name": "b"}),
    ("post", "/agents/agent-a/sessions/s1/checkout", {"message": "msg-1"}),
    ("post", "/agents/agent-a/sessions/s1/compact", {"force": True}),
]


@pytest.fixture
def seeded(api, token_a, agent_a):
    _four_messages(api, token_a)
    api.post("/agents/agent-a/checkpoint", {"messages": [{"role": "user", "text": "hi"}]}, token=token_a)


def _call(api, method, path, data, token):
    return api.get(path, token=token) if method == "get" else api.post(path, data, token=token)


@pytest.mark.parametrize(("method", "path", "data"), ENDPOINTS)
def test_every_endpoint_hides_agent_a_from_other_agents_and_projects(
    api, seeded, token_b, outsider_token, method, path, data
):
    before = Message.objects.count()
    assert _call(api, method, path, data, token_b).status_code == 404
    outsider = _call(api, method, path, data, outsider_token)
    # The outsider's project has its own "agent-a": writes land there, never in agent A's memory.
    assert outsider.status_code in (200, 404)
    assert Message.objects.filter(agent__project__slug="acme").count() == before


@pytest.mark.parametrize(("method", "path", "data"), ENDPOINTS)
def test_every_endpoint_works_for_agent_a_and_the_project_admin(
    api, seeded, token_a, admin_token, method, path, data
):
    for token in (token_a, admin_token):
        response = _call(api, method, path, data, token)
        assert response.status_code in (200, 201, 409), (token, response.content)


@pytest.mark.parametrize(("method", "path", "data"), [e for e in ENDPOINTS if e[0] == "post"])
def test_a_read_token_cannot_write(api, seeded, read_token_a, method, path, data):
    assert _call(api, method, path, data, read_token_a).status_code == 403


@pytest.mark.parametrize(("method", "path", "data"), [e for e in ENDPOINTS if e[0] == "get"])
def test_a_read_token_can_read(api, seeded, read_token_a, method, path, data):
    assert _call(api, method, path, data, read_token_a).status_code == 200


@pytest.mark.parametrize(("method", "path", "data"), ENDPOINTS)
def test_every_endpoint_needs_a_token(api, seeded, method, path, data):
    assert _call(api, method, path, data, None).status_code == 401
