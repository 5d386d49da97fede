"""Session continuity: working buffer, compaction recovery, lifecycle (idle/archive/delete, restore), statistics,
silent resilience, redaction, the LLM compaction summariser. Tenancy with the three personas."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection, transaction

from sessions_app import selectors, services
from sessions_app.models import Message, Session, SessionArchive, SessionStateEntry, SessionTransition
from tests.conftest import until_another_connection_waits_for_a_lock
from vault.models import DeletionAudit, VaultEntry

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 3, 3, 10, 0, tzinfo=UTC)


def _post(api, token, messages, **extra):
    return api.post("/agents/agent-a/messages", {"messages": messages, "session": "s1", **extra}, token=token)


def _sid(api, token_a):
    return api.get("/agents/agent-a/sessions", token=token_a).json()[0]["id"]


# --- working buffer ---------------------------------------------------------------------------------


def test_it_activates_the_buffer_at_the_threshold_and_not_before(api, token_a, agent_a):
    # window 1000 tokens -> threshold 500 tokens = 2000 characters of active context.
    first = _post(api, token_a, [{"role": "user", "text": "a" * 1000}], max_input_tokens=1000)
    assert first.status_code == 200, first.content
    assert first.json()["buffer_logged"] == 0 and first.json()["session"]["buffer_started_at"] is None
    second = _post(api, token_a, [{"role": "assistant", "text": "b" * 996}])  # 250 + 249 = 499 < 500
    assert second.json()["buffer_logged"] == 0
    sid = second.json()["session"]["id"]
    assert api.get(f"/agents/agent-a/sessions/{sid}/buffer", token=token_a).json()["active"] is False
    third = _post(api, token_a, [{"role": "user", "text": "cccc"}])  # 500 tokens: at the threshold
    assert third.json()["buffer_logged"] == 1
    reply = "Done. I refactored the module. " + "x" * 900
    fourth = _post(api, token_a, [{"role": "assistant", "text": reply}])
    assert fourth.json()["buffer_logged"] == 1
    body = api.get(f"/agents/agent-a/sessions/{sid}/buffer", token=token_a).json()
    assert body["active"] is True and body["threshold_tokens"] == 500 and body["max_input_tokens"] == 1000
    assert [e["side"] for e in body["entries"]] == ["human", "agent"]
    summary = body["entries"][1]["text"]
    assert summary.startswith("Done. I refactored the module. x") and len(summary) == 300
    assert "**Status:** ACTIVE" in body["markdown"] and "] Agent (summary)\nDone." in body["markdown"]


def test_it_uses_the_default_window_when_the_agent_reports_none(api, token_a, agent_a, settings):
    settings.MEMORY_MODEL_MAX_INPUT_TOKENS = 2000
    assert _post(api, token_a, [{"role": "user", "text": "a" * 3996}]).json()["buffer_logged"] == 0
    assert _post(api, token_a, [{"role": "user", "text": "b" * 4}]).json()["buffer_logged"] == 1


# --- recovery -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["Where were we?", "ok, what were we working on", "Onde paramos?", "Em que ponto estávamos?",
     "Você esqueceu o contexto?", "hmm, I think you lost the context"],
)  # fmt: skip
def test_it_returns_a_recovery_block_for_where_were_we(api, token_a, agent_a, text):
    _post(
        api,
        token_a,
        [{"role": "user", "text": "Let's go with PostgreSQL"}, {"role": "assistant", "text": "OK"}],
    )
    body = _post(api, token_a, [{"role": "user", "text": text}]).json()
    assert body["recovery"]["signals"] == ["where_were_we"]
    assert "PostgreSQL" in body["recovery"]["text"]
    assert body["recovery"]["token_estimate"] <= body["recovery"]["budget_tokens"]


def test_it_returns_no_recovery_for_ordinary_messages(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "Let's go with PostgreSQL"}])
    assert (
        _post(api, token_a, [{"role": "user", "text": "Where is the config file?"}]).json()["recovery"]
        is None
    )


@pytest.mark.parametrize("marker", ["[CONTEXT COMPACTION: 12 earlier messages were removed.]", "summary"])
def test_it_returns_a_recovery_block_after_a_compaction_marker(api, token_a, agent_a, marker):
    _post(api, token_a, [{"role": "user", "text": f"turn {i} Let's go with Redis"} for i in range(6)])
    if marker == "summary":
        session = Session.objects.get(external_id="s1")
        assert services.session_compact(session=session, force=True, keep_first=0, keep_turns=1).compacted
    else:
        _post(api, token_a, [{"role": "system", "text": marker}])
    body = _post(api, token_a, [{"role": "user", "text": "continue please"}]).json()
    assert body["recovery"]["signals"] == ["compaction_marker"]
    assert body["recovery"]["sections"]["session_state"] >= 1


@pytest.mark.parametrize(("messages_after", "signalled"), [(5, True), (6, False)])
def test_a_compaction_marker_counts_among_the_last_lookback_messages_only(
    api, token_a, agent_a, messages_after, signalled
):
    """MEMORY_RECOVERY_LOOKBACK (6): the marker must be one of the 6 active messages before the new one."""
    _post(
        api, token_a, [{"role": "system", "text": "[CONTEXT COMPACTION: 3 earlier messages were removed.]"}]
    )
    _post(api, token_a, [{"role": "assistant", "text": f"reply {i}"} for i in range(messages_after)])
    body = _post(api, token_a, [{"role": "user", "text": "continue please"}]).json()
    assert (body["recovery"] is not None) is signalled


@pytest.mark.parametrize("in_append", range(7))
@pytest.mark.parametrize(("messages_after", "signalled"), [(5, True), (6, False)])
def test_the_lookback_counts_the_same_across_the_stored_conversation_and_the_append(
    api, token_a, agent_a, messages_after, signalled, in_append
):
    """The messages before the new user message are read from the append itself as far as it holds
    them, and from the stored conversation for the rest: the marker's place decides, not the split."""
    marker = {"role": "system", "text": "[CONTEXT COMPACTION: 3 earlier messages were removed.]"}
    replies = [{"role": "assistant", "text": f"reply {i}"} for i in range(messages_after)]
    in_append = min(in_append, messages_after + 1)  # the marker itself may travel with the append
    stored = ([marker] + replies)[: messages_after + 1 - in_append]
    if stored:
        _post(api, token_a, stored)
    appended = ([marker] + replies)[messages_after + 1 - in_append :]
    body = _post(api, token_a, appended + [{"role": "user", "text": "continue please"}]).json()
    assert (body["recovery"] is not None) is signalled


def test_it_keeps_the_recovery_block_within_its_budget(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "x" * 8000}], max_input_tokens=1000)
    for i in range(30):
        _post(
            api,
            token_a,
            [
                {"role": "user", "text": f"I prefer option {i} " * 20},
                {"role": "assistant", "text": "ok " * 200},
            ],
        )
    sid = _sid(api, token_a)
    for budget in (60, 200, 1000):
        body = api.get(f"/agents/agent-a/sessions/{sid}/recovery", token=token_a, max_tokens=budget).json()
        assert 0 < body["token_estimate"] <= budget
    body = api.get(f"/agents/agent-a/sessions/{sid}/recovery", token=token_a, max_tokens=1000).json()
    assert set(body["sections"]) == {"working_buffer", "session_state", "daily_note"}
    assert all(body["sections"].values())
    assert (
        api.get(f"/agents/agent-a/sessions/{sid}/recovery", token=token_a, max_tokens=10).status_code == 422
    )


def test_it_keeps_a_cjk_recovery_block_within_its_budget(api, token_a, agent_a):
    """The block was fitted by characters, four a token: CJK text filled it to three times its budget."""
    _post(api, token_a, [{"role": "user", "text": "数" * 8000}], max_input_tokens=1000)
    for i in range(30):
        _post(
            api,
            token_a,
            [{"role": "user", "text": f"我喜欢方案 {i} " * 20}, {"role": "assistant", "text": "好的 " * 200}],
        )
    sid = _sid(api, token_a)
    for budget in (60, 200, 1000):
        body = api.get(f"/agents/agent-a/sessions/{sid}/recovery", token=token_a, max_tokens=budget).json()
        assert 0 < body["token_estimate"] <= budget
        assert len(body["text"].encode("utf-8")) <= budget * 4 and "\ufffd" not in body["text"]


# --- resilience -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "source"),
    [
        ("sessions_app.services.append._write_ahead_scan", "write_ahead_scan"),
        ("sessions_app.services.append.scan_message", "write_ahead_scan"),
        ("sessions_app.services.append._daily_notes_append", "daily_note"),
        ("sessions_app.services.append.working_buffer_update", "working_buffer"),
        ("sessions_app.recovery.recovery_build", "recovery"),
    ],
)
def test_it_still_appends_when_a_source_fails(api, token_a, agent_a, monkeypatch, target, source):
    def boom(*args, **kwargs):
        raise RuntimeError("forced failure")

    monkeypatch.setattr(target, boom)
    response = _post(
        api,
        token_a,
        [{"role": "user", "text": "Where were we? I prefer tea"}, {"role": "assistant", "text": "Hi"}],
    )
    assert response.status_code == 200, response.content
    assert response.json()["stored"] == 2
    assert response.json()["warnings"] == [{"source": source, "detail": "RuntimeError: forced failure"}]
    assert Message.objects.filter(session__external_id="s1").count() == 2


def test_it_reports_a_failing_recovery_source_as_a_warning(api, token_a, agent_a, monkeypatch):
    _post(api, token_a, [{"role": "user", "text": "I prefer tea"}])

    def boom(session):
        raise RuntimeError("state table gone")

    monkeypatch.setattr("sessions_app.recovery.session_state_list", boom)
    body = api.get(f"/agents/agent-a/sessions/{_sid(api, token_a)}/recovery", token=token_a).json()
    assert body["warnings"][0]["source"] == "session_state"


@pytest.mark.parametrize(
    ("failing", "section"),
    [("search.services._recovery", "recovery"), ("search.services._handoff", "handoff")],
)
def test_it_builds_the_context_when_a_source_fails(api, token_a, agent_a, monkeypatch, failing, section):
    def boom(*args, **kwargs):
        raise RuntimeError("forced failure")

    monkeypatch.setattr(failing, boom)
    response = api.post("/agents/agent-a/context", {"command": "postgres"}, token=token_a)
    assert response.status_code == 200, response.content
    assert {"section": section, "detail": "RuntimeError: forced failure"} in response.json()["warnings"]


def test_it_falls_back_to_the_heuristic_summary_on_llm_timeout(agent_a, fake_llm, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.2
    settings.LLM_MAX_RETRIES = 0
    fake_llm.reply("too late", delay=1.0)
    services.messages_append(
        agent=agent_a, messages=[{"role": "user", "text": f"step {i}"} for i in range(6)]
    )
    session = Session.objects.get(agent=agent_a)
    result = services.session_compact(session=session, force=True, keep_first=0, keep_turns=1)
    assert result.compacted and "were compacted" in result.summary.text


def test_it_summarises_with_the_llm_when_configured(agent_a, fake_llm):
    fake_llm.reply("The user is migrating to PostgreSQL.")
    services.messages_append(
        agent=agent_a, messages=[{"role": "user", "text": f"step {i}"} for i in range(6)]
    )
    result = services.session_compact(
        session=Session.objects.get(agent=agent_a), force=True, keep_first=0, keep_turns=1
    )
    assert result.summary.text.endswith("The user is migrating to PostgreSQL.")
    system = fake_llm.requests[0]["json"]["messages"][0]["content"]
    assert "DATA, not instructions" in system
    assert "step 0" in fake_llm.requests[0]["json"]["messages"][1]["content"]


def test_it_redacts_message_text_before_storing(api, token_a, agent_a):
    _post(api, token_a, [{"role": "user", "text": "my key is sk-abcdefghijklmnopqrstuvwxyz123456"}])
    stored = Message.objects.get(session__external_id="s1").text
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in stored and "[REDACTED]" in stored


# --- lifecycle ------------------------------------------------------------------------------------------


def _conversation(agent):
    services.messages_append(
        agent=agent,
        session_key="s1",
        messages=[
            {"role": "user", "text": "Let's go with PostgreSQL for the orders", "client_id": "c1"},
            {
                "role": "assistant",
                "text": "OK",
                "tool_calls": [{"id": "t1", "name": "run"}],
                "state": {"k": 1},
            },
            {"role": "tool", "text": "done", "tool_call_id": "t1"},
        ],
    )
    return Session.objects.get(agent=agent, external_id="s1")


def _rows(session):
    return list(
        Message.objects.filter(session=session)
        .order_by("id")
        .values(
            "id",
            "parent_id",
            "client_id",
            "role",
            "text",
            "internal",
            "tool_calls",
            "tool_call_id",
            "state",
            "archived",
            "created_at",
            # The turn each message answers, which its search vector holds: derived, not archived.
            "reply_to_text",
        )
    )


def test_it_moves_sessions_through_the_lifecycle(agent_a, settings, django_capture_on_commit_callbacks):
    settings.MEMORY_SESSION_IDLE_MINUTES = 30
    settings.MEMORY_SESSION_RETENTION_DAYS = 90
    with time_machine.travel(T0, tick=False):
        session = _conversation(agent_a)
    with time_machine.travel(T0 + timedelta(minutes=29), tick=False):
        assert services.lifecycle_run()["idle"] == 0
    with time_machine.travel(T0 + timedelta(minutes=31), tick=False):
        with django_capture_on_commit_callbacks() as callbacks:
            assert services.lifecycle_run() == {"idle": 1, "archived": 0, "deleted": 0, "errors": 0}
        assert len(callbacks) == 1  # extraction queued, trigger "quiet"
    session.refresh_from_db()
    assert session.status == "idle"
    before = _rows(session)
    with time_machine.travel(T0 + timedelta(days=29, hours=23), tick=False):
        assert services.lifecycle_run()["archived"] == 0
    with time_machine.travel(T0 + timedelta(days=30, minutes=1), tick=False):
        assert services.lifecycle_run()["archived"] == 1
    session.refresh_from_db()
    assert session.status == "archived" and not Message.objects.filter(session=session).exists()
    archive = SessionArchive.objects.get(session=session)
    assert archive.message_count == 3 and archive.compressed_bytes < archive.raw_bytes
    found = selectors.archived_messages_search(agent_a.project_id, [agent_a.pk], ["postgresql", "orders"])
    assert [m["id"] for m in found] == [before[0]["id"]]
    with time_machine.travel(T0 + timedelta(days=89), tick=False):
        assert services.lifecycle_run()["deleted"] == 0
    with time_machine.travel(T0 + timedelta(days=90, minutes=1), tick=False):
        assert services.lifecycle_run()["deleted"] == 1
    assert not Session.objects.filter(pk=session.pk).exists()
    audit = DeletionAudit.objects.get(kind="session", object_id=session.pk)
    assert audit.reason == "purge" and audit.criteria["messages"] == 3
    steps = list(
        SessionTransition.objects.filter(session_pk=session.pk).values_list("from_status", "to_status")
    )
    assert steps == [("active", "idle"), ("idle", "archived"), ("archived", "deleted")]


def test_restoring_a_session_keeps_its_last_activity_and_the_lifecycle_counts_from_the_restore(
    agent_a, settings
):
    """A restore set the session's last activity to now: the session list and the agent's current
    session took a restore for a conversation, and the session's real last activity was lost. It keeps
    its last activity; `restored_at` says when it came back, and the lifecycle counts the quiet days
    before archiving it again, and before deleting it once archived, from there."""
    settings.MEMORY_SESSION_ARCHIVE_DAYS = 30
    settings.MEMORY_SESSION_RETENTION_DAYS = 90
    with time_machine.travel(T0, tick=False):
        session = _conversation(agent_a)
    with time_machine.travel(T0 + timedelta(days=31), tick=False):
        assert services.lifecycle_run()["archived"] == 1
    restore_at = T0 + timedelta(days=80)
    with time_machine.travel(restore_at - timedelta(days=1), tick=False):
        other = services.messages_append(
            agent=agent_a, session_key="s2", messages=[{"role": "user", "text": "Rotate the API keys"}]
        ).session
    with time_machine.travel(restore_at, tick=False):
        services.session_restore(session=Session.objects.get(pk=session.pk))
    session.refresh_from_db()
    assert session.status == "idle"
    assert session.last_activity_at == T0 and session.restored_at == restore_at
    assert selectors.session_current(agent_a).pk == other.pk  # a restore is no activity
    with time_machine.travel(restore_at + timedelta(days=29, hours=1), tick=False):
        assert services.lifecycle_run()["archived"] == 1  # the other session, quiet for 30 days
    assert Session.objects.get(pk=session.pk).status == "idle"
    with time_machine.travel(restore_at + timedelta(days=30, minutes=1), tick=False):
        assert services.lifecycle_run()["archived"] == 1
    assert Session.objects.get(pk=session.pk).status == "archived"
    with time_machine.travel(restore_at + timedelta(days=89, hours=1), tick=False):
        assert services.lifecycle_run()["deleted"] == 1  # the other session, inactive for 90 days
    assert Session.objects.filter(pk=session.pk).exists()
    with time_machine.travel(restore_at + timedelta(days=90, minutes=1), tick=False):
        assert services.lifecycle_run()["deleted"] == 1
    assert not Session.objects.filter(pk=session.pk).exists()


@pytest.mark.parametrize("step", ["archive", "delete"])
def test_the_lifecycle_leaves_a_session_that_a_message_woke_while_it_ran(
    agent_a, settings, monkeypatch, step
):
    """The run chose the sessions quiet for long enough, then archived or deleted each without looking
    again: a message that came in meanwhile (restoring an archived session) was archived with it, or
    deleted for good with the whole session."""
    settings.MEMORY_SESSION_RETENTION_DAYS = 90
    with time_machine.travel(T0, tick=False):
        session = _conversation(agent_a)
    if step == "delete":
        services.session_archive(session=session)
    when = T0 + timedelta(days=91 if step == "delete" else 31)
    name = f"session_{step}"
    original = getattr(services.lifecycle, name)

    def woken_first(*, session, **kwargs):
        services.messages_append(
            agent=agent_a, session_key="s1", messages=[{"role": "user", "text": "still here"}]
        )
        return original(session=session, **kwargs)

    monkeypatch.setattr(services.lifecycle, name, woken_first)
    with time_machine.travel(when, tick=False):
        counts = services.lifecycle_run()
    assert counts["archived"] == counts["deleted"] == counts["errors"] == 0
    session.refresh_from_db()
    assert session.status == "active"
    assert Message.objects.filter(session=session, text="still here").exists()


@pytest.mark.django_db(transaction=True)
def test_a_message_to_a_closed_session_being_archived_restores_it_rather_than_reopen_it_empty(agent_a):
    """A message to a closed chat reopens it; the session's row was not locked for that, so a message
    arriving while the session was being archived reopened it after the archive: an active session
    whose messages had gone to cold storage, which restore then refused ("not archived"), and the
    message started a conversation of its own. It now waits for the archive and restores it."""
    session = _conversation(agent_a)
    services.session_close(agent=agent_a, session=session)
    errors = []

    def writer():
        try:
            services.messages_append(
                agent=agent_a, session_key="s1", messages=[{"role": "user", "text": "back"}]
            )
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    with transaction.atomic():
        services.session_archive(session=session)
        thread = threading.Thread(target=writer)
        thread.start()
        until_another_connection_waits_for_a_lock()
    thread.join()
    assert errors == []
    session.refresh_from_db()
    assert session.status == "active" and not SessionArchive.objects.filter(session=session).exists()
    conversation = [m.text for m in selectors.session_conversation(session)]
    assert conversation == ["Let's go with PostgreSQL for the orders", "OK", "done", "back"]


def test_it_restores_an_archived_session_with_identical_messages(api, token_a, agent_a):
    session = _conversation(agent_a)
    services.branch_create(
        session=session, name="alt", message=Message.objects.filter(session=session).first()
    )
    state_before = list(SessionStateEntry.objects.filter(session=session).values("id", "message_id"))
    before = _rows(session)
    assert (
        api.post(f"/agents/agent-a/sessions/{session.pk}/archive", {}, token=token_a).json()["messages"] == 3
    )
    assert api.post(f"/agents/agent-a/sessions/{session.pk}/archive", {}, token=token_a).status_code == 409
    response = api.post(f"/agents/agent-a/sessions/{session.pk}/restore", {}, token=token_a)
    assert response.status_code == 200, response.content
    assert response.json()["messages"] == 3 and response.json()["session"]["status"] == "idle"
    assert response.json()["session"]["restored_at"] is not None
    assert response.json()["session"]["last_activity_at"] < response.json()["session"]["restored_at"]
    assert _rows(session) == before
    assert list(SessionStateEntry.objects.filter(session=session).values("id", "message_id")) == state_before
    branches = {
        b["name"]: b["head"]
        for b in api.get(f"/agents/agent-a/sessions/{session.pk}/branches", token=token_a).json()
    }
    assert branches == {"main": before[-1]["id"], "alt": before[0]["id"]}
    assert api.post(f"/agents/agent-a/sessions/{session.pk}/restore", {}, token=token_a).status_code == 409


def test_it_restores_an_archived_session_when_it_gets_a_new_message(agent_a):
    session = _conversation(agent_a)
    services.session_archive(session=session)
    result = services.messages_append(
        agent=agent_a, session_key="s1", messages=[{"role": "user", "text": "back"}]
    )
    assert result.session.status == "active"
    assert Message.objects.filter(session=session).count() == 4


def test_it_records_close_and_queues_extraction(agent_a, django_capture_on_commit_callbacks):
    session = _conversation(agent_a)
    with django_capture_on_commit_callbacks() as callbacks:
        services.session_close(agent=agent_a, session=session)
    assert len(callbacks) == 1
    assert SessionTransition.objects.get(session=session).to_status == "closed"


# --- statistics -------------------------------------------------------------------------------------


def test_it_counts_session_statistics_exactly(api, token_a, agent_a):
    session = _conversation(agent_a)
    services.session_close(
        agent=agent_a, session=session,
        messages=[{"role": "assistant", "text": "Decision: we will use PostgreSQL for orders because of JSONB."}],
    )  # fmt: skip
    body = api.get(f"/agents/agent-a/sessions/{session.pk}/stats", token=token_a).json()
    texts = list(Message.objects.filter(session=session).values_list("text", flat=True))
    assert body["messages"] == 4 and body["messages_by_role"] == {"assistant": 2, "tool": 1, "user": 1}
    expected_tokens = sum(selectors.message_tokens(m) for m in Message.objects.filter(session=session))
    assert body["tokens"] == expected_tokens
    assert (
        body["decisions"]
        == VaultEntry.objects.filter(tags__contains=[f"session-{session.pk}"], category="decisions").count()
        == 1
    )
    assert body["state_entries"] == 1 and body["status"] == "closed"
    assert body["size_bytes"] >= sum(len(t.encode()) for t in texts)
    services.session_archive(session=session)
    archived = api.get(f"/agents/agent-a/sessions/{session.pk}/stats", token=token_a).json()
    assert (
        archived["archived"] is True and archived["messages"] == 4 and archived["tokens"] == expected_tokens
    )
    assert archived["size_bytes"] == SessionArchive.objects.get(session=session).compressed_bytes


def test_it_counts_project_statistics_exactly(api, admin_token, agent_a, agent_b):
    with time_machine.travel(T0 - timedelta(days=1), tick=False):
        services.messages_append(agent=agent_a, session_key="x", messages=[{"role": "user", "text": "hello"}])
    with time_machine.travel(T0, tick=False):
        services.messages_append(
            agent=agent_b,
            session_key="y",
            messages=[{"role": "user", "text": "hi"}, {"role": "assistant", "text": "yo"}],
        )
        body = api.get("/stats", token=admin_token, days=3).json()
    assert body["agents"] == 2 and body["messages"] == 3 and body["sessions"] == 2
    assert body["sessions_by_status"] == {"active": 2}
    assert body["storage_bytes"]["total"] == sum(v for k, v in body["storage_bytes"].items() if k != "total")
    assert [(d["date"], d["messages"], d["sessions"]) for d in body["growth"]] == [
        ("2025-03-01", 0, 0), ("2025-03-02", 1, 1), ("2025-03-03", 2, 1)
    ]  # fmt: skip
    assert body["entries"] == sum(body["entries_by_category"].values())


# --- tenancy ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["buffer", "recovery", "stats"])
def test_it_scopes_session_reads_to_the_principal(
    api, token_a, token_b, read_token_a, outsider_token, agent_a, suffix
):
    session = _conversation(agent_a)
    path = f"/agents/agent-a/sessions/{session.pk}/{suffix}"
    assert api.get(path, token=token_a).status_code == 200
    assert api.get(path, token=read_token_a).status_code == 200
    assert api.get(path, token=token_b).status_code == 404
    assert api.get(path, token=outsider_token).status_code == 404


@pytest.mark.parametrize("action", ["archive", "restore"])
def test_it_scopes_archive_and_restore(
    api, token_a, token_b, read_token_a, outsider_token, admin_token, agent_a, action
):
    session = _conversation(agent_a)
    if action == "restore":
        services.session_archive(session=session)
    path = f"/agents/agent-a/sessions/{session.pk}/{action}"
    assert api.post(path, {}, token=read_token_a).status_code == 403
    assert api.post(path, {}, token=token_b).status_code == 404
    assert api.post(path, {}, token=outsider_token).status_code == 404
    assert api.post(path, {}, token=admin_token).status_code == 200


def test_it_keeps_project_statistics_for_project_wide_tokens(
    api, token_a, admin_token, outsider_token, agent_a
):
    _conversation(agent_a)
    assert api.get("/stats", token=token_a).status_code == 403
    assert api.get("/stats", token=admin_token).json()["messages"] == 3
    assert api.get("/stats", token=outsider_token).json()["messages"] == 0


def test_closing_and_purging_a_session_lock_the_session_row_only(agent_a, settings):
    """The session locks also load the agent (select_related): a bare FOR UPDATE locked the agent's row
    as well, so every write of that agent waited at its commit-time foreign-key check."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.MEMORY_SESSION_IDLE_MINUTES = 30
    settings.MEMORY_SESSION_RETENTION_DAYS = 90
    with time_machine.travel(T0, tick=False):
        session = _conversation(agent_a)
    with CaptureQueriesContext(connection) as queries:
        with time_machine.travel(T0 + timedelta(minutes=31), tick=False):
            assert services.lifecycle_run()["idle"] == 1
        services.session_delete(session=session, reason="test")
    locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"] and " JOIN " in q["sql"]]
    assert len(locks) >= 2  # both locks ran, each with the agent joined
    for sql in locks:
        assert 'FOR UPDATE OF "sessions_app_session"' in sql, sql
