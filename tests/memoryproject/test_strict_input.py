"""Input the REST API took in pydantic's lax mode and silently read as something else: fields it does
not know (a typo's value dropped, the default used)."""

import pytest

from sessions_app.models import Message
from vault import services
from vault.models import ReviewPolicy, VaultEntry, WorkspaceFile

_ENTRY = {"category": "lessons", "content": "The second lesson"}
_MESSAGE = {"role": "user", "text": "hello there"}


@pytest.fixture
def notes(agent_a):
    services.file_write(agent=agent_a, path="notes.md", content="one two one\n", changed_by="t")
    return WorkspaceFile.objects.get(agent=agent_a, path="notes.md")


def _state():
    return (
        list(VaultEntry.objects.values_list("pk", "status", "content")),
        list(WorkspaceFile.objects.values_list("path", "content", "enabled")),
        Message.objects.count(),
        list(ReviewPolicy.objects.values_list("category", "hold_agent_writes", "hold_extracted")),
    )


def test_it_refuses_an_unknown_field_naming_it_and_stores_nothing(api, token_a):
    """`"importnace": 0.9` was dropped without a word and the entry stored with importance 0.5."""
    response = api.post("/agents/agent-a/entries", {**_ENTRY, "importnace": 0.9}, token=token_a)
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["detail"] == "Invalid input: importnace: Extra inputs are not permitted"
    assert [error["loc"] for error in body["errors"]] == [["body", "payload", "importnace"]]
    assert not VaultEntry.objects.exists()


@pytest.mark.parametrize(
    "method, path, body, field",
    [
        ("patch", "/entries/{id}", {"importance": 0.9, "pinned": True}, "pinned"),
        ("put", "/project/context", {"content": "x", "contnet": "y"}, "contnet"),
        (
            "post",
            "/agents/agent-a/messages",
            {"messages": [{**_MESSAGE, "intenral": True}]},
            "messages.0.intenral",
        ),
        ("post", "/agents/agent-a/messages", {"messages": [_MESSAGE], "sesion": "s1"}, "sesion"),
        ("post", "/agents/agent-a/checkpoint", {"messages": [_MESSAGE], "chatid": "c"}, "chatid"),
        ("post", "/agents/agent-a/sleep", {"summry": "done"}, "summry"),
        ("post", "/agents/agent-a/context", {"command": "x", "budget": 100}, "budget"),
        ("post", "/agents/agent-a/sessions/s/branches", {"name": "b", "from": "m1"}, "from"),
        ("post", "/agents/agent-a/sessions/s/checkout", {"branch": "main", "force": True}, "force"),
        ("post", "/agents/agent-a/sessions/s/compact", {"forced": True}, "forced"),
        ("put", "/agents/agent-a/files/notes.md", {"content": "x", "enable": False}, "enable"),
        ("patch", "/agents/agent-a/files/notes.md", {"sortorder": 3}, "sortorder"),
        (
            "post",
            "/agents/agent-a/files/notes.md/edit",
            {"old_text": "one", "new_text": "1", "all": True},
            "all",
        ),
        (
            "post",
            "/agents/agent-a/memory-tool",
            {"command": "view", "path": "/memories", "depth": 2},
            "depth",
        ),
        ("post", "/forget", {"ids": [1], "dry_run": True}, "dry_run"),
        ("post", "/review/{id}/approve", {"supersede": True}, "supersede"),
        ("post", "/review/{id}/reject", {"reason": "no", "why": "no"}, "why"),
        ("post", "/review/{id}/merge", {"into": 1, "keep": True}, "keep"),
        ("post", "/review/bulk", {"action": "approve", "ids": [1], "all": True}, "all"),
        ("put", "/review/policies", {"hold_agent_writes": True, "hold_extracted": False, "x": 1}, "x"),
    ],
)
def test_every_body_refuses_an_unknown_field(api, admin_token, entry_a, notes, method, path, body, field):
    before = _state()
    response = getattr(api, method)(path.format(id=entry_a.pk), body, token=admin_token)
    assert response.status_code == 422, response.content
    assert f"{field}: Extra inputs are not permitted" in response.json()["detail"]
    assert _state() == before


def test_the_aliases_of_a_field_are_no_unknown_fields(api, token_a):
    body = {
        "chatId": "c1",
        "modelId": "m",
        "maxInputTokens": 8000,
        "messages": [{**_MESSAGE, "clientId": "a"}],
    }
    response = api.post("/agents/agent-a/messages", body, token=token_a)
    assert response.status_code == 200, response.content
    assert Message.objects.get().client_id == "a"


def test_unknown_query_parameters_are_left_alone(api, token_a, entry_a):
    """Many HTTP clients add a cache-buster; README says so."""
    response = api.get("/agents/agent-a/entries", token=token_a, _="1700000000", limit="5")
    assert response.status_code == 200 and response.json()["count"] == 1
