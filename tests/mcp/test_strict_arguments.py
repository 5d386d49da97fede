"""Tool arguments the SDK's lax argument model took and read as something else: arguments no tool
takes (dropped without a word)."""

from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from vault import services
from vault.models import VaultEntry, WorkspaceFile

EXTRA = "Extra inputs are not permitted"
NOT_BOOLEAN = "Input should be a valid boolean"
NULL_ID = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {
        "code": -32600,
        "message": "Invalid Request: a request's id is a string or a number, never null "
        "(a notification has no id member)",
    },
}


def test_every_tool_refuses_an_argument_it_does_not_take(mcp_live_url, dev, dev_token):
    """memory_save(importnace=0.9) saved the entry with importance 0.5 and said nothing."""
    services.file_write(agent=dev, path="notes.md", content="one two one\n", changed_by="t")

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            listed = await session.list_tools()
            save = {"category": "lessons", "content": "Deploys happen on Fridays"}
            message = {"role": "user", "text": "hello"}
            return listed, [
                await scenarios.refused(session, "memory_save", **save, importnace=0.9),
                await scenarios.refused(session, "memory_search", query="x", mode="lexical"),
                await scenarios.refused(
                    session, "workspace_edit", path="notes.md", old_text="one", new_text="1", all=True
                ),
                await scenarios.refused(
                    session, "session_log", session="s", messages=[{**message, "intenral": True}]
                ),
                await scenarios.refused(session, "memory", command="view", path="/memories", depth=2),
            ]

    listed, refused = run(body)
    assert {
        tool.name: tool.input_schema.get("additionalProperties") for tool in listed.tools
    } == dict.fromkeys(scenarios.TOOLS, False)
    log = next(tool for tool in listed.tools if tool.name == "session_log")
    assert log.input_schema["$defs"]["MessageIn"]["additionalProperties"] is False
    fields = ["importnace", "mode", "all", "messages.0.intenral", "depth"]
    assert refused == [f"Invalid input: {field}: {EXTRA}" for field in fields]
    assert not VaultEntry.objects.exists()
    assert WorkspaceFile.objects.get(agent=dev, path="notes.md").content == "one two one\n"
