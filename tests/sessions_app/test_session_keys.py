"""A session named in a body (checkpoint, sleep) is checked as the append checks it."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("checkpoint", {"session": "chat\x00one"}, "session"),
        ("checkpoint", {"chat_id": "chat\x00one"}, "chat_id"),
        ("sleep", {"session": "chat\x00one"}, "session"),
    ],
)
def test_a_nul_in_a_session_key_is_a_422_naming_it(api, token_a, agent_a, path, body, field):
    """A NUL in the session of a checkpoint or a sleep reached PostgreSQL: 400 "A value was rejected by
    the database", naming nothing, where an append's session with a NUL is a 422 naming it."""
    response = api.post(f"/agents/agent-a/{path}", body, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == f"{field} must not contain NUL (\\u0000) characters"
    assert response.json()["errors"][0]["loc"] == [field]


@pytest.mark.parametrize("path", ["messages", "sleep", "checkpoint"])
def test_a_nul_in_the_model_id_is_a_422_naming_it(api, token_a, agent_a, path):
    """The model id is stored on the session or checkpoint: a NUL in it was 400 "A value was rejected by
    the database"."""
    body = {"model_id": "claude\x00", "messages": [{"role": "user", "text": "hi"}]}
    response = api.post(f"/agents/agent-a/{path}", body, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == "model_id must not contain NUL (\\u0000) characters"


def stored_with_key(agent, key: str):
    """A session stored, before keys were checked, under a key holding a control character."""
    from sessions_app.models import Branch, Session

    session = Session.objects.create(project_id=agent.project_id, agent=agent, external_id=key)
    session.active_branch = Branch.objects.create(session=session, name="main")
    session.save(update_fields=["active_branch"])
    return session


@pytest.mark.parametrize("key", ["chat\none", "tab\tkey", "red\x1b[31m", "a\u202egnp", "del\x7f"])
def test_a_control_character_in_a_new_session_key_is_a_422_naming_it(api, token_a, agent_a, key):
    """A newline, a tab, an escape sequence or a right-to-left override in a session key was stored
    and shown raw (session pages, exports, listings), as a file's path no longer may be."""
    from sessions_app.models import Message, Session

    body = {"session": key, "messages": [{"role": "user", "text": "hi"}]}
    response = api.post("/agents/agent-a/messages", body, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == (
        "Invalid input: session: no control characters (newline, tab, escape, bidirectional overrides)"
    )
    assert response.json()["errors"][0]["loc"] == ["session"]
    response = api.post("/agents/agent-a/sleep", body, token=token_a)
    assert response.status_code == 422, response.content
    assert not Session.objects.exists() and not Message.objects.exists()


def test_a_session_stored_under_a_key_with_a_control_character_is_still_read_written_and_closed(
    api, token_a, agent_a
):
    from sessions_app.models import SessionStatus

    old = stored_with_key(agent_a, "legacy\tchat")
    body = {"session": "legacy\tchat", "messages": [{"role": "user", "text": "We ship on Friday"}]}
    appended = api.post("/agents/agent-a/messages", body, token=token_a)
    assert appended.status_code == 200, appended.content
    assert appended.json()["session"]["id"] == old.pk
    read = api.get("/agents/agent-a/messages", token=token_a, session="legacy\tchat")
    assert read.status_code == 200 and [m["text"] for m in read.json()["items"]] == ["We ship on Friday"]
    closed = api.post("/agents/agent-a/sleep", {"session": "legacy\tchat"}, token=token_a)
    assert closed.status_code == 200, closed.content
    old.refresh_from_db()
    assert old.status == SessionStatus.CLOSED
    reopened = api.post(
        "/agents/agent-a/messages", body | {"messages": [{"role": "user", "text": "x"}]}, token=token_a
    )
    assert reopened.status_code == 200, reopened.content
    assert reopened.json()["session"]["id"] == old.pk


@pytest.mark.parametrize("value", ["chat\none", "tab\tkey", "red\x1b[31m", "a\u202egnp", "del\x7f"])
@pytest.mark.parametrize(
    ("path", "field"),
    [("checkpoint", "chat_id"), ("checkpoint", "model_id"), ("messages", "model_id"), ("sleep", "model_id")],
)
def test_a_control_character_in_a_chat_or_model_id_is_a_422_naming_it(
    api, token_a, agent_a, path, field, value
):
    """A checkpoint's chat id and model id, and a session's model id, are shown as a session key is
    (recovery, session pages, exports): a newline, an escape sequence or a right-to-left override was
    stored and shown raw, where a new session key or a branch name with one is a 422."""
    from sessions_app.models import Checkpoint, Session

    body = {field: value, "messages": [{"role": "user", "text": "hi"}]}
    response = api.post(f"/agents/agent-a/{path}", body, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == (
        f"Invalid input: {field}: no control characters (newline, tab, escape, bidirectional overrides)"
    )
    assert response.json()["errors"][0]["loc"] == [field]
    assert not Checkpoint.objects.exists() and not Session.objects.exists()
