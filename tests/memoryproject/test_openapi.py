"""The OpenAPI document describes the errors every operation can answer and the server's real limits."""

import pytest
from django.test import Client, override_settings

from vault.models import TokenScope

pytestmark = pytest.mark.django_db


@pytest.fixture
def document():
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_every_operation_documents_its_error_responses(document):
    assert "ErrorOut" in document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert "503" in codes, (method, path)
            if operation.get("security"):
                assert {"400", "401", "403", "404", "413", "422", "429"} <= codes, (method, path)
                error = operation["responses"]["422"]["content"]["application/json"]["schema"]
                assert error == {"$ref": "#/components/schemas/ErrorOut"}
    assert "Retry-After" in document["paths"]["/api/v1/search"]["get"]["responses"]["429"]["headers"]


def test_healthz_documents_head_as_an_operation_of_its_own(document):
    operations = document["paths"]["/api/v1/healthz"]
    assert {"200", "503"} <= set(operations["head"]["responses"])
    assert operations["head"]["operationId"] != operations["get"]["operationId"]
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))


def test_the_schema_states_the_context_budget_cap(document, settings):
    schema = document["components"]["schemas"]["ContextIn"]["properties"]["budget_tokens"]
    limits = [schema] + schema.get("anyOf", [])
    assert any(part.get("maximum") == settings.MEMORY_CONTEXT_MAX_BUDGET == 32000 for part in limits)


def test_the_export_is_documented_as_a_zip(document):
    responses = document["paths"]["/api/v1/agents/{agent}/export"]["get"]["responses"]
    assert "application/zip" in responses["200"]["content"]


def test_a_budget_over_the_cap_is_refused_by_validation(api, token_a, agent_a):
    response = api.post("/agents/agent-a/context", {"budget_tokens": 32001}, token=token_a)
    assert response.status_code == 422


def test_every_agent_in_a_path_carries_the_slug_rule_the_server_applies(document, api, admin_token):
    """The agent slug's rule is in the schema (schemathesis reported operations that rejected most of the
    names it generated from a bare string): what it matches, the server accepts as a name, and what it
    refuses, the server refuses."""
    import re

    from vault.services import slug_check

    seen = 0
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] == "agent":
                    assert parameter["schema"]["pattern"] and parameter["schema"]["maxLength"] == 64, path
                    seen += 1
    assert seen >= 29  # every operation under /agents/{agent}/
    pattern = re.compile(
        document["paths"]["/api/v1/agents/{agent}/entries"]["post"]["parameters"][0]["schema"]["pattern"]
    )
    for name in ["a", "dev", "agent-1", "a.b_c", ".a", "..x", "x" * 64]:
        assert pattern.match(name) and slug_check(name, field="agent") == name
    for name in ["", ".", "..", "...", "A", "a b", "a/b", "é"]:
        assert not pattern.match(name)
    response = api.post("/agents/../entries", {"category": "lessons", "content": "x"}, token=admin_token)
    assert response.status_code in (404, 422)


def test_the_message_roles_are_listed_in_the_schema_as_the_append_accepts_them(
    document, api, token_a, agent_a
):
    roles = document["components"]["schemas"]["MessageIn"]["properties"]["role"]["enum"]
    assert set(roles) == {"user", "assistant", "agent", "human", "tool", "system"}
    for role in roles:
        response = api.post(
            "/agents/agent-a/messages", {"messages": [{"role": role, "text": "hello"}]}, token=token_a
        )
        assert response.status_code == 200, (role, response.content)
    response = api.post(
        "/agents/agent-a/messages", {"messages": [{"role": "robot", "text": "x"}]}, token=token_a
    )
    assert response.status_code == 422 and "unknown role" in response.json()["detail"]


def _valid(document, component: str, instance) -> bool:
    """Whether `instance` is valid against a schema of the document, as schemathesis reads it
    (jsonschema_rs, whose patterns follow ECMA-262 like JavaScript clients)."""
    import jsonschema_rs

    root = {"$ref": f"#/components/schemas/{component}", "components": document["components"]}
    return jsonschema_rs.validator_for(root).is_valid(instance)


def _accepted(response) -> bool:
    assert response.status_code < 500, response.content
    return response.status_code in (200, 201)


WHITESPACE = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())  # what str.strip() removes
TEXT_SAMPLES = [
    "a",
    " a\n",
    "é",
    "\ufeff",  # a BOM is no whitespace to Python (kept), but is to JavaScript's \s
    "\u200b",
    "",
    "x\x00y",
    "\x00",
    " \x00 ",
    *WHITESPACE,
    WHITESPACE,
    f"{WHITESPACE}x{WHITESPACE}",
]


def test_the_text_patterns_say_what_text_check_refuses():
    """NUL and blank text are refused by text_check; the patterns the schemas use say the same, in Python
    and in ECMA-262 (jsonschema_rs), with the whitespace str.strip() removes spelled out."""
    import re

    import jsonschema_rs

    from memoryproject.errors import InvalidInput
    from vault.text import NO_NUL_PATTERN, NOT_BLANK_PATTERN, WHITESPACE_CLASS, text_check

    def passes(text: str, **options) -> bool:
        try:
            text_check(text, max_bytes=1_000_000, **options)
        except InvalidInput:
            return False
        return True

    assert all(
        bool(re.fullmatch(f"[{WHITESPACE_CLASS}]", chr(c))) == chr(c).isspace() for c in range(0x110000)
    )
    rules = [
        (NO_NUL_PATTERN, lambda text: passes(text, allow_empty=True)),
        (NOT_BLANK_PATTERN, lambda text: passes(text)),
    ]
    for pattern, check in rules:
        ecma = jsonschema_rs.validator_for({"type": "string", "pattern": pattern})
        for text in TEXT_SAMPLES:
            assert bool(re.search(pattern, text)) == ecma.is_valid(text) == check(text), (pattern, text)


def test_an_entrys_content_is_described_as_the_server_checks_it(document, api, token_a, agent_a):
    for content in TEXT_SAMPLES:
        body = {"category": "lessons", "content": content}
        response = api.post("/agents/agent-a/entries", body, token=token_a)
        assert _valid(document, "EntryIn", body) == _accepted(response), (content, response.content)


MESSAGE_SAMPLES = [
    *[
        {"role": role, "text": text}
        for role in ["user", "human", "system", "assistant", "agent", "tool"]
        for text in ["hi", "\ufeff", "", " \n", "\x1c", None, "a\x00"]
    ],
    {"role": "user"},
    {"role": "tool"},
    {"role": "user", "content": "hi"},
    {"role": "system", "text": None, "content": "be brief"},
    {"role": "user", "text": "", "content": "hi"},  # text wins over content, even empty
    {"role": "user", "content": " "},
    {"role": "user", "content": "a\x00"},
    {"role": "tool", "id": "call-1"},
    {"role": "tool", "id": "a\x00"},
    {"role": "tool", "tool_call_id": "a\x00"},
]


def test_a_message_is_described_as_the_append_checks_it(document, api, token_a, agent_a, settings):
    """Text (or content when text is null) not blank for user and system messages, no NUL in text, ids
    or the session, at most MEMORY_APPEND_MAX_MESSAGES messages, agentId a slug."""
    bodies = [{"session": "s", "messages": [message]} for message in MESSAGE_SAMPLES]
    bodies += [
        {"session": "s\x00", "messages": []},
        {"agentId": "agent-a", "messages": []},
        {"agentId": "Agent A", "messages": []},
        {"messages": [{"role": "tool"}] * (settings.MEMORY_APPEND_MAX_MESSAGES + 1)},
    ]
    for body in bodies:
        response = api.post("/agents/agent-a/messages", body, token=token_a)
        assert _valid(document, "MessagesIn", body) == _accepted(response), (body, response.content)


def test_a_checkpoint_and_a_sleep_are_described_as_the_service_checks_them(document, api, token_a, agent_a):
    said = {"role": "user", "text": "We decided to use PostgreSQL for the ledger."}
    checkpoints = [{"messages": [message]} for message in MESSAGE_SAMPLES]
    checkpoints += [{"messages": [said], name: "x\x00"} for name in ("session", "chat_id", "model_id")]
    for body in checkpoints:
        response = api.post("/agents/agent-a/checkpoint", body, token=token_a)
        assert _valid(document, "CheckpointIn", body) == _accepted(response), (body, response.content)
    sleeps = [{"messages": [said], "summary": summary} for summary in ["", "Ledger done.", *TEXT_SAMPLES]]
    sleeps += [{"messages": [said, message]} for message in MESSAGE_SAMPLES[:7]]
    sleeps += [{"messages": [said], "session": "s\x00"}]
    for body in sleeps:
        response = api.post("/agents/agent-a/sleep", body, token=token_a)
        assert _valid(document, "SleepIn", body) == _accepted(response), (body, response.content)


def test_a_file_edit_is_described_as_the_service_checks_it(document, api, token_a, agent_a):
    samples = [
        ("beta", "BETA"),
        ("beta", ""),
        ("beta", "\ufeff"),
        ("", "x"),
        ("beta", "x\x00"),
        ("a\x00", "x"),
    ]
    for old_text, new_text in samples:
        api.put("/agents/agent-a/files/notes.md", {"content": "alpha beta alpha"}, token=token_a)
        body = {"old_text": old_text, "new_text": new_text}
        response = api.post("/agents/agent-a/files/notes.md/edit", body, token=token_a)
        assert _valid(document, "FileEditIn", body) == _accepted(response), (body, response.content)


def test_each_memory_tool_command_is_described_as_the_tool_checks_it(document, api, token_a, agent_a):
    """One schema per command: the fields it needs, the /memories paths _path accepts (the directory
    itself only where a command takes it), and the fields of other commands ignored."""
    notes = "/memories/notes.md"
    commands = [
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/"},
        {"command": "view", "path": "/memories", "old_path": "ignored"},
        {"command": "view", "path": notes, "view_range": [1, -1]},
        {"command": "view", "path": notes + "/", "view_range": [2, 2]},
        {"command": "view", "path": notes, "view_range": [0, 1]},
        {"command": "view", "path": notes, "view_range": [1, 0]},
        {"command": "view", "path": "/memories", "view_range": [1, -1]},
        {"command": "view"},
        {"command": "view", "path": ""},
        *[
            {"command": "view", "path": path}
            for path in [
                "memories/notes.md",
                "/memoriesX",
                "/memories//notes.md",
                "/memories/./notes.md",
                "/memories/../notes.md",
                "/memories/a\\b.md",
                "/memories/a\x00.md",
            ]
        ],
        {"command": "create", "path": "/memories/new.md", "file_text": "x"},
        {"command": "create", "path": "/memories/dir/.hidden", "file_text": ""},
        {"command": "create", "path": "/memories/...", "file_text": "three dots are a name"},
        {"command": "create", "path": "/memories/other.md"},
        {"command": "create", "path": "/memories/other.md", "file_text": "a\x00"},
        {"command": "create", "path": "/memories", "file_text": "x"},
        {"command": "str_replace", "path": notes, "old_str": "beta", "new_str": "gamma"},
        {"command": "str_replace", "path": notes, "old_str": "beta", "new_str": ""},
        {"command": "str_replace", "path": notes, "old_str": "", "new_str": "x"},
        {"command": "str_replace", "path": notes, "old_str": "beta"},
        {"command": "str_replace", "path": notes, "old_str": "beta", "new_str": "x\x00"},
        {"command": "str_replace", "path": notes, "old_str": "a\x00", "new_str": "x"},
        {"command": "str_replace", "path": "/memories", "old_str": "beta", "new_str": "x"},
        {"command": "insert", "path": notes, "insert_line": 0, "insert_text": "top"},
        {"command": "insert", "path": notes, "insert_line": -1, "insert_text": "top"},
        {"command": "insert", "path": notes, "insert_line": 0},
        {"command": "insert", "path": notes, "insert_line": 0, "insert_text": "\x00"},
        {"command": "delete", "path": notes},
        {"command": "delete", "path": "/memories/"},
        {"command": "rename", "old_path": notes, "new_path": "/memories/moved.md"},
        {"command": "rename", "old_path": notes},
        {"command": "rename", "path": notes, "new_path": "/memories/moved.md"},
        {"command": "rename", "old_path": notes, "new_path": "/elsewhere.md"},
        {"command": "rename", "old_path": "/memories", "new_path": "/memories/moved"},
    ]
    for body in commands:
        # The same files before each command, so that what it finds does not depend on the one before.
        for path in ("memories/new.md", "memories/dir/.hidden", "memories/...", "memories/moved.md"):
            api.delete(f"/agents/agent-a/files/{path}", token=token_a)
        api.put("/agents/agent-a/files/memories/notes.md", {"content": "alpha\nbeta\n"}, token=token_a)
        response = api.post("/agents/agent-a/memory-tool", body, token=token_a)
        assert _valid(document, "MemoryToolIn", body) == _accepted(response), (body, response.content)


def test_a_checkout_names_a_branch_or_a_message_as_the_schema_says(document, api, token_a, agent_a):
    said = [{"id": "m1", "role": "user", "text": "hello"}, {"id": "m2", "role": "assistant", "text": "hi"}]
    api.post("/agents/agent-a/messages", {"session": "s", "messages": said}, token=token_a)
    for body in [
        {"branch": "main"},
        {"message": "m1"},
        {"branch": "", "message": "m2"},
        {"branch": "main", "message": None},
        {},
        {"branch": None, "message": None},
        {"branch": "", "message": ""},
        {"branch": "main", "message": "m1"},
    ]:
        response = api.post("/agents/agent-a/sessions/s/checkout", body, token=token_a)
        assert _valid(document, "CheckoutIn", body) == _accepted(response), (body, response.content)


def test_a_forget_is_described_as_the_service_checks_it(document, api, token_a, agent_a):
    since = "2020-01-01T00:00:00Z"
    for body in [
        {"ids": [999]},
        {"message_ids": [999]},
        {"ids": [], "message_ids": [999]},
        {"ids": [999], "agent": "", "tags": [], "category": None, "kinds": ["messages"]},
        {"agent": "agent-a"},
        {"tags": ["x"]},
        {"category": "lessons"},
        {"source": "api"},
        {"since": since},
        {"until": since},
        {"agent": "agent-a", "tags": [], "kinds": ["messages"]},
        {"since": since, "kinds": ["entries", "messages"]},
        {},
        {"ids": []},
        {"agent": ""},
        {"tags": []},
        {"ids": [999], "tags": ["x"]},
        {"ids": [999], "category": "lessons"},
        {"message_ids": [999], "since": since},
        {"tags": ["a\x00"]},
        {"tags": [" "]},
        {"tags": ["a" * 64]},
        {"tags": ["a" * 65]},
        {"tags": ["#" + "a" * 64]},
        {"tags": [f"t{i}" for i in range(64)]},
        {"tags": [f"t{i}" for i in range(65)]},
        {"category": "lessons", "kinds": ["entries", "messages", "entries"]},
        {"category": "lessons", "kinds": ["entries", "messages"]},
        {"agent": "agent-a", "source": "api", "kinds": ["messages"]},
    ]:
        response = api.post("/forget", body, token=token_a)
        assert _valid(document, "ForgetIn", body) == _accepted(response), (body, response.content)


def test_an_entrys_tags_are_limited_in_the_schema_as_the_server_limits_them(
    document, api, token_a, agent_a, settings
):
    """The schema allowed 256 tags where the server refuses more than MEMORY_MAX_TAGS (32): a request
    the schema called valid was refused."""
    for component in ("EntryIn", "EntryPatch"):
        tags = document["components"]["schemas"][component]["properties"]["tags"]
        limits = [tags] + tags.get("anyOf", [])
        assert any(part.get("maxItems") == settings.MEMORY_MAX_TAGS for part in limits), component
    for count in (settings.MEMORY_MAX_TAGS, settings.MEMORY_MAX_TAGS + 1):
        body = {
            "category": "lessons",
            "content": f"tagged {count} times",
            "tags": [f"t{i}" for i in range(count)],
        }
        response = api.post("/agents/agent-a/entries", body, token=token_a)
        assert _valid(document, "EntryIn", body) == _accepted(response) == (count == settings.MEMORY_MAX_TAGS)


def test_the_search_tags_are_limited_in_the_schema_as_the_server_limits_them(document, api, token_a, agent_a):
    """`tag` was an unbounded list of unbounded strings."""
    (tag,) = [p for p in document["paths"]["/api/v1/search"]["get"]["parameters"] if p["name"] == "tag"]
    assert tag["schema"]["maxItems"] == 64 and tag["schema"]["items"]["maxLength"] == 64
    for tags, accepted in [
        ([f"t{i}" for i in range(64)], True),
        ([f"t{i}" for i in range(65)], False),
        (["a" * 64], True),
        (["a" * 65], False),
    ]:
        response = api.get("/search", token=token_a, q="x", tag=tags)
        assert _accepted(response) == accepted, (tags, response.content)


def test_searchs_agent_carries_the_slug_rule_and_a_name_no_agent_can_have_is_a_422(
    document, api, admin_token, agent_a
):
    """search's `agent` was a bare string of at most 64 characters: a name no agent can have ("A",
    "a b", "..") was looked up and answered 404, a missing resource, where the query is bad input; and
    the document did not say what a name is. Empty still means no agent named."""
    import re

    (agent,) = [p for p in document["paths"]["/api/v1/search"]["get"]["parameters"] if p["name"] == "agent"]
    (schema,) = [branch for branch in agent["schema"]["anyOf"] if branch["type"] == "string"]
    pattern = re.compile(schema["pattern"])
    assert schema["maxLength"] == 64
    for name in ["", "agent-a", "a.b_c", ".a"]:
        assert pattern.match(name)
        assert api.get("/search", token=admin_token, q="x", agent=name).status_code in (200, 404), name
    for name in ["A", "a b", "..", "é", "a/b"]:
        assert not pattern.match(name)
        response = api.get("/search", token=admin_token, q="x", agent=name)
        assert response.status_code == 422, (name, response.content)
        assert response.json()["errors"][0]["loc"] == ["query", "agent"]


def _schemas(node):
    if isinstance(node, dict):
        if "type" in node or "anyOf" in node:
            yield node
        for value in node.values():
            yield from _schemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schemas(value)


def test_every_number_limit_is_stated_as_json_schema_states_it(document):
    """A constraint pydantic cannot push into an int schema (one behind a validator) is still checked,
    but documented as "ge"/"le", which no client reads as a limit."""
    raw = [s for s in _schemas(document) if {"ge", "le", "gt", "lt"} & set(s)]
    assert not raw
    budget = document["components"]["schemas"]["ContextIn"]["properties"]["budget_tokens"]["anyOf"][0]
    assert budget == {"type": "integer", "minimum": 50, "maximum": 32000}
    importance = document["components"]["schemas"]["EntryIn"]["properties"]["importance"]["anyOf"][0]
    assert importance == {"type": "number", "minimum": 0.0, "maximum": 1.0}


def _refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"].rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_every_request_body_refuses_fields_it_does_not_name(document):
    """The server refuses an unknown field (422); the document says so for every body and every object
    inside one, so that a generated client or schemathesis knows it too."""
    components = document["components"]["schemas"]
    bodies = set()
    for operations in document["paths"].values():
        for operation in operations.values():
            bodies |= set(_refs(operation.get("requestBody", {})))
    seen, todo = set(), sorted(bodies)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_refs(components[name]))
    assert {"EntryIn", "MessagesIn", "MessageIn", "ForgetIn", "MemoryToolIn"} <= seen
    assert {name: components[name].get("additionalProperties") for name in seen} == dict.fromkeys(seen, False)
    assert "additionalProperties" not in components["EntryOut"]


def test_a_query_boolean_is_documented_as_a_boolean(document):
    """Sent as exactly true or false (README); schemathesis and generated clients send those."""
    parameters = document["paths"]["/api/v1/maintenance/compact"]["post"]["parameters"]
    dry_run = next(p for p in parameters if p["name"] == "dry_run")
    assert dry_run["schema"]["type"] == "boolean" and dry_run["schema"]["default"] is False


def _enum(schema: dict) -> list | None:
    """The enum a (possibly nullable, possibly referenced) property's schema allows, if any."""
    for option in schema.get("anyOf", [schema]):
        if "enum" in option:
            return option["enum"]
    return None


def test_an_entrys_source_is_listed_in_the_schema_as_entries_have_it(document, api, token_a, agent_a):
    """`source` of an entry, of a search result and of the entry list's filter was a plain string: a
    client could not tell the values apart from a typo, and a filter `source=API` answered 200 with no
    entries. The schema lists the sources, and a filter that is none of them is a 422 naming them."""
    from vault.models import EntrySource

    sources = list(EntrySource.values)
    schemas = document["components"]["schemas"]
    assert _enum(schemas["EntryOut"]["properties"]["source"]) == sources
    assert _enum(schemas["SearchResultOut"]["properties"]["source"]) == sources
    assert _enum(schemas["ForgetIn"]["properties"]["source"]) == sources
    [parameter] = [
        p
        for p in document["paths"]["/api/v1/agents/{agent}/entries"]["get"]["parameters"]
        if p["name"] == "source"
    ]
    assert _enum(parameter["schema"]) == sources
    api.post(
        "/agents/agent-a/entries", {"category": "lessons", "content": "Pin the base image"}, token=token_a
    )
    for source in sources:
        response = api.get("/agents/agent-a/entries", token=token_a, source=source)
        assert response.status_code == 200, response.content
        assert response.json()["count"] == (1 if source == "api" else 0)
    response = api.get("/agents/agent-a/entries", token=token_a, source="API")
    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["loc"] == ["query", "source"]
    assert all(f"'{source}'" in response.json()["detail"] for source in sources)


def test_a_search_results_role_is_listed_in_the_schema_as_messages_have_it(document):
    from sessions_app.models import Role

    properties = document["components"]["schemas"]["SearchResultOut"]["properties"]
    assert _enum(properties["role"]) == list(Role.values)
    assert _enum(properties["kind"]) == ["entry", "message", "file"]


def test_roles_statuses_and_categories_are_listed_wherever_an_answer_holds_them(document):
    """A message's role (messages, context, search), an entry's status and category (entries, search)
    were plain strings: the schema now lists the values the server stores, so a client's generated
    types match what it gets."""
    from sessions_app.models import Role
    from vault.models import Category, EntryStatus

    schemas = document["components"]["schemas"]
    assert _enum(schemas["MessageOut"]["properties"]["role"]) == list(Role.values)
    assert _enum(schemas["ContextMessage"]["properties"]["role"]) == list(Role.values)
    for name in ("EntryOut", "SearchResultOut"):
        assert _enum(schemas[name]["properties"]["status"]) == list(EntryStatus.values), name
        assert _enum(schemas[name]["properties"]["category"]) == list(Category.values), name


# Every operation can answer these, whatever it does: the database (the token is read from it) can be
# unavailable (503) or the request can lose to a concurrent transaction's lock (409, memoryproject/
# database_unavailable.py), the token can be missing (401) or over its rate (429).
COMMON_TO_AUTHENTICATED = {"400", "401", "403", "404", "409", "413", "422", "429", "503"}
RETRY_AFTER = {"409", "429", "503"}


def test_every_operation_documents_every_status_common_to_all_and_its_headers(document):
    """By construction over the whole document: a GET did not document the 409 of a lock conflict that
    any request reading the database can answer, and no 409 documented Retry-After."""
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            expected = COMMON_TO_AUTHENTICATED if operation.get("security") else {"503"}
            assert expected <= set(responses), (method, path, expected - set(responses))
            for status in expected & RETRY_AFTER:
                assert "Retry-After" in responses[status].get("headers", {}), (method, path, status)
            if "401" in expected:
                assert "WWW-Authenticate" in responses["401"]["headers"], (method, path)
            for status in expected - {"503"} if operation.get("security") else ():
                content = responses[status]["content"]["application/json"]["schema"]
                assert content == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, status)


def test_an_operations_own_409_keeps_the_lock_conflicts_meaning(document):
    """GET messages of an archived session declares its own 409; it also still answers the lock
    conflict's 409, with Retry-After."""
    conflict = document["paths"]["/api/v1/agents/{agent}/messages"]["get"]["responses"]["409"]
    assert "archived" in conflict["description"] and "concurrent transaction" in conflict["description"]
    assert "Retry-After" in conflict["headers"]
    health = document["paths"]["/api/v1/healthz"]["get"]["responses"]["503"]
    assert "Retry-After" in health["headers"] and "status" in str(health["content"])


def _conforms(document, template: str, method: str, response) -> None:
    """What schemathesis checks of an answer: its status is documented for the operation, its JSON
    body matches the documented schema, and the headers it sends that say something are documented."""
    import jsonschema_rs

    operation = document["paths"][template][method]
    documented = operation["responses"].get(str(response.status_code))
    assert documented is not None, (method, template, response.status_code, sorted(operation["responses"]))
    content_type = response["Content-Type"].split(";")[0]
    if documented.get("content") and content_type == "application/json":
        schema = documented["content"][content_type]["schema"]
        validator = jsonschema_rs.validator_for({**schema, "components": document["components"]})
        assert validator.is_valid(response.json()), (method, template, response.status_code, response.content)
    for header in ("Retry-After", "WWW-Authenticate", "ETag"):
        if header in response:
            assert header in documented.get("headers", {}), (method, template, response.status_code, header)


def _database_error(cause: Exception | None):
    """The error Django raises for a statement that failed with `cause` (psycopg's), or for a lost
    connection (no SQLSTATE: the database is unavailable)."""
    from django.db import OperationalError

    try:
        try:
            raise cause or OSError("server closed the connection unexpectedly")
        except Exception as exc:
            raise OperationalError(str(exc)) from exc
    except OperationalError as wrapped:
        return wrapped


@pytest.fixture
def representative_gets(agent_a, admin_token, api):
    """Operations that only read, each named by its template and a concrete address of a row that
    exists (so that each reaches its view)."""
    from tests.factories import EntryFactory

    entry = EntryFactory(agent=agent_a, category="decisions", content="The ledger lives in PostgreSQL")
    said = [{"role": "user", "text": "We use PostgreSQL for the ledger."}]
    api.post("/agents/agent-a/messages", {"session": "s", "messages": said}, token=admin_token)
    api.put("/agents/agent-a/files/notes.md", {"content": "# Notes\n"}, token=admin_token)
    return [
        ("/api/v1/me", "/me", {}),
        ("/api/v1/agents", "/agents", {}),
        ("/api/v1/stats", "/stats", {}),
        ("/api/v1/agents/{agent}/entries", "/agents/agent-a/entries", {}),
        ("/api/v1/entries/{entry_id}", f"/entries/{entry.pk}", {}),
        ("/api/v1/entries/{entry_id}/history", f"/entries/{entry.pk}/history", {}),
        ("/api/v1/project/context", "/project/context", {}),
        ("/api/v1/agents/{agent}/messages", "/agents/agent-a/messages", {"session": "s"}),
        ("/api/v1/agents/{agent}/sessions", "/agents/agent-a/sessions", {}),
        ("/api/v1/agents/{agent}/sessions/{session_id}/branches", "/agents/agent-a/sessions/s/branches", {}),
        ("/api/v1/search", "/search", {"q": "ledger"}),
        ("/api/v1/agents/{agent}/files", "/agents/agent-a/files", {}),
        ("/api/v1/agents/{agent}/files/{path}", "/agents/agent-a/files/notes.md", {}),
        ("/api/v1/review", "/review", {}),
        ("/api/v1/review/counts", "/review/counts", {}),
    ]


@pytest.mark.parametrize(
    "status, cause",
    [
        (409, "lock timeout"),
        (409, "deadlock"),
        (409, "serialization failure"),
        (503, "connection lost"),
    ],
)
def test_a_get_that_fails_in_the_database_answers_a_documented_status(
    document, api, admin_token, representative_gets, status, cause
):
    """A GET whose statement loses to a lock answered a 409 its operation did not document (only
    writes did); the database going away answers a documented 503. Both with Retry-After."""
    import psycopg
    from django.db import connection

    causes = {
        "lock timeout": psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"),
        "deadlock": psycopg.errors.DeadlockDetected("deadlock detected"),
        "serialization failure": psycopg.errors.SerializationFailure("could not serialize access"),
        "connection lost": None,
    }

    def fail(execute, sql, params, many, context):
        raise _database_error(causes[cause])

    for template, address, query in representative_gets:
        with connection.execute_wrapper(fail):
            response = api.get(address, token=admin_token, **query)
        assert response.status_code == status, (address, response.content)
        assert response["Retry-After"]
        _conforms(document, template, "get", response)


def test_a_get_answers_documented_statuses_for_its_caller_and_its_input(
    document, api, admin_token, token_b, representative_gets
):
    """200, 401 (no token, unknown token), 403 or 404 (an agent token elsewhere), 422 (a parameter out
    of range), each documented with its schema and headers."""
    for template, address, query in representative_gets:
        for token, allowed in [
            (admin_token, {200}),
            (None, {401}),
            ("not-a-token", {401}),
            (token_b, {200, 403, 404}),
        ]:
            response = api.get(address, token=token, **query)
            assert response.status_code in allowed, (address, token, response.content)
            _conforms(document, template, "get", response)
        response = api.get(address, token=admin_token, **{**query, "limit": -1, "days": 0})
        _conforms(document, template, "get", response)


@override_settings(MEMORY_API_RATE_LIMIT="1/m")
@pytest.mark.usefixtures("one_rate_window")
def test_a_get_over_the_rate_limit_answers_a_documented_429(document, api, project, representative_gets):
    from tests.conftest import _token

    for template, address, query in representative_gets:
        token = _token(project, None, TokenScope.ADMIN)
        assert api.get(address, token=token, **query).status_code == 200, address
        response = api.get(address, token=token, **query)
        assert response.status_code == 429 and response["Retry-After"], (address, response.content)
        _conforms(document, template, "get", response)


def test_a_read_of_an_archived_sessions_conversation_answers_a_documented_409(
    document, api, admin_token, agent_a
):
    from sessions_app.models import Session
    from sessions_app.services import session_archive

    said = [{"role": "user", "text": "We use PostgreSQL for the ledger."}]
    api.post("/agents/agent-a/messages", {"session": "s", "messages": said}, token=admin_token)
    session_archive(session=Session.objects.get(external_id="s"), reason="test")
    for template, address, query in [
        ("/api/v1/agents/{agent}/messages", "/agents/agent-a/messages", {"session": "s"}),
        ("/api/v1/agents/{agent}/sessions/{session_id}/branches", "/agents/agent-a/sessions/s/branches", {}),
    ]:
        response = api.get(address, token=admin_token, **query)
        assert response.status_code == 409 and "archived" in response.json()["detail"], response.content
        _conforms(document, template, "get", response)


def test_every_if_match_header_gives_an_example_that_reaches_the_operation(document, api, token_a, agent_a):
    """A generated If-Match that matches the pattern but names no current ETag is a 412, for every
    guess: schemathesis reported PATCH and DELETE of an entry as mostly rejecting its data. `*` is valid
    and always reaches the write."""
    import re

    seen = 0
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "header" and parameter["name"] == "If-Match":
                    seen += 1
                    assert parameter["schema"]["examples"] == ["*"]
                    assert re.match(parameter["schema"]["pattern"], "*")
    assert seen >= 3
    created = api.post("/agents/agent-a/entries", {"category": "lessons", "content": "Pin it"}, token=token_a)
    entry_id = created.json()["id"]
    response = api.patch(
        f"/entries/{entry_id}", {"content": "Pin it."}, token=token_a, headers={"If-Match": "*"}
    )
    assert response.status_code == 200, response.content


def test_the_forget_answer_says_what_each_count_counts(document):
    """The answer's fields had no description: nothing said that `entries` takes in the entries written
    from a forgotten message, nor what `not_found` lists."""
    schema = document
    forget = schema["paths"]["/api/v1/forget"]["post"]["responses"]["200"]["content"]["application/json"]
    name = forget["schema"]["$ref"].rsplit("/", 1)[1]
    fields = schema["components"]["schemas"][name]["properties"]
    assert set(fields) == {
        "count",
        "entries",
        "derived_entries",
        "entries_rewritten",
        "messages",
        "summaries_rewritten",
        "not_found",
    }
    assert all(field.get("description") for field in fields.values()), fields
