"""Bad input a hostile client sends gets a 4xx JSON answer, never a 500 or an HTML page."""

import json
import zipfile

import pytest
from django.test import Client, override_settings

from tests.conftest import body_filled
from vault import services
from vault.models import Agent, VaultEntry
from vault.transfer import export as exporters


def test_it_refuses_dot_agent_names_on_first_write(api, admin_token):
    for name in ("..", "."):
        response = api.post(
            f"/agents/{name}/entries", {"category": "lessons", "content": "x y z"}, token=admin_token
        )
        assert response.status_code in (404, 422), (name, response.content)
        assert "detail" in response.json()
    assert not Agent.objects.filter(slug__in=[".", ".."]).exists()


def test_it_refuses_dot_agent_names_in_the_service(project):
    with pytest.raises(services.InvalidInput):
        services.agent_ensure(project=project, slug="..")
    assert services.agent_ensure(project=project, slug="v1.2").slug == "v1.2"


def test_it_refuses_dot_agent_names_in_the_admin(admin_client, project):
    response = admin_client.post(
        "/admin/vault/agent/add/", {"project": project.pk, "slug": "..", "name": "dots"}
    )
    assert response.status_code == 200
    assert "not only dots" in response.content.decode()
    assert not Agent.objects.filter(slug="..").exists()


def test_it_exports_an_agent_stored_with_a_dot_name_inside_the_archive(project, tmp_path):
    bad = Agent.objects.create(project=project, slug="..", name="legacy")
    services.entry_create(agent=bad, category="lessons", content="Keep the export inside its folder")
    archive = zipfile.ZipFile(exporters.export_zip(project=project, agents=[bad]))
    assert all(not part.startswith("..") for name in archive.namelist() for part in name.split("/")[:1])
    summary = exporters.export_memory_dir(path=tmp_path / "out", project=project)
    assert (tmp_path / "out" / "%2E%2E" / "lessons.md").exists()
    assert summary.files >= 2


@pytest.mark.parametrize("key", ["%C2%B9", "%C2%B2", "%D9%A3"])
def test_it_answers_404_for_a_session_id_of_unicode_digits(api, token_a, agent_a, key):
    response = api.get(f"/agents/agent-a/sessions/{key}/stats", token=token_a)
    assert response.status_code == 404, response.content
    assert response.json()["detail"]


def test_it_answers_for_unicode_digits_in_session_query_and_message_ref(api, token_a, agent_a):
    api.post("/agents/agent-a/messages", {"messages": [{"role": "user", "text": "hello"}]}, token=token_a)
    response = api.get("/agents/agent-a/messages", token=token_a, session="²")
    assert response.status_code < 500, response.content
    response = api.post("/agents/agent-a/branches", {"message": "¹", "name": "b"}, token=token_a)
    assert response.status_code < 500, response.content


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_it_answers_413_json_for_a_body_over_the_request_limit(api, token_a, agent_a):
    body = json.dumps({"category": "lessons", "content": "x " * 4000})
    response = api.post("/agents/agent-a/entries", raw=body, token=token_a)
    assert response.status_code == 413, response.content
    assert "MEMORY_MAX_REQUEST_BYTES" in response.json()["detail"]


def test_it_answers_422_for_lone_surrogates_in_a_memory_tool_path(api, token_a, agent_a):
    raw = '{"command": "create", "path": "/memories/\\ud800.md", "file_text": "x"}'
    response = api.post("/agents/agent-a/memory-tool", raw=raw, token=token_a)
    assert response.status_code == 422, response.content


def test_it_answers_422_for_lone_surrogates_in_forget_tags(api, admin_token, agent_a):
    raw = '{"agent": "agent-a", "tags": ["\\udc00"], "dry_run": true}'
    response = api.post("/forget", raw=raw, token=admin_token)
    assert response.status_code == 422, response.content


@override_settings(MEMORY_MAX_MESSAGE_BYTES=4096)
@pytest.mark.parametrize("field", ["tool_calls", "state"])
def test_it_counts_tool_calls_and_state_in_the_message_limit(api, token_a, agent_a, field):
    payload = [{"name": "x", "arguments": "y" * 5000}] if field == "tool_calls" else {"blob": "y" * 5000}
    message = {"role": "assistant", "text": "ok", field: payload}
    response = api.post("/agents/agent-a/messages", {"messages": [message]}, token=token_a)
    assert response.status_code == 413, response.content
    assert "MEMORY_MAX_MESSAGE_BYTES" in response.json()["detail"]


@override_settings(MEMORY_MAX_MESSAGE_BYTES=1024)
def test_it_names_the_message_limit_for_a_too_large_message(api, token_a, agent_a):
    response = api.post(
        "/agents/agent-a/messages", {"messages": [{"role": "user", "text": "z" * 2000}]}, token=token_a
    )
    assert response.status_code == 413
    assert "MEMORY_MAX_MESSAGE_BYTES" in response.json()["detail"]
    assert "MEMORY_MAX_ENTRY_BYTES" not in response.json()["detail"]


def test_it_says_nul_for_a_nul_in_a_session_id(api, token_a, agent_a):
    response = api.post(
        "/agents/agent-a/messages",
        {"session": "chat\u0000one", "messages": [{"role": "user", "text": "hi"}]},
        token=token_a,
    )
    assert response.status_code == 422, response.content
    assert "NUL" in response.json()["detail"]
    assert "200 characters" not in response.json()["detail"]


def test_a_bad_message_text_is_located_at_its_message(api, token_a, agent_a):
    messages = [{"role": "user", "text": "fine"}, {"role": "user", "text": "a\u0000b"}]
    response = api.post("/agents/agent-a/messages", {"messages": messages}, token=token_a)
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["detail"].startswith("messages[1]: text must not contain NUL")
    assert [error["loc"] for error in body["errors"]] == [["messages", 1, "text"]]


def test_it_names_the_field_for_a_nul_in_a_messages_tool_calls_or_state(api, token_a, agent_a):
    from sessions_app.models import Message

    for message in (
        {
            "role": "assistant",
            "text": "ok",
            "tool_calls": [{"name": "run", "arguments": {"cmd": "a\u0000b"}}],
        },
        {"role": "assistant", "text": "ok", "state": {"key\u0000": 1}},
    ):
        response = api.post("/agents/agent-a/messages", {"messages": [message]}, token=token_a)
        assert response.status_code == 422, response.content
        assert "tool_calls and state must not contain NUL" in response.json()["detail"]
    # The six characters \u0000 written as text are not a NUL.
    literal = {"role": "assistant", "text": "ok", "state": {"escape": "\\u0000"}}
    response = api.post("/agents/agent-a/messages", {"messages": [literal]}, token=token_a)
    assert response.status_code == 200, response.content
    assert Message.objects.get(agent=agent_a).state == {"escape": "\\u0000"}


def test_a_timestamp_with_any_utc_offset_is_stored_as_its_instant(api, token_a, agent_a):
    """Python reads offsets up to 23:59; PostgreSQL refused those past 15:59 (400 from the database)."""
    from datetime import UTC, datetime

    from sessions_app.models import Message

    response = api.post(
        "/agents/agent-a/messages",
        {"messages": [{"role": "user", "text": "far east", "timestamp": "2026-01-01T10:00:00+20:00"}]},
        token=token_a,
    )
    assert response.status_code == 200, response.content
    assert Message.objects.get(agent=agent_a).created_at == datetime(2025, 12, 31, 14, 0, tzinfo=UTC)


def test_it_answers_json_404_to_a_post_on_an_unknown_api_path(db):
    response = Client(enforce_csrf_checks=True).post(
        "/api/v2/nothing", data="{}", content_type="application/json"
    )
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert "No API endpoint" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/api/v1/", "/api/v1", "/api/v1/nothing"])
def test_an_unknown_api_path_and_the_apis_root_name_where_the_endpoints_are_listed(db, path):
    """/api/v1/, the address a newcomer opens first, answered django-ninja's bare "Not found."."""
    response = Client().get(path)
    assert response.status_code == 404
    assert response.json() == {
        "detail": f"No API endpoint at {path} (GET). The endpoints are listed at /api/v1/docs "
        "(OpenAPI: /api/v1/openapi.json)."
    }


def test_it_answers_json_405_to_trace(api, token_a, agent_a):
    response = api.client.generic(
        "TRACE", "/api/v1/agents/agent-a/entries", HTTP_AUTHORIZATION=f"Bearer {token_a}"
    )
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")
    assert "TRACE" in response.json()["detail"]


@pytest.mark.parametrize(
    ("url", "location"),
    [
        ("/agents/agent-a/entries?tag=%00", ["query", "tag"]),
        ("/agents/agent-a/messages?session=%00", ["query", "session"]),
        ("/search?q=deploy%00s&tag=ok", ["query", "q"]),
        ("/agents/agent-a%00/entries", ["path", "agent"]),
        ("/agents/agent-a/files/MEMORY%00.md", ["path", "path"]),
    ],
)
def test_it_answers_422_naming_the_parameter_for_a_nul_in_a_query_or_path_parameter(
    token_a, agent_a, django_assert_num_queries, url, location
):
    with django_assert_num_queries(0):  # refused before the database sees it
        response = Client().get("/api/v1" + url, HTTP_AUTHORIZATION=f"Bearer {token_a}")
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["detail"] == f"Invalid input: {location[1]}: must not contain NUL (\\u0000) characters"
    assert [error["loc"] for error in body["errors"]] == [location]


_ENTRY = {"category": "lessons", "content": "The second lesson"}


# Each number a body takes, with a value in its range: "{value}" stands for what the test sends.
_NUMBER_FIELDS = [
    ("post", "/agents/agent-a/entries", {**_ENTRY, "supersedes": "{value}"}, "supersedes", "integer", 1),
    ("post", "/agents/agent-a/entries", {**_ENTRY, "importance": "{value}"}, "importance", "number", 0.5),
    ("post", "/agents/agent-a/entries", {**_ENTRY, "confidence": "{value}"}, "confidence", "number", 0.5),
    ("patch", "/entries/{id}", {"supersedes": "{value}"}, "supersedes", "integer", 1),
    ("patch", "/entries/{id}", {"importance": "{value}"}, "importance", "number", 0.9),
    ("post", "/agents/agent-a/context", {"budget_tokens": "{value}"}, "budget_tokens", "integer", 500),
    ("post", "/forget", {"ids": ["{value}"]}, "ids.0", "integer", 1),
    ("post", "/forget", {"message_ids": ["{value}"]}, "message_ids.0", "integer", 1),
    ("post", "/review/bulk", {"action": "approve", "ids": ["{value}"]}, "ids.0", "integer", 1),
    ("post", "/review/{id}/merge", {"into": "{value}"}, "into", "integer", 1),
    (
        "post",
        "/agents/agent-a/messages",
        {"messages": [{"role": "user", "text": "hi"}], "max_input_tokens": "{value}"},
        "max_input_tokens",
        "integer",
        8000,
    ),
    (
        "post",
        "/agents/agent-a/sessions/s/compact",
        {"max_input_tokens": "{value}"},
        "max_input_tokens",
        "integer",
        8000,
    ),
    (
        "post",
        "/agents/agent-a/sessions/s/compact",
        {"trigger_ratio": "{value}"},
        "trigger_ratio",
        "number",
        0.5,
    ),
    (
        "put",
        "/agents/agent-a/files/notes.md",
        {"content": "x", "sort_order": "{value}"},
        "sort_order",
        "integer",
        3,
    ),
    (
        "post",
        "/agents/agent-a/memory-tool",
        {"command": "view", "path": "/memories/a.md", "view_range": ["{value}", 2]},
        "view_range.0",
        "integer",
        1,
    ),
    (
        "post",
        "/agents/agent-a/memory-tool",
        {"command": "insert", "path": "/memories/a.md", "insert_line": "{value}", "insert_text": "x"},
        "insert_line",
        "integer",
        0,
    ),
]


def _number_refused(api, admin_token, entry_a, method, path, body, field, kind, value, what):
    response = getattr(api, method)(path.format(id=entry_a.pk), body_filled(body, value), token=admin_token)
    assert response.status_code == 422, response.content
    valid = "a valid integer" if kind == "integer" else "a valid number"
    assert f"{field}: Input should be {valid}, not {what}" in response.json()["detail"]
    entry_a.refresh_from_db()
    assert entry_a.status == "active" and entry_a.importance == 0.5
    assert VaultEntry.objects.count() == 1


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("method, path, body, field, kind, good", _NUMBER_FIELDS)
def test_it_refuses_a_boolean_where_a_number_is_taken(
    api, admin_token, entry_a, method, path, body, field, kind, good, value
):
    """pydantic's lax mode read JSON true as 1 and false as 0: `"supersedes": true` superseded entry 1,
    `"ids": [true]` forgot it, `"importance": true` stored 1.0."""
    _number_refused(api, admin_token, entry_a, method, path, body, field, kind, value, "a boolean")


@pytest.mark.parametrize("method, path, body, field, kind, good", _NUMBER_FIELDS)
def test_it_refuses_a_string_where_a_number_is_taken(
    api, admin_token, entry_a, method, path, body, field, kind, good
):
    """pydantic's lax mode read a string of digits as its number where the OpenAPI document says
    number or integer: `"importance": "0.5"` stored 0.5, `"ids": ["1"]` forgot entry 1. A 422 naming
    the field, as for a boolean."""
    _number_refused(api, admin_token, entry_a, method, path, body, field, kind, str(good), "a string")


def test_numbers_in_json_and_in_query_strings_are_still_taken(api, token_a, entry_a):
    created = api.post(
        "/agents/agent-a/entries",
        {**_ENTRY, "supersedes": entry_a.pk, "importance": 1, "confidence": 0.5},
        token=token_a,
    )
    assert created.status_code == 201, created.content
    assert created.json()["supersedes"] == entry_a.pk and created.json()["importance"] == 1.0
    context = api.post("/agents/agent-a/context", {"budget_tokens": 500.0}, token=token_a)
    assert context.status_code == 200 and context.json()["budget_tokens"] == 500
    assert api.get("/search", token=token_a, q="lesson", limit="5").status_code == 200
    assert api.get("/agents/agent-a/entries", token=token_a, limit="5").json()["limit"] == 5


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(
    "method, path, body, field",
    [
        (
            "post",
            "/agents/agent-a/entries",
            '{"category": "lessons", "content": "x y", "importance": %s}',
            "importance",
        ),
        (
            "post",
            "/agents/agent-a/entries",
            '{"category": "lessons", "content": "x y", "confidence": %s}',
            "confidence",
        ),
        ("patch", "/entries/{id}", '{"importance": %s}', "importance"),
        ("post", "/agents/agent-a/sessions/s/compact", '{"trigger_ratio": %s}', "trigger_ratio"),
    ],
)
def test_it_refuses_nan_and_infinity_as_not_finite(api, token_a, entry_a, literal, method, path, body, field):
    """Python's json reads NaN and Infinity, which no JSON holds; `importance: NaN` was refused as
    "should be less than or equal to 1", and `-Infinity` as "greater than or equal to 0"."""
    response = getattr(api, method)(path.format(id=entry_a.pk), raw=body % literal, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == f"Invalid input: {field}: Input should be a finite number"
    entry_a.refresh_from_db()
    assert entry_a.importance == 0.5 and VaultEntry.objects.count() == 1


@pytest.mark.parametrize(
    "path, message",
    [
        ("/agents/agent-a/messages", '{"role": "user", "text": "hi", "state": {"score": NaN}}'),
        (
            "/agents/agent-a/messages",
            '{"role": "assistant", "text": "ok", "tool_calls": [{"x": [1, -Infinity]}]}',
        ),
        ("/agents/agent-a/checkpoint", '{"role": "user", "text": "hi", "state": {"score": Infinity}}'),
        ("/agents/agent-a/sleep", '{"role": "user", "text": "hi", "state": {"score": NaN}}'),
    ],
)
def test_it_refuses_nan_and_infinity_in_a_messages_tool_calls_and_state(api, token_a, agent_a, path, message):
    """A NaN inside `state` or `tool_calls` reached PostgreSQL, whose jsonb refused the batch: a 400
    "A value was rejected by the database: invalid input syntax for type json", naming no message."""
    from sessions_app.models import Checkpoint, Message

    session = {"session": "s", "messages": [{"role": "user", "text": "first"}]}
    assert api.post("/agents/agent-a/messages", session, token=token_a).status_code == 200
    raw = '{"session": "s", "messages": [{"role": "user", "text": "second"}, ' + message + "]}"
    response = api.post(path, raw=raw, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == (
        "messages[1]: every number in tool_calls and state must be a finite number (NaN and Infinity are not JSON)"
    )
    assert list(Message.objects.values_list("text", flat=True)) == ["first"]
    assert not Checkpoint.objects.exists() and not VaultEntry.objects.filter(category="handoffs").exists()


@pytest.mark.parametrize("field", ["ids", "message_ids"])
@pytest.mark.parametrize("bad", [2**63, 2**70, 0, -1])
def test_a_forget_id_no_row_can_have_is_a_422_naming_it(api, admin_token, entry_a, field, bad):
    """An id past 2**63 - 1 (bigint) was answered 200 with it among `not_found`, as if it might have
    been a row's; it is invalid input, and the valid ids beside it are not forgotten either."""
    response = api.post("/forget", {field: [entry_a.pk, bad]}, token=admin_token)
    assert response.status_code == 422, response.content
    assert response.json()["detail"].startswith(f"Invalid input: {field}.1: Input should be")
    assert VaultEntry.objects.filter(pk=entry_a.pk).exists()


def test_no_error_echoes_a_path_parameter_whole(api, admin_token, token_a, agent_a, entry_a):
    """Errors quoted what the client sent: an agent, a session id, a branch or a message reference of
    20,000 characters came back whole in a 404 or 422 (a session's operations, a checkpoint, a sleep,
    a file's). Every operation's every path parameter, 20,000 characters long: a 4xx of under 1,000
    bytes."""
    import re

    document = Client().get("/api/v1/openapi.json").json()
    api.post(
        "/agents/agent-a/messages",
        {"session": "s1", "messages": [{"role": "user", "text": "hi"}]},
        token=token_a,
    )
    values = {"agent": "agent-a", "session_id": "s1", "entry_id": str(entry_a.pk), "path": "MEMORY.md"}
    tried = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
            for name in names if method != "head" else []:
                given = {**values, name: "z" * 20_000}
                url = re.sub(r"\{(\w+)(:\w+)?\}", lambda m, given=given: given.get(m[1], "1"), path)
                response = api.request(method, url.removeprefix("/api/v1"), {}, token=admin_token)
                assert 400 <= response.status_code < 500, (method, path, name, response.status_code)
                assert len(response.content) < 1000, (method, path, name, response.content[:200])
                tried += 1
    assert tried >= 50
    for body in ({"name": "b" * 20_000}, {"name": "b", "message": "m" * 20_000}):
        response = api.post("/agents/agent-a/sessions/s1/branches", body, token=token_a)
        assert 400 <= response.status_code < 500 and len(response.content) < 1000, response.content[:200]
    response = api.post("/agents/agent-a/sessions/s1/checkout", {"branch": "b" * 20_000}, token=token_a)
    assert 400 <= response.status_code < 500 and len(response.content) < 1000, response.content[:200]


@pytest.mark.parametrize("name", ["a\nb", "tab\there", "red\x1b[31m", "a\u202egnp"])
def test_a_branch_name_with_a_control_character_is_a_422_naming_it(api, token_a, agent_a, name):
    """A branch's name took a newline, an escape sequence or a right-to-left override, shown raw in
    the branch listing and on the session page, as session keys and paths no longer may."""
    from sessions_app.models import Branch

    api.post(
        "/agents/agent-a/messages",
        {"session": "s1", "messages": [{"role": "user", "text": "hi"}]},
        token=token_a,
    )
    response = api.post("/agents/agent-a/sessions/s1/branches", {"name": name}, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["errors"] == [
        {"loc": ["name"], "msg": "no control characters (newline, tab, escape, bidirectional overrides)"}
    ]
    assert list(Branch.objects.values_list("name", flat=True)) == ["main"]


def test_the_memory_tool_quotes_a_bad_path_in_at_most_80_characters(api, token_a, agent_a):
    for body in (
        {"command": "view", "path": "/memories/" + "a" * 20_000},
        {"command": "view", "path": "/elsewhere/" + "a" * 20_000},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/" + "b" * 20_000},
    ):
        response = api.post("/agents/agent-a/memory-tool", body, token=token_a)
        assert response.status_code == 422, response.content[:200]
        assert len(response.content) < 1000, response.content[:200]
