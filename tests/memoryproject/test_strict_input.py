"""Input the REST API took in pydantic's lax mode and silently read as something else: booleans spelled
as 1/0 or strings, and fields it does not know (a typo's value dropped, the default used)."""

import pytest

from sessions_app.models import Message
from tests.conftest import body_filled
from vault import services
from vault.models import CompactionRun, ReviewPolicy, VaultEntry, WorkspaceFile

_ENTRY = {"category": "lessons", "content": "The second lesson"}
_MESSAGE = {"role": "user", "text": "hello there"}


@pytest.fixture
def notes(agent_a):
    services.file_write(agent=agent_a, path="notes.md", content="one two one\n", changed_by="t")
    return WorkspaceFile.objects.get(agent=agent_a, path="notes.md")


_BOOLEAN_BODIES = [
    (
        "post",
        "/agents/agent-a/messages",
        {"messages": [{**_MESSAGE, "internal": "{value}"}]},
        "messages.0.internal",
    ),
    (
        "post",
        "/agents/agent-a/checkpoint",
        {"messages": [{**_MESSAGE, "internal": "{value}"}]},
        "messages.0.internal",
    ),
    (
        "post",
        "/agents/agent-a/sleep",
        {"messages": [{**_MESSAGE, "internal": "{value}"}]},
        "messages.0.internal",
    ),
    ("post", "/agents/agent-a/sessions/s/compact", {"force": "{value}"}, "force"),
    ("post", "/agents/agent-a/sessions/s/compact", {"emergency": "{value}"}, "emergency"),
    ("put", "/agents/agent-a/files/notes.md", {"content": "x", "enabled": "{value}"}, "enabled"),
    ("patch", "/agents/agent-a/files/notes.md", {"enabled": "{value}"}, "enabled"),
    (
        "post",
        "/agents/agent-a/files/notes.md/edit",
        {"old_text": "one", "new_text": "1", "replace_all": "{value}"},
        "replace_all",
    ),
    (
        "put",
        "/review/policies",
        {"hold_agent_writes": "{value}", "hold_extracted": False},
        "hold_agent_writes",
    ),
    ("put", "/review/policies", {"hold_agent_writes": False, "hold_extracted": "{value}"}, "hold_extracted"),
    ("post", "/review/{id}/approve", {"supersede_conflicting": "{value}"}, "supersede_conflicting"),
]


def _state():
    return (
        list(VaultEntry.objects.values_list("pk", "status", "content")),
        list(WorkspaceFile.objects.values_list("path", "content", "enabled")),
        Message.objects.count(),
        list(ReviewPolicy.objects.values_list("category", "hold_agent_writes", "hold_extracted")),
    )


@pytest.mark.parametrize("value", ["false", "true", 0, 1, "yes", 1.0])
@pytest.mark.parametrize("method, path, body, field", _BOOLEAN_BODIES)
def test_it_refuses_anything_but_true_or_false_for_a_boolean_in_a_body(
    api, admin_token, entry_a, notes, method, path, body, field, value
):
    """`"internal": "false"`, `"replace_all": 1` or `"enabled": "yes"` were read as booleans (and "yes"
    could have been a typo of anything): a body's boolean is JSON true or false, nothing else."""
    before = _state()
    response = getattr(api, method)(path.format(id=entry_a.pk), body_filled(body, value), token=admin_token)
    assert response.status_code == 422, response.content
    assert f"{field}: Input should be a valid boolean" in response.json()["detail"]
    assert _state() == before


def test_true_and_false_are_still_taken_in_a_body(api, token_a, notes):
    edited = api.post(
        "/agents/agent-a/files/notes.md/edit",
        {"old_text": "one", "new_text": "1", "replace_all": True},
        token=token_a,
    )
    assert edited.status_code == 200, edited.content
    assert edited.json()["replacements"] == 2
    patched = api.patch("/agents/agent-a/files/notes.md", {"enabled": False}, token=token_a)
    assert patched.status_code == 200 and patched.json()["enabled"] is False
    appended = api.post(
        "/agents/agent-a/messages", {"messages": [{**_MESSAGE, "internal": True}]}, token=token_a
    )
    assert appended.status_code == 200, appended.content
    assert Message.objects.get().internal is True


@pytest.mark.parametrize("value", ["1", "0", "yes", "no", "on", "", "t", "truee"])
def test_it_refuses_anything_but_true_or_false_for_a_boolean_in_a_query_string(api, admin_token, value):
    """`?dry_run=1` or `?dry_run=yes` were read as booleans, `?dry_run=no` ran compaction for real; now
    `true` or `false` (in any case), else 422 naming the parameter, and nothing runs."""
    for path in ("/maintenance/compact", "/maintenance/retention"):
        response = api.post(path, token=admin_token, dry_run=value)
        assert response.status_code == 422, (path, value, response.content)
        body = response.json()
        assert body["detail"] == "Invalid input: dry_run: Input should be true or false", body
        assert [error["loc"] for error in body["errors"]] == [["query", "dry_run"]]
    listed = api.get("/agents/agent-a/messages", token=admin_token, include_archived=value)
    assert listed.status_code == 422, listed.content
    assert listed.json()["detail"] == "Invalid input: include_archived: Input should be true or false"
    assert not CompactionRun.objects.exists()


def test_true_and_false_are_taken_in_a_query_string(api, admin_token, agent_a):
    # Any case: Python's requests sends params={"dry_run": True} as "True".
    for value, dry in (("true", True), ("false", False), ("True", True), ("FALSE", False)):
        response = api.post("/maintenance/compact", token=admin_token, dry_run=value)
        assert response.status_code == 200, response.content
        assert response.json()["dry_run"] is dry
    assert api.post("/maintenance/compact", token=admin_token).json()["dry_run"] is False
    assert api.get("/agents/agent-a/messages", token=admin_token, include_archived="true").status_code == 200


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


def test_each_part_of_a_body_is_validated_once():
    # ninja's Schema validated a schema refusing unknown fields twice, and a nested one twice within
    # each: each message of an append went through its validators four times.
    from pydantic import field_validator

    from memoryproject.input_schema import InputSchema

    seen = []

    class Part(InputSchema):
        text: str

        @field_validator("text")
        @classmethod
        def counted(cls, value):
            seen.append(value)
            return value

    class Body(InputSchema):
        parts: list[Part]

    body = Body.model_validate({"parts": [{"text": "one"}, {"text": "two"}]})
    assert [part.text for part in body.parts] == ["one", "two"]
    assert seen == ["one", "two"]
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        Body.model_validate({"parts": [{"text": "one", "txet": "typo"}]})
