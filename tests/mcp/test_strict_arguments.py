"""Tool arguments the SDK's lax argument model took and read as something else: booleans spelled as
strings or numbers, arguments no tool takes (dropped without a word), and a request whose id is null
(taken for a notification and never answered)."""

import json
import queue
import subprocess
import sys
import threading

import httpx2

from sessions_app.models import Message
from tests.mcp import scenarios
from tests.mcp.conftest import ROOT, http_session, run, stdio_env
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
                await scenarios.refused(session, "memory_search", query="x", mdoe="lexical"),
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
    fields = ["importnace", "mdoe", "all", "messages.0.intenral", "depth"]
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


def test_a_number_argument_is_a_json_number_not_a_string(mcp_live_url, dev, dev_token):
    """memory_save(importance="0.9") stored 0.9 and memory_forget(ids=["1"]) forgot entry 1, where each
    tool's inputSchema says number or integer: refused in the REST API's words, nothing stored."""
    first = services.entry_create(agent=dev, category="lessons", content="The first lesson", created_by="t")
    save = {"category": "lessons", "content": "The second lesson"}

    async def refuse():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return [
                await scenarios.refused(session, "memory_save", **save, importance="0.9"),
                await scenarios.refused(session, "memory_save", **save, supersedes=str(first.pk)),
                await scenarios.refused(session, "memory_update", id=first.pk, importance="0.9"),
                await scenarios.refused(session, "memory_get", id=str(first.pk)),
                await scenarios.refused(session, "memory_list", limit="5"),
                await scenarios.refused(session, "memory_forget", ids=[str(first.pk)]),
                await scenarios.refused(session, "memory_context", budget_tokens="500"),
            ]

    fields = ["importance", "supersedes", "importance", "id", "limit", "ids.0", "budget_tokens"]
    kinds = ["number", "integer", "number", "integer", "integer", "integer", "integer"]
    assert run(refuse) == [
        f"Invalid input: {field}: Input should be a valid {kind}, not a string"
        for field, kind in zip(fields, kinds, strict=True)
    ]
    first.refresh_from_db()
    assert first.status == "active" and first.importance == 0.5
    assert list(VaultEntry.objects.values_list("pk", flat=True)) == [first.pk]


def test_a_request_with_a_null_id_is_answered_as_invalid_over_http(mcp_live_url, dev_token):
    """JSON-RPC: a notification has no id member; "id": null is a request, which MCP forbids. The SDK
    took it for a notification: 202 and no answer, the tool never run, the client left waiting."""
    headers = {
        "Authorization": f"Bearer {dev_token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    call = {
        "jsonrpc": "2.0",
        "id": None,
        "method": "tools/call",
        "params": {
            "name": "memory_save",
            "arguments": {"category": "lessons", "content": "Deploys on Fridays"},
        },
    }
    response = httpx2.post(f"{mcp_live_url}/mcp", json=call, headers=headers)
    assert response.status_code == 400
    assert response.json() == NULL_ID
    ping = httpx2.post(
        f"{mcp_live_url}/mcp", json={"jsonrpc": "2.0", "id": None, "method": "ping"}, headers=headers
    )
    assert ping.status_code == 400 and ping.json() == NULL_ID
    # A notification (no id member) and a message whose text holds "id": null are what they were.
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(f"{mcp_live_url}/mcp", json=notification, headers=headers).status_code == 202
    nested = {**call, "id": 5, "params": {"name": "memory_search", "arguments": {"query": '"id": null'}}}
    answer = httpx2.post(f"{mcp_live_url}/mcp", json=nested, headers=headers).json()
    assert answer["id"] == 5 and answer["result"]["isError"] is False
    assert not VaultEntry.objects.exists()


def test_a_request_with_a_null_id_is_answered_as_invalid_over_stdio(dev, mcp_project):
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mcp", "--agent", "dev", "--project", "acme"],
        cwd=ROOT,
        env=stdio_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()

    def send(message: dict) -> None:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()

    try:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        assert json.loads(lines.get(timeout=60))["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        arguments = {"category": "lessons", "content": "Deploys on Fridays"}
        send(
            {
                "jsonrpc": "2.0",
                "id": None,
                "method": "tools/call",
                "params": {"name": "memory_save", "arguments": arguments},
            }
        )
        answer = json.loads(lines.get(timeout=60))
        send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        after = json.loads(lines.get(timeout=60))
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    assert answer == NULL_ID
    assert after == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert not VaultEntry.objects.exists()
