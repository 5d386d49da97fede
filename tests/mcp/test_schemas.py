"""What the tools advertise in their input schemas is what the server enforces: the same limits, from the
same settings, as the REST API's OpenAPI document."""

from django.conf import settings

from memoryproject.mcp.server import mcp_server
from tests.mcp.conftest import run
from tests.mcp.scenarios import TOOLS
from vault.selectors import MAX_ID
from vault.services.files import WORKSPACE_PATH_MAX

LIMITS = {"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"}


def advertised(schema: dict) -> dict:
    """The limits of one argument, on the argument or on a branch of its anyOf (`X | None`)."""
    found = {key: value for key, value in schema.items() if key in LIMITS}
    for branch in schema.get("anyOf", []):
        found.update({key: value for key, value in branch.items() if key in LIMITS})
    return found


def test_every_tools_advertised_limits_are_the_ones_the_server_enforces():
    entry = {"maxLength": settings.MEMORY_MAX_ENTRY_BYTES}  # vault.text.text_check
    agent = {"maxLength": 64}  # an agent id is a slug of 1-64 characters
    session = {"minLength": 1, "maxLength": 200}  # sessions_app.services.session_ensure
    path = {"minLength": 1, "maxLength": WORKSPACE_PATH_MAX}
    entry_id = {"minimum": 1, "maximum": MAX_ID}
    tags = {"maxItems": settings.MEMORY_MAX_TAGS}
    importance = {"minimum": 0.0, "maximum": 1.0}
    expected = {
        "memory_context": {
            "task": {"maxLength": 10_000},
            "budget_tokens": {"minimum": 50, "maximum": settings.MEMORY_CONTEXT_MAX_BUDGET},
            "agent": agent,
        },
        "memory_search": {
            "query": {"minLength": 1, "maxLength": 1000},
            "kinds": {"maxItems": 3},
            "tags": {"maxItems": 64},
            "limit": {"minimum": 1, "maximum": 100},
            "offset": {"minimum": 0, "maximum": 10_000},
            "agent": agent,
        },
        "memory_save": {
            "content": entry,
            "tags": tags,
            "importance": importance,
            "supersedes": entry_id,
            "agent": agent,
        },
        "memory_update": {"id": entry_id, "content": entry, "tags": tags, "importance": importance},
        "memory_get": {"id": entry_id},
        "memory_list": {
            "limit": {"minimum": 1, "maximum": 500},
            "offset": {"minimum": 0, "maximum": 10_000_000},
            "agent": agent,
        },
        "memory_forget": {"ids": {"maxItems": 10_000}, "tags": {"maxItems": 64}, "agent": agent},
        "session_log": {
            "session": session,
            "messages": {"minItems": 1, "maxItems": min(10_000, settings.MEMORY_APPEND_MAX_MESSAGES)},
            "model_id": {"maxLength": 200},
            "max_input_tokens": {"minimum": 1000, "maximum": 100_000_000},
            "agent": agent,
        },
        "session_checkpoint": {"session": session, "agent": agent},
        "session_recover": {"agent": agent},
        "session_close": {"session": session, "summary": entry, "agent": agent},
        "workspace_read": {"path": path, "agent": agent},
        "workspace_write": {"path": path, "content": entry, "agent": agent},
        "workspace_edit": {"path": path, "old_text": {"minLength": 1}, "new_text": entry, "agent": agent},
        "memory": {"file_text": entry, "insert_line": {"minimum": 0}, "agent": agent},
    }
    assert set(expected) == TOOLS
    tools = {tool.name: tool for tool in run(mcp_server().list_tools)}
    for name, limits in expected.items():
        properties = tools[name].input_schema["properties"]
        found = {arg: advertised(schema) for arg, schema in properties.items() if advertised(schema)}
        assert found == limits, name
    message = tools["session_log"].input_schema["$defs"]["MessageIn"]["properties"]["text"]
    assert advertised(message)["maxLength"] == settings.MEMORY_MAX_MESSAGE_BYTES


def test_every_argument_of_every_tool_says_what_it_is_for():
    """A model chooses and fills a tool from its schema alone: 25 arguments had none (memory_search's
    kinds, since and until, the memory tool's view_range and insert_line...), and budget_tokens named
    settings ("Default MEMORY_TOKEN_BUDGET") instead of the numbers."""
    tools = {tool.name: tool for tool in run(mcp_server().list_tools)}
    undescribed = {
        (name, arg)
        for name, tool in tools.items()
        for arg, schema in tool.input_schema["properties"].items()
        if not schema.get("description")
    }
    assert not undescribed
    budget = tools["memory_context"].input_schema["properties"]["budget_tokens"]["description"]
    assert str(settings.MEMORY_TOKEN_BUDGET) in budget and "MEMORY_" not in budget
