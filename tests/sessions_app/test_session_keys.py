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
