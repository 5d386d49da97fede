"""The stdio transport: `manage.py mcp` spawned as a client would, driven by the SDK's stdio client."""

import json
import queue
import subprocess
import sys
import threading

import anyio
from django.db import connection

from tests.mcp import scenarios
from tests.mcp.conftest import ROOT, run, stdio_env, stdio_session
from vault import services
from vault.models import ApiToken, VaultEntry, WorkspaceFile


def test_every_tool_resource_and_prompt_as_the_named_agent(dev, mcp_project):
    async def body():
        async with stdio_session("--agent", "dev", "--project", "acme") as session:
            return await scenarios.every_tool(session)

    entry_id = run(body)
    assert not VaultEntry.objects.filter(pk=entry_id).exists()
    assert (
        "shipped the MCP server" in WorkspaceFile.objects.get(agent=dev, path="memory/2026-01-15.md").content
    )


def test_agent_token_is_refused_another_agents_memory_and_malformed_input_is_a_tool_error(
    dev_token, ops, ops_entry
):
    # --agent cannot lift an agent token over to another agent: the server refuses to start so (it
    # started, and every tool then answered "Agent 'ops' not found").
    started = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--agent", "ops"],
        cwd=ROOT,
        env=stdio_env(MEMORY_TOKEN=dev_token),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0
    assert "The token is agent 'dev'" in started.stderr and "--agent 'ops'" in started.stderr

    async def body():
        async with stdio_session("--agent", "dev", MEMORY_TOKEN=dev_token) as session:
            await scenarios.refused(session, "memory_list", agent="ops")
        async with stdio_session("--token", dev_token) as session:
            await scenarios.other_agent_refused(session, ops_entry.pk)
            await scenarios.malformed_arguments_then_going_on(session)

    run(body)
    ops_entry.refresh_from_db()
    assert ops_entry.content == "Ops rotates the database credentials monthly."


def test_read_token_cannot_write(dev_read_token):
    async def body():
        async with stdio_session(MEMORY_TOKEN=dev_read_token) as session:
            await scenarios.read_token_cannot_write(session)

    run(body)
    assert not VaultEntry.objects.exists()


def test_stdout_carries_nothing_but_json_rpc_messages(dev, mcp_project):
    """Read the raw stream: Django, the job queue and the SDK log, but to stderr only."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mcp", "--agent", "dev", "--project", "acme"],
        cwd=ROOT,
        env=stdio_env(LOG_LEVEL="DEBUG", PYTHONWARNINGS="always"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    stderr_chunks: list[str] = []
    threading.Thread(target=lambda: stderr_chunks.extend(process.stderr), daemon=True).start()

    def send(message: dict) -> None:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()

    def call(id_: int, name: str, arguments: dict) -> None:
        send(
            {
                "jsonrpc": "2.0",
                "id": id_,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )

    raw: list[str] = []

    def wait_for(id_: int) -> dict:
        while True:
            line = lines.get(timeout=120)
            raw.append(line)
            message = json.loads(line)
            if message.get("id") == id_:
                return message

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert wait_for(1)["result"]["serverInfo"]["name"] == "agent-memory"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len(wait_for(2)["result"]["tools"]) == len(scenarios.TOOLS)
        call(3, "memory_save", {"category": "lessons", "content": "Logs belong on stderr."})
        assert wait_for(3)["result"].get("isError") is not True
        call(4, "session_log", {"session": "raw", "messages": [{"role": "user", "text": "I prefer tabs."}]})
        assert wait_for(4)["result"].get("isError") is not True
        call(5, "memory_get", {"id": "nope"})  # a logged refusal
        assert wait_for(5)["result"]["isError"] is True
        call(6, "session_close", {"session": "raw", "summary": "Talked about tabs."})
        assert wait_for(6)["result"].get("isError") is not True
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    while not lines.empty():
        raw.append(lines.get())
    assert raw, "no output at all"
    for line in raw:
        message = json.loads(line)  # every line is one JSON document...
        assert message["jsonrpc"] == "2.0"  # ...and a JSON-RPC message
        assert "id" in message or "method" in message
    assert "".join(stderr_chunks).strip(), "the logs went nowhere: expected them on stderr"
    # An MCP client starts the process with the environment its configuration gives: the first line
    # on stderr says whose memory and which database, so one started without DATABASE_URL shows.
    started = "memory MCP over stdio: project 'acme', agent 'dev'; database: "
    line = next((chunk for chunk in stderr_chunks if chunk.startswith(started)), None)
    assert line is not None, stderr_chunks[:5]
    assert f"/{connection.settings_dict['NAME']} (DATABASE_URL)" in line, line


def test_the_stdio_server_names_the_embedded_database_it_uses(settings, tmp_path):
    from memoryproject.management.commands.mcp import _database_describe

    settings.EMBEDDED_DATABASE, settings.MEMORY_DATA_DIR = True, tmp_path
    assert _database_describe() == f"the embedded PostgreSQL under {tmp_path / 'pg'}"


def test_a_token_revoked_while_the_server_runs_is_refused_from_the_next_call(dev, dev_token):
    """The token was checked once, when `manage.py mcp` started: revoking it (the curator's settings
    page, the admin) changed nothing for as long as the process ran, where the REST API and /mcp over
    HTTP refuse it from the next request."""
    token = ApiToken.objects.get(agent=dev)

    async def body():
        async with stdio_session(MEMORY_TOKEN=dev_token) as session:
            await scenarios.call(session, "memory_list")
            await anyio.to_thread.run_sync(lambda: services.token_revoke(token=token))
            listed = await scenarios.refused(session, "memory_list")
            saved = await scenarios.refused(
                session, "memory_save", category="lessons", content="after revoke"
            )
            return listed, saved

    listed, saved = run(body)
    assert "revoked" in listed and "revoked" in saved
    assert not VaultEntry.objects.filter(agent=dev).exists()


def test_a_call_whose_text_has_a_lone_surrogate_is_answered_not_dropped(dev, mcp_project):
    """The SDK's stdio reader could not parse a line escaping half of a surrogate pair ("\\ud83d", an
    emoji cut in two, as JavaScript's JSON.stringify writes it) and dropped it without a word: the client
    waited for that call's answer forever. It now gets a tool error under the call's id."""
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

    def wait_for(id_: int) -> dict:
        while True:
            message = json.loads(lines.get(timeout=120))  # as the test above: a loaded machine
            if message.get("id") == id_:
                return message

    try:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        process.stdin.write(json.dumps(initialize) + "\n")
        process.stdin.flush()
        wait_for(1)
        process.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        process.stdin.write(
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_save", '
            '"arguments": {"category": "lessons", "content": "Deploys are fine \\ud83d"}}}\n'
        )
        process.stdin.flush()
        answer = wait_for(2)
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    assert answer["result"]["isError"] is True
    assert "lone surrogates" in answer["result"]["content"][0]["text"]
    assert not VaultEntry.objects.exists()
