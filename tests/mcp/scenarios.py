"""What both transports must do, driven through the SDK's ClientSession: every tool, a resource, the prompt,
tenancy, scopes and malformed arguments."""

import json

from tests.mcp.conftest import text

TOOLS = {
    "memory_context",
    "memory_search",
    "memory_save",
    "memory_update",
    "memory_forget",
    "memory_get",
    "memory_list",
    "session_log",
    "session_checkpoint",
    "session_recover",
    "session_close",
    "workspace_read",
    "workspace_write",
    "workspace_edit",
    "memory",
}
WRITING_TOOLS = {
    "memory_save",
    "memory_update",
    "memory_forget",
    "session_log",
    "session_checkpoint",
    "session_close",
    "workspace_write",
    "workspace_edit",
}


async def call(client, name: str, **arguments):
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name} failed: {text(result)}"
    body = text(result)
    try:
        return json.loads(body)
    except ValueError:
        return body


async def refused(client, name: str, **arguments) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) was not refused: {text(result)[:300]}"
    return text(result)


async def every_tool(session) -> int:
    """Call every tool at least once, read each resource and get the prompt; returns the saved entry id
    (forgotten again at the end)."""
    listed = await session.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS
    by_name = {tool.name: tool for tool in listed.tools}
    assert by_name["memory_search"].annotations.read_only_hint is True
    assert by_name["memory_forget"].annotations.destructive_hint is True

    saved = await call(
        session,
        "memory_save",
        category="decisions",
        content="We chose PostgreSQL full-text search for retrieval.",
        tags=["search"],
    )
    entry_id = saved["id"]
    assert saved["outcome"] == "saved" and saved["agent"] == "dev" and saved["source"] == "mcp"
    again = await call(
        session,
        "memory_save",
        category="decisions",
        content="We chose PostgreSQL full-text search for retrieval.",
    )
    assert again["outcome"].startswith("duplicate") and again["id"] == entry_id

    found = await call(session, "memory_search", query="postgresql retrieval", kinds=["entries"])
    assert entry_id in [r["id"] for r in found["results"]]
    assert found["results"][0]["snippet"] and "score" in found["results"][0]
    relaxed = await call(session, "memory_search", query='"retrieval for PostgreSQL"', kinds=["entries"])
    assert entry_id in [r["id"] for r in relaxed["results"]]
    assert relaxed["relaxed_phrases"] == ["retrieval for PostgreSQL"]

    context = await session.call_tool("memory_context", {"task": "improve retrieval"})
    assert not context.is_error
    assert "PostgreSQL full-text search" in text(context)
    assert entry_id in context.structured_content["cited"]

    assert (await call(session, "memory_get", id=entry_id))["content"].startswith("We chose PostgreSQL")
    updated = await call(
        session,
        "memory_update",
        id=entry_id,
        content="We chose PostgreSQL full-text search for retrieval; pgvector comes later.",
        importance=0.9,
    )
    assert updated["content"].endswith("pgvector comes later.") and updated["importance"] == 0.9
    assert updated["source"] == "mcp"  # an edit keeps how the entry was written, as a REST PATCH does
    listed_entries = await call(session, "memory_list", category="decisions")
    assert entry_id in [e["id"] for e in listed_entries["items"]]

    messages = [
        {"role": "user", "text": "Remember: deploys happen on Tuesdays.", "id": "m1"},
        {"role": "assistant", "text": "Noted, deploys on Tuesdays.", "id": "m2"},
    ]
    logged = await call(session, "session_log", session="chat-1", messages=messages)
    assert logged["stored"] == 2 and logged["session"]["chat_id"] == "chat-1"
    relogged = await call(session, "session_log", session="chat-1", messages=messages)
    assert relogged["stored"] == 0 and relogged["duplicates"] == 2
    checkpoint = await call(session, "session_checkpoint", session="chat-1")
    assert [m["text"] for m in checkpoint["messages"]][-1] == "Noted, deploys on Tuesdays."
    recovered = await call(session, "session_recover")
    assert recovered["chat_id"] == "chat-1" and len(recovered["messages"]) == 2

    written = await call(
        session, "workspace_write", path="memory/2026-01-15.md", content="# Notes\n- shipped MCP\n"
    )
    assert written["created"] is True
    edited = await call(
        session,
        "workspace_edit",
        path="memory/2026-01-15.md",
        old_text="shipped MCP",
        new_text="shipped the MCP server",
    )
    assert edited["replacements"] == 1
    read = await call(session, "workspace_read", path="memory/2026-01-15.md")
    assert "shipped the MCP server" in read["content"]
    created = await call(
        session, "memory", command="create", path="/memories/progress.md", file_text="step 1 done\n"
    )
    assert "progress.md" in created
    viewed = await call(session, "memory", command="view", path="/memories/progress.md")
    assert "step 1 done" in viewed

    closed = await call(
        session, "session_close", session="chat-1", summary="Set up the MCP server; next: benchmarks."
    )
    assert "Set up the MCP server" in closed["handoff"]["content"]

    resource = await session.read_resource("memory://files/memory/2026-01-15.md")
    assert "shipped the MCP server" in resource.contents[0].text
    handoff = await session.read_resource("memory://handoff/latest")
    assert "Set up the MCP server" in handoff.contents[0].text
    project = await session.read_resource("memory://project/context")
    assert "Payments platform" in project.contents[0].text

    prompt = await session.get_prompt("start_session", {"task": "retrieval"})
    assert "MEMORY CONTEXT" in prompt.messages[0].content.text
    assert "pgvector comes later" in prompt.messages[0].content.text

    forgot = await call(session, "memory_forget", ids=[entry_id])
    assert forgot["count"] == 1
    assert "not found" in (await refused(session, "memory_get", id=entry_id))
    return entry_id


async def other_agent_refused(session, ops_entry_id: int) -> None:
    """An agent token (dev) is refused the memory of another agent (ops) on every tool."""
    attempts = [
        ("memory_context", {"task": "x", "agent": "ops"}),
        ("memory_search", {"query": "credentials", "agent": "ops"}),
        ("memory_save", {"category": "lessons", "content": "planted by dev", "agent": "ops"}),
        ("memory_update", {"id": ops_entry_id, "content": "rewritten by dev"}),
        ("memory_get", {"id": ops_entry_id}),
        ("memory_list", {"agent": "ops"}),
        ("memory_forget", {"category": "decisions", "agent": "ops"}),
        ("session_log", {"session": "s", "messages": [{"role": "user", "text": "hi"}], "agent": "ops"}),
        ("session_checkpoint", {"session": "s", "agent": "ops"}),
        ("session_recover", {"agent": "ops"}),
        ("session_close", {"session": "s", "summary": "x", "agent": "ops"}),
        ("workspace_read", {"path": "MEMORY.md", "agent": "ops"}),
        ("workspace_write", {"path": "MEMORY.md", "content": "planted", "agent": "ops"}),
        ("workspace_edit", {"path": "MEMORY.md", "old_text": "#", "new_text": "planted", "agent": "ops"}),
        ("memory", {"command": "view", "path": "/memories", "agent": "ops"}),
    ]
    assert {name for name, _ in attempts} == TOOLS
    for name, arguments in attempts:
        message = await refused(session, name, **arguments)
        assert "not found" in message.lower(), f"{name}: {message}"
    # Saving into its own memory an entry that supersedes the other agent's is refused the same way.
    message = await refused(
        session, "memory_save", category="decisions", content="x", supersedes=ops_entry_id
    )
    assert "not found" in message.lower(), message
    # Forgetting by id reports what it may not see as not found, and touches nothing.
    forgot = await call(session, "memory_forget", ids=[ops_entry_id])
    assert forgot["count"] == 0 and forgot["not_found"] == [ops_entry_id]
    # A search without an agent stays within the token's own agent.
    found = await call(session, "memory_search", query="credentials monthly")
    assert ops_entry_id not in [r["id"] for r in found["results"]]


async def read_token_cannot_write(session) -> None:
    attempts = {
        "memory_save": {"category": "lessons", "content": "a read token writes"},
        "memory_update": {"id": 1, "content": "x"},
        "memory_forget": {"category": "lessons"},
        "session_log": {"session": "s", "messages": [{"role": "user", "text": "hi"}]},
        "session_checkpoint": {"session": "s"},
        "session_close": {"session": "s"},
        "workspace_write": {"path": "MEMORY.md", "content": "x"},
        "workspace_edit": {"path": "MEMORY.md", "old_text": "#", "new_text": "x"},
    }
    assert set(attempts) == WRITING_TOOLS
    for name, arguments in attempts.items():
        message = await refused(session, name, **arguments)
        assert "Permission denied" in message, f"{name}: {message}"
    assert "Permission denied" in await refused(
        session, "memory", command="create", path="/memories/x.md", file_text="x"
    )
    # What it may do, it can.
    await call(session, "memory_search", query="anything")
    await call(session, "memory_list")
    await call(session, "memory", command="view", path="/memories")


async def malformed_arguments_then_going_on(session) -> None:
    assert "id" in await refused(session, "memory_get", id="not-a-number")
    assert "category" in await refused(session, "memory_save", category="gossip", content="x")
    await refused(session, "memory_save", content="no category")
    await refused(session, "memory_search", query="")
    await refused(session, "session_log", session="s", messages="not a list")
    await refused(session, "memory", command="explode", path="/memories")
    await refused(session, "memory", command="view", path="/etc/passwd")
    await refused(session, "workspace_write", path="../../etc/passwd", content="x")
    await refused(session, "memory_update", id=-5, content="x")
    # The session is still usable.
    assert (await call(session, "memory_list"))["count"] >= 0
