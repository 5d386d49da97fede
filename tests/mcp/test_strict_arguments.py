"""Tool arguments the SDK's lax argument model took and read as something else: booleans spelled as
strings or numbers, and arguments no tool takes (dropped without a word)."""

from sessions_app.models import Message
from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from vault import services
from vault.models import VaultEntry, WorkspaceFile

EXTRA = "Extra inputs are not permitted"
NOT_BOOLEAN = "Input should be a valid boolean"


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


def test_a_boolean_argument_is_true_or_false_and_nothing_else(mcp_live_url, dev, dev_token):
    """replace_all="false" was read as false and replace_all=1 as true, as any of "yes", "on", "t"."""
    services.file_write(agent=dev, path="notes.md", content="one two one\n", changed_by="t")

    edit = {"path": "notes.md", "old_text": "one", "new_text": "1"}

    async def refuse():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            refused = []
            for value in ("false", "true", 0, 1, "yes"):
                message = {"role": "user", "text": "hi", "internal": value}
                refused += [
                    await scenarios.refused(session, "workspace_edit", **edit, replace_all=value),
                    await scenarios.refused(session, "memory_forget", tags=["x"], all_agents=value),
                    await scenarios.refused(session, "session_log", session="s", messages=[message]),
                ]
            return refused

    async def take():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.call(session, "workspace_edit", **edit, replace_all=True)

    fields = ["replace_all", "all_agents", "messages.0.internal"] * 5
    assert run(refuse) == [f"Invalid input: {field}: {NOT_BOOLEAN}" for field in fields]
    assert WorkspaceFile.objects.get(agent=dev, path="notes.md").content == "one two one\n"
    assert not Message.objects.exists()
    edited = run(take)
    assert edited["replacements"] == 2 and edited["content"] == "1 two 1\n"
