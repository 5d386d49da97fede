"""The streamable-HTTP transport at /mcp, driven by the SDK's client against a live server."""

import json
import logging
import socket
import time
from unittest import mock

import anyio
import httpx2
import pytest
from django.db import OperationalError, connection
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from sessions_app.models import Message
from tests.conftest import ApiClient
from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run, text
from vault import services
from vault.models import Agent, TokenScope, VaultEntry, WorkspaceFile


def test_every_tool_resource_and_prompt(mcp_live_url, dev, dev_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.every_tool(session)

    entry_id = run(body)
    assert not VaultEntry.objects.filter(pk=entry_id).exists()
    assert WorkspaceFile.objects.get(agent=dev, path="memory/2026-01-15.md").content.endswith("server\n")


def test_agent_token_is_refused_another_agents_memory_on_every_tool(mcp_live_url, dev_token, ops, ops_entry):
    memory_md = WorkspaceFile.objects.get(agent=ops, path="MEMORY.md").content

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            await scenarios.other_agent_refused(session, ops_entry.pk)
        # Naming the other agent in the URL changes nothing either.
        async with http_session(f"{mcp_live_url}/mcp?agent=ops", dev_token) as session:
            await scenarios.refused(session, "memory_list")
            await scenarios.refused(session, "memory_save", category="lessons", content="planted by dev")

    run(body)
    ops_entry.refresh_from_db()
    assert ops_entry.content == "Ops rotates the database credentials monthly."
    assert not VaultEntry.objects.filter(agent=ops).exclude(pk=ops_entry.pk).exists()
    assert not ops.sessions.exists()
    assert WorkspaceFile.objects.get(agent=ops, path="MEMORY.md").content == memory_md


def test_read_token_cannot_write(mcp_live_url, dev_read_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_read_token) as session:
            await scenarios.read_token_cannot_write(session)

    run(body)
    assert not VaultEntry.objects.exists()


def test_malformed_arguments_are_tool_errors_and_the_session_goes_on(mcp_live_url, dev_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            await scenarios.malformed_arguments_then_going_on(session)

    run(body)


def test_missing_or_unknown_token_is_401_like_the_rest_api(mcp_live_url, dev_token):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for headers in (
        {},
        {"Authorization": "Bearer mem_not-a-real-token"},
        {"Authorization": f"Basic {dev_token}"},
    ):
        response = httpx2.post(f"{mcp_live_url}/mcp", json=initialize, headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert "bearer token" in response.json()["detail"]


def test_project_token_names_the_agent_per_call_or_in_the_url(
    mcp_live_url, mcp_project, dev, project_admin_token
):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", project_admin_token) as session:
            message = await scenarios.refused(session, "memory_list")
            assert "Name the agent" in message
            saved = await scenarios.call(
                session, "memory_save", category="lessons", content="Ops pages at night.", agent="ops"
            )
            assert saved["agent"] == "ops"
        async with http_session(f"{mcp_live_url}/mcp?agent=dev", project_admin_token) as session:
            saved = await scenarios.call(
                session, "memory_save", category="lessons", content="Dev reviews on Fridays."
            )
            assert saved["agent"] == "dev"
            listed = await scenarios.call(session, "memory_list")
            assert [e["content"] for e in listed["items"]] == ["Dev reviews on Fridays."]
            # An invalid agent name is refused by the same validation as the REST API.
            assert "not valid" in await scenarios.refused(
                session, "memory_save", category="lessons", content="x", agent="Bad Name!"
            )

    run(body)
    assert Agent.objects.filter(project=mcp_project, slug="ops").exists()  # created on first use, as REST


def test_rest_and_mcp_share_one_error_text_for_scope(mcp_live_url, dev_read_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_read_token) as session:
            result = await session.call_tool("memory_save", {"category": "lessons", "content": "x"})
            return text(result)

    assert "This token has 'read' scope; this operation needs 'write'." in run(body)


def test_a_host_outside_allowed_hosts_is_refused(mcp_live_url, dev_token):
    """DNS-rebinding protection follows Django's ALLOWED_HOSTS."""
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
    headers = {
        "Authorization": f"Bearer {dev_token}",
        "Accept": "application/json, text/event-stream",
    }
    ok = httpx2.post(f"{mcp_live_url}/mcp", json=initialize, headers=headers)
    assert ok.status_code == 200
    refused = httpx2.post(f"{mcp_live_url}/mcp", json=initialize, headers={**headers, "Host": "evil.example"})
    assert refused.status_code in (400, 403, 421)


def test_session_current_is_the_same_session_for_session_log_and_session_close(mcp_live_url, dev, dev_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            for chat in ("chat-old", "chat-new"):
                await scenarios.call(
                    session, "session_log", session=chat, messages=[{"role": "user", "text": chat}]
                )
            logged = await scenarios.call(
                session, "session_log", session="current", messages=[{"role": "user", "text": "via current"}]
            )
            closed = await scenarios.call(session, "session_close", session="current", summary="done")
            after = await scenarios.call(
                session, "session_log", session="current", messages=[{"role": "user", "text": "after close"}]
            )
            return logged, closed, after

    logged, closed, after = run(body)
    assert logged["session"]["chat_id"] == "chat-new"
    assert closed["session"]["id"] == logged["session"]["id"] and closed["session"]["status"] == "closed"
    assert after["session"]["chat_id"] == "chat-old"  # the most recently active open session, as reads
    assert not dev.sessions.filter(external_id="current").exists()


def test_a_refused_start_session_prompt_is_an_invalid_params_error_with_the_rest_apis_detail(
    mcp_live_url, dev, dev_token, project_admin_token, caplog
):
    elsewhere = services.project_create(slug="elsewhere", name="Elsewhere")
    outsider_token = services.token_create(project=elsewhere, agent=None, scope=TokenScope.ADMIN)[1]
    rest_detail = ApiClient(dev_token).post("/agents/dev/context", {"command": "x" * 20000}).json()["detail"]

    async def refused(url: str, token: str, arguments: dict) -> MCPError:
        async with http_session(url, token) as session:
            with pytest.raises(MCPError) as raised:
                await session.get_prompt("start_session", arguments)
            # The session goes on.
            assert (await session.list_prompts()).prompts
        return raised.value

    async def body():
        return (
            await refused(f"{mcp_live_url}/mcp", project_admin_token, {}),
            await refused(f"{mcp_live_url}/mcp", dev_token, {"task": "x" * 20000}),
            await refused(f"{mcp_live_url}/mcp?agent=dev", outsider_token, {"task": "x"}),
        )

    with caplog.at_level(logging.INFO):
        no_agent, too_long, other_project = run(body)
    assert (no_agent.code, no_agent.data) == (INVALID_PARAMS, {"status": 422})
    assert no_agent.message.startswith("Name the agent")
    # The REST API's detail, naming the prompt's argument (task) for the REST API's field (command).
    assert rest_detail == "Invalid input: command: String should have at most 10000 characters"
    expected = rest_detail.replace("command:", "task:")
    assert (too_long.code, too_long.message, too_long.data) == (INVALID_PARAMS, expected, {"status": 422})
    assert (other_project.code, other_project.data) == (INVALID_PARAMS, {"status": 404})
    assert other_project.message == "Agent 'dev' not found."
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_memory_update_with_expected_updated_at_refuses_an_entry_changed_since(mcp_live_url, dev, dev_token):
    """The tool's compare-and-set: `updated_at` as memory_get returned it lets the update through; once
    another writer changed the entry, the same value is refused with what is current, and nothing changes."""
    import json

    entry = services.entry_create(
        agent=dev, category="decisions", content="Deploy on Fridays", created_by="t"
    )

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            read = json.loads(text(await session.call_tool("memory_get", {"id": entry.pk})))
            seen = read["updated_at"]
            ok = await session.call_tool(
                "memory_update",
                {"id": entry.pk, "content": "Deploy on Thursdays", "expected_updated_at": seen},
            )
            assert not ok.is_error, text(ok)
            updated = json.loads(text(ok))["updated_at"]
            stale = await session.call_tool(
                "memory_update", {"id": entry.pk, "content": "Deploy on Mondays", "expected_updated_at": seen}
            )
            naive = await session.call_tool(
                "memory_update",
                {"id": entry.pk, "content": "x", "expected_updated_at": "2026-01-01T10:00:00"},
            )
            return updated, stale, naive

    updated, stale, naive = run(body)
    assert stale.is_error
    assert f"Entry {entry.pk} has changed since it was read" in text(stale) and updated in text(stale)
    # Without an offset the time is UTC (README, Input rules): a state the entry was never in, refused.
    assert naive.is_error and f"Entry {entry.pk} has changed since it was read" in text(naive)
    entry.refresh_from_db()
    assert entry.content == "Deploy on Thursdays"
    assert entry.versions.count() == 1


def test_memory_update_with_expected_updated_at_refuses_an_entry_whose_supersede_link_changed(
    mcp_live_url, dev, dev_token
):
    """Redis <- Memcached <- Valkey: Memcached deleted, Valkey supersedes Redis; `updated_at` as
    memory_get showed it before is refused, as for an edit; as it is now it goes through."""
    import json

    a = services.entry_create(
        agent=dev, category="decisions", content="Use Redis for the cache", created_by="t"
    )
    b = services.entry_create(
        agent=dev,
        category="decisions",
        content="Use Memcached for the cache",
        supersedes_id=a.pk,
        created_by="t",
    )
    c = services.entry_create(
        agent=dev,
        category="decisions",
        content="Use Valkey for the cache",
        supersedes_id=b.pk,
        created_by="t",
    )

    async def call(name, arguments):
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await session.call_tool(name, arguments)

    seen = json.loads(text(run(call, "memory_get", {"id": c.pk})))["updated_at"]
    services.entry_delete(entry_id=b.pk, deleted_by="user:cora")
    now = json.loads(text(run(call, "memory_get", {"id": c.pk})))
    assert now["supersedes"] == a.pk and now["updated_at"] != seen
    stale = run(call, "memory_update", {"id": c.pk, "importance": 0.9, "expected_updated_at": seen})
    assert stale.is_error and f"Entry {c.pk} has changed since it was read" in text(stale)
    c.refresh_from_db()
    assert c.importance == 0.5
    done = run(
        call, "memory_update", {"id": c.pk, "importance": 0.9, "expected_updated_at": now["updated_at"]}
    )
    assert not done.is_error, text(done)


def test_memory_forget_with_expected_updated_at_keeps_an_entry_changed_since(mcp_live_url, dev, dev_token):
    import json

    entry = services.entry_create(
        agent=dev, category="lessons", content="Pin the SDK version", created_by="t"
    )
    other = services.entry_create(agent=dev, category="lessons", content="Cache the wheels", created_by="t")

    async def call(name, arguments):
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await session.call_tool(name, arguments)

    seen = json.loads(text(run(call, "memory_get", {"id": entry.pk})))["updated_at"]
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Pin the SDK to 2.x"), changed_by="b"
    )
    stale = run(call, "memory_forget", {"ids": [entry.pk], "expected_updated_at": seen})
    assert stale.is_error and f"Entry {entry.pk} has changed since it was read" in text(stale)
    two = run(call, "memory_forget", {"ids": [entry.pk, other.pk], "expected_updated_at": seen})
    assert two.is_error and "exactly one entry" in text(two)
    assert VaultEntry.objects.filter(pk=entry.pk).exists() and VaultEntry.objects.filter(pk=other.pk).exists()
    current = json.loads(text(run(call, "memory_get", {"id": entry.pk})))["updated_at"]
    done = run(call, "memory_forget", {"ids": [entry.pk], "expected_updated_at": current})
    assert not done.is_error and json.loads(text(done))["entries"] == 1
    assert not VaultEntry.objects.filter(pk=entry.pk).exists()
    assert VaultEntry.objects.filter(pk=other.pk).exists()


def test_concurrent_clients_share_a_bounded_set_of_database_connections(mcp_live_url, dev_token):
    """Every tool call ran on anyio's pool (up to 40 threads a process) in a fresh copy of the event
    loop's context, where Django kept the call's connection: a burst of concurrent clients left one open
    connection per concurrent call, and 60 clients used up PostgreSQL's max_connections (100), so the
    REST API, the job cluster and /mcp itself failed with "too many clients". The MCP server's work now
    runs on WEB_THREADS threads (4 by default), each keeping its connection, as Django's views do."""

    async def client():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            for _ in range(3):
                await scenarios.call(session, "memory_list", limit=1)

    async def body():
        async with anyio.create_task_group() as group:
            for _ in range(24):
                group.start_soon(client)

    def others() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return cursor.fetchone()[0]

    before = others()
    run(body)
    after = others()
    # A leak adds one connection per concurrent call (24 here). The server's pools are bounded: the
    # MCP threads (4), Django's thread for its sync views and, where pgvector is, the query-embedding
    # thread (search/semantic.py), each keeping one connection, whichever tests of this module ran first.
    assert after - before <= 4, f"the burst left {after - before} more connections open"
    assert after <= 4 + 2, f"{after} connections left open by the server"


def test_an_unreachable_database_is_a_503_with_retry_after_or_a_tool_error_saying_so(mcp_live_url, dev_token):
    """As the REST API: while the database cannot be reached the client is told to retry. The bearer
    check raised out of the ASGI app (a bare 500 "Internal Server Error" and a traceback in the log) and
    a tool answered "Internal server error; it has been logged"."""
    refused = OperationalError("connection failed: connection to server on socket failed: Connection refused")
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Authorization": f"Bearer {dev_token}", "Accept": "application/json, text/event-stream"}
    with mock.patch("memoryproject.mcp.http.token_authenticate", side_effect=refused):
        response = httpx2.post(f"{mcp_live_url}/mcp", json=initialize, headers=headers)
    assert response.status_code == 503
    assert int(response.headers["Retry-After"]) > 0
    assert "database is unavailable" in response.json()["detail"]

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            with mock.patch("vault.services.entry_create_for_principal", side_effect=refused):
                result = await session.call_tool(
                    "memory_save", {"category": "lessons", "content": "Retry me"}
                )
            assert (await session.call_tool("memory_list", {})).is_error is False  # the session goes on
            return result

    result = run(body)
    assert result.is_error and "The database is unavailable; retry in" in text(result)


def test_a_body_is_refused_past_the_rest_apis_limit_only_and_in_json(mcp_live_url, dev, dev_token, settings):
    """/mcp took the SDK's own limit, 4 MiB, where the REST API takes MEMORY_MAX_REQUEST_BYTES (10 MiB):
    a session_log of 5 MB the REST API stores was refused, and the refusal (as the SDK's other
    refusals: a wrong Content-Type, an unknown path) was plain text, not the JSON the REST API answers."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    headers = {
        "Authorization": f"Bearer {dev_token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    messages = [{"role": "assistant", "text": "y" * 500_000, "id": f"m{i}"} for i in range(10)]

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.call(session, "session_log", session="big", messages=messages)

    assert run(body)["stored"] == 10

    too_big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * limit + b'"}}'
    response = httpx2.post(f"{mcp_live_url}/mcp", content=too_big, headers=headers)
    assert response.status_code == 413
    assert response.json()["detail"] == (
        f"Request body too large: the limit is {limit} bytes (MEMORY_MAX_REQUEST_BYTES)."
    )
    # Without a Content-Length (chunked), the same.
    response = httpx2.post(
        f"{mcp_live_url}/mcp", content=iter([too_big[:limit], too_big[limit:]]), headers=headers
    )
    assert response.status_code == 413 and "MEMORY_MAX_REQUEST_BYTES" in response.json()["detail"]

    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    response = httpx2.post(
        f"{mcp_live_url}/mcp", json=ping, headers={**headers, "Content-Type": "text/plain"}
    )
    assert response.status_code == 400 and "Content-Type" in response.json()["detail"]
    response = httpx2.post(f"{mcp_live_url}/mcp/nowhere", json=ping, headers=headers)
    assert response.status_code == 404 and response.json()["detail"]


def test_invalid_arguments_are_refused_with_the_rest_apis_wording(mcp_live_url, dev_token):
    """Arguments the input schema refuses came back as pydantic's dump ("1 validation error for
    memory_saveArguments ... [type=literal_error, input_value=...] For further information visit
    https://errors.pydantic.dev/..."), and every refusal began "Error executing tool <name>: "; the text
    is now the REST API's `detail` for the same input."""
    rest = ApiClient(dev_token)
    rest_category = rest.post("/agents/dev/entries", {"category": "gossip", "content": "x"}).json()["detail"]
    rest_limit = rest.get("/agents/dev/entries?limit=0").json()["detail"]
    rest_empty = rest.post("/agents/dev/entries", {"category": "lessons", "content": " "}).json()["detail"]

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return (
                await scenarios.refused(session, "memory_save", category="gossip", content="x"),
                await scenarios.refused(session, "memory_list", limit=0),
                await scenarios.refused(session, "memory_save", category="lessons", content=" "),
                await scenarios.refused(session, "memory_get", id="seven"),
            )

    category, limit, empty, not_a_number = run(body)
    assert category == rest_category
    assert limit == rest_limit
    assert empty.startswith(rest_empty)  # and the field errors the REST API lists in `errors`
    # A number given as a string is refused whole, as the REST API refuses it (memoryproject/numbers.py).
    assert not_a_number == "Invalid input: id: Input should be a valid integer, not a string"


def test_a_client_that_leaves_while_sending_its_request_is_not_logged_as_a_server_error(
    mcp_live_url, dev_token, caplog
):
    """The SDK read the body of a client that had gone (a timeout, a closed laptop) and logged "Error
    handling POST request" at ERROR with ClientDisconnect's traceback, once for every such client."""
    host, port = mcp_live_url.removeprefix("http://").split(":")
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {dev_token}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        "Content-Length: 100000\r\n\r\n"
    )
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            with socket.create_connection((host, int(port))) as client:
                client.sendall(
                    head.encode() + b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
                )
                time.sleep(0.2)
        time.sleep(0.5)
        assert httpx2.get(f"{mcp_live_url}/healthz").status_code == 200
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_memory_forget_by_criteria_with_a_project_token_names_the_agent_or_says_every_agent(
    mcp_live_url, dev, ops, project_admin_token
):
    """Every other tool refuses a project-wide token that names no agent; memory_forget by criteria
    took it as "every agent of the project": a model forgetting "my tasks" deleted every agent's."""
    services.entry_create(agent=dev, category="tasks", content="Ship the release", created_by="t")
    services.entry_create(agent=ops, category="tasks", content="Rotate the keys", created_by="t")

    async def forget(arguments: dict):
        async with http_session(f"{mcp_live_url}/mcp", project_admin_token) as session:
            return await session.call_tool("memory_forget", arguments)

    refused = run(forget, {"category": "tasks"})
    assert refused.is_error and "Name the agent" in text(refused)
    assert VaultEntry.objects.filter(category="tasks").count() == 2
    assert not run(forget, {"category": "tasks", "agent": "dev"}).is_error
    assert list(VaultEntry.objects.filter(category="tasks").values_list("agent__slug", flat=True)) == ["ops"]
    assert not run(forget, {"category": "tasks", "all_agents": True}).is_error
    assert not VaultEntry.objects.filter(category="tasks").exists()


def test_a_nul_in_an_agent_a_path_or_a_search_tag_is_refused_as_the_rest_api_refuses_it(
    mcp_live_url, dev, project_admin_token
):
    """The REST API refuses a NUL in a path or query parameter naming it (422); the same values given
    to a tool reached PostgreSQL and came back as "A value was rejected by the database: PostgreSQL
    text fields cannot contain NUL (0x00) bytes"."""
    rest = ApiClient(project_admin_token)
    rest_agent = rest.get("/agents/d%00v/entries").json()["detail"]
    rest_tag = rest.get("/search?q=x&tag=a%00b").json()["detail"]
    rest_path = rest.get("/agents/dev/files/MEMORY%00.md").json()["detail"]

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", project_admin_token) as session:
            listed = await scenarios.refused(session, "memory_list", agent="d\x00v")
            searched = await scenarios.refused(
                session, "memory_search", query="x", agent="dev", tags=["a\x00b"]
            )
            read = await scenarios.refused(session, "workspace_read", path="MEMORY\x00.md", agent="dev")
        async with http_session(f"{mcp_live_url}/mcp?agent=d%00v", project_admin_token) as session:
            from_url = await scenarios.refused(session, "memory_list")
        return listed, searched, read, from_url

    listed, searched, read, from_url = run(body)
    assert (
        listed == from_url == rest_agent == "Invalid input: agent: must not contain NUL (\\u0000) characters"
    )
    assert searched == rest_tag.replace("tag:", "tags:")  # the tool's argument is `tags`
    assert read == rest_path


def test_get_is_405_as_the_stateless_server_never_streams_to_the_client(mcp_live_url, dev_token):
    """GET opened an event stream that never carried anything (a stateless server sends nothing
    unasked) and never ended: each one held a connection and a server task for as long as the client
    kept it. The transport's other answer the protocol allows is 405."""
    headers = {"Authorization": f"Bearer {dev_token}", "Accept": "text/event-stream"}
    response = httpx2.get(f"{mcp_live_url}/mcp", headers=headers, timeout=10)
    assert response.status_code == 405
    assert "POST" in response.headers["Allow"]
    assert "POST" in response.json()["detail"]


def test_text_with_a_lone_surrogate_is_a_tool_error_for_that_call(mcp_live_url, dev_token):
    """JSON may escape half of a surrogate pair ("\\ud83d", an emoji cut in two; JavaScript's
    JSON.stringify writes it so). The SDK's parser refused the whole message: HTTP 400, a JSON-RPC parse
    error with no id, "Parse error: unexpected end of hex escape". The call is now answered under its own
    id, as a tool error with the REST API's text, and nothing is stored."""
    headers = {
        "Authorization": f"Bearer {dev_token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    call = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "memory_save", '
        b'"arguments": {"category": "lessons", "content": "Deploys are fine \\ud83d"}}}'
    )
    response = httpx2.post(f"{mcp_live_url}/mcp", content=call, headers=headers)
    assert response.status_code == 200
    answer = response.json()
    assert answer["id"] == 7 and answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"] == (
        "Invalid input: content: contains invalid Unicode (lone surrogates)."
    )
    assert not VaultEntry.objects.exists()


def test_a_lone_surrogate_is_answered_naming_the_argument_that_holds_it(mcp_live_url, dev_token):
    """The REST API names the field holding a lone surrogate ("content contains invalid Unicode");
    the tool error said only "text contains invalid Unicode", whichever of a call's arguments (a
    message's text among fifty, a session key, a tag) held it."""
    headers = {
        "Authorization": f"Bearer {dev_token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }

    def answer(params: bytes, method: bytes = b"tools/call") -> dict:
        call = b'{"jsonrpc": "2.0", "id": 8, "method": "' + method + b'", "params": ' + params + b"}"
        return httpx2.post(f"{mcp_live_url}/mcp", content=call, headers=headers).json()

    logged = answer(
        b'{"name": "session_log", "arguments": {"session": "s", "messages": [{"role": "user", "text": '
        b'"fine"}, {"role": "assistant", "text": "cut \\ud83d here"}]}}'
    )
    assert logged["result"]["content"][0]["text"] == (
        "Invalid input: messages.1.text: contains invalid Unicode (lone surrogates)."
    )
    tagged = answer(b'{"name": "memory_search", "arguments": {"query": "x", "tags": ["ok", "\\udc00"]}}')
    assert tagged["result"]["content"][0]["text"].startswith("Invalid input: tags.1: ")
    read = answer(b'{"uri": "memory://files/\\ud800.md"}', b"resources/read")
    assert read["error"]["message"] == "Invalid input: uri: contains invalid Unicode (lone surrogates)."
    assert read["error"]["data"] == {"status": 422, "loc": ["uri"]}
    assert not Message.objects.exists()


def test_search_and_forget_tags_are_bounded_and_checked_as_the_rest_api_does(mcp_live_url, dev, dev_token):
    """memory_search took any number of tags of any length and searched for tags no entry can carry;
    memory_forget compared its tags as sent and took a blank one. Both refuse them now, in the REST
    API's words."""
    kept = services.entry_create(agent=dev, category="lessons", content="keep me #public", created_by="t")
    rest = ApiClient(dev_token)
    many = [f"t{i}" for i in range(65)]
    rest_many = rest.get("/search", q="x", tag=many).json()["detail"]
    rest_long = rest.get("/search", q="x", tag=["a" * 10_000]).json()["detail"]
    rest_bad = rest.get("/search", q="x", tag=["c++"]).json()["detail"]
    rest_blank = rest.post("/forget", {"tags": [" "]}).json()["detail"]

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return (
                await scenarios.refused(session, "memory_search", query="x", tags=many),
                await scenarios.refused(session, "memory_search", query="x", tags=["a" * 10_000]),
                await scenarios.refused(session, "memory_search", query="x", tags=["c++"]),
                await scenarios.refused(session, "memory_search", query="x", kinds=["entries"] * 4),
                await scenarios.refused(session, "memory_forget", tags=[" "]),
                await scenarios.refused(session, "memory_forget", tags=["a" * 10_000]),
                await session.call_tool("memory_search", {"query": "keep", "tags": [" #PUBLIC "]}),
            )

    many_, long_, bad, kinds, blank, forget_long, found = run(body)
    assert many_ == rest_many.replace("tag:", "tags:")
    assert long_.startswith(rest_long) and len(long_) < 400
    assert bad.startswith(rest_bad)
    assert kinds.startswith("Invalid input: kinds: List should have at most 3 items")
    assert blank.startswith(rest_blank)
    assert forget_long.startswith("Invalid tag 'aaaa") and len(forget_long) < 400
    assert [r["id"] for r in json.loads(text(found))["results"]] == [kept.pk]
    assert VaultEntry.objects.filter(pk=kept.pk).exists()


def test_a_boolean_is_no_id_count_or_importance_to_a_tool(mcp_live_url, dev, dev_token):
    """The tools validated in pydantic's lax mode, which reads true as 1 and false as 0:
    memory_save(supersedes=true) superseded entry 1, memory_forget(ids=[true]) forgot it."""
    first = services.entry_create(agent=dev, category="lessons", content="The first lesson", created_by="t")
    rest = ApiClient(dev_token)
    body = {"category": "lessons", "content": "The second lesson", "supersedes": True}
    rest_supersedes = rest.post("/agents/dev/entries", body).json()["detail"]

    async def body_():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            save = {"category": "lessons", "content": "The second lesson"}
            return [
                await scenarios.refused(session, "memory_save", **save, supersedes=True),
                await scenarios.refused(session, "memory_save", **save, importance=True),
                await scenarios.refused(session, "memory_update", id=first.pk, importance=False),
                await scenarios.refused(session, "memory_get", id=True),
                await scenarios.refused(session, "memory_list", limit=True),
                await scenarios.refused(session, "memory_forget", ids=[True]),
                await scenarios.refused(session, "memory_context", budget_tokens=True),
                await scenarios.refused(session, "memory_search", query="lesson", limit=True),
                await scenarios.refused(
                    session, "memory", command="view", path="/memories", view_range=[True, 2]
                ),
                await scenarios.refused(
                    session,
                    "memory",
                    command="insert",
                    path="/memories/a.md",
                    insert_line=True,
                    insert_text="x",
                ),
                await session.call_tool("memory_list", {"limit": 5.0}),
            ]

    *refused, listed = run(body_)
    assert (
        refused[0]
        == rest_supersedes
        == ("Invalid input: supersedes: Input should be a valid integer, not a boolean")
    )
    fields = ["supersedes", "importance", "importance", "id", "limit", "ids.0", "budget_tokens", "limit"]
    fields += ["view_range.0", "insert_line"]
    for field, text_ in zip(fields, refused, strict=True):
        assert text_.startswith(f"Invalid input: {field}: Input should be a valid "), text_
        assert text_.endswith(", not a boolean"), text_
    assert not listed.is_error and json.loads(text(listed))["limit"] == 5
    first.refresh_from_db()
    assert first.status == "active" and first.importance == 0.5
    assert list(VaultEntry.objects.values_list("pk", flat=True)) == [first.pk]


def test_nan_and_infinity_are_refused_as_not_finite_by_the_tools(mcp_live_url, dev, dev_token):
    """The SDK's parser reads NaN and Infinity as Python floats: memory_save(importance=NaN) was refused
    as "less than or equal to 1", and a NaN in a logged message's state reached PostgreSQL, which refused
    the batch as "A value was rejected by the database: invalid input syntax for type json"."""

    rest = ApiClient(dev_token)
    raw = '{"category": "lessons", "content": "x y", "importance": NaN}'
    rest_importance = rest.post("/agents/dev/entries", raw=raw).json()["detail"]
    headers = {
        "Authorization": f"Bearer {dev_token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }

    def call(name: str, arguments: str) -> str:
        params = '{"name": "' + name + '", "arguments": ' + arguments + "}"
        body = '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": ' + params + "}"
        answer = httpx2.post(f"{mcp_live_url}/mcp", content=body.encode(), headers=headers).json()
        assert answer["result"]["isError"] is True, answer
        return answer["result"]["content"][0]["text"]

    assert (
        call("memory_save", raw)
        == rest_importance
        == ("Invalid input: importance: Input should be a finite number")
    )
    first = services.entry_create(agent=dev, category="lessons", content="The first lesson", created_by="t")
    assert call("memory_update", f'{{"id": {first.pk}, "importance": -Infinity}}') == rest_importance
    logged = call(
        "session_log",
        '{"session": "s", "messages": [{"role": "user", "text": "hi", "state": {"score": Infinity}}]}',
    )
    assert logged.startswith(
        "messages[0]: every number in tool_calls and state must be a finite number (NaN and Infinity are not JSON)"
    )
    first.refresh_from_db()
    assert first.importance == 0.5 and VaultEntry.objects.count() == 1 and not Message.objects.exists()


def test_mcp_with_a_trailing_slash_is_served_as_mcp(mcp_live_url, dev, dev_token):
    """POST /mcp/ answered 307 to /mcp, which MCP clients do not follow on a POST: a URL configured with
    the slash failed to connect."""

    async def body():
        async with http_session(f"{mcp_live_url}/mcp/?agent=dev", dev_token) as session:
            return await session.call_tool(
                "memory_save", {"category": "lessons", "content": "Slashes are fine"}
            )

    saved = run(body)
    assert not saved.is_error, text(saved)
    assert VaultEntry.objects.get().content == "Slashes are fine"
    headers = {"Authorization": f"Bearer {dev_token}", "Accept": "application/json, text/event-stream"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    response = httpx2.post(f"{mcp_live_url}/mcp/", json=ping, headers=headers)
    assert response.status_code == 200 and response.json()["id"] == 1, response.text
    assert httpx2.get(f"{mcp_live_url}/mcp/", headers=headers).status_code == 405
    assert httpx2.post(f"{mcp_live_url}/mcp/", json=ping).status_code == 401
    assert httpx2.post(f"{mcp_live_url}/mcp/other", json=ping, headers=headers).status_code == 404


def test_memory_forget_refuses_an_id_no_entry_can_have(mcp_live_url, dev, dev_token):
    """memory_forget(ids=[2**63]) answered count 0 with the id among not_found, as if it might have been
    an entry's; no bigint holds it: refused naming the argument, and nothing is forgotten."""
    kept = services.entry_create(agent=dev, category="lessons", content="Keep this lesson", created_by="t")

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return [
                await scenarios.refused(session, "memory_forget", ids=[kept.pk, bad])
                for bad in (2**63, 2**70, 0)
            ]

    for refused in run(body):
        assert refused.startswith("Invalid input: ids.1: Input should be"), refused
    assert VaultEntry.objects.filter(pk=kept.pk).exists()
