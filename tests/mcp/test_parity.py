"""The MCP tools refuse what the REST API refuses, with the same message."""

from django.test import Client

from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from vault.models import WorkspaceFile


def test_workspace_write_refuses_a_daily_note_named_by_no_date_as_the_rest_api_does(
    mcp_live_url, dev, dev_token
):
    """memory/2026-13-45.md was stored as an ordinary file, over MCP as over REST."""
    path = "memory/2026-13-45.md"

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.refused(session, "workspace_write", path=path, content="x")

    said = run(body)
    rest = Client().put(
        f"/api/v1/agents/dev/files/{path}",
        data={"content": "x"},
        content_type="application/json",
        headers={"authorization": f"Bearer {dev_token}"},
    )
    assert rest.status_code == 422, rest.content
    assert said.startswith(rest.json()["detail"]) and "names a day" in said
    assert not WorkspaceFile.objects.filter(path=path).exists()


def test_the_memory_tool_refuses_a_control_character_in_a_path_as_the_rest_api_does(
    mcp_live_url, dev, dev_token
):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return [
                await scenarios.refused(session, "workspace_write", path="a\n.md", content="x"),
                await scenarios.refused(
                    session, "memory", command="create", path="/memories/a\x1b.md", file_text="x"
                ),
            ]

    said = run(body)
    assert all("no control characters" in text for text in said), said
    assert not WorkspaceFile.objects.filter(path__in=["a\n.md", "memories/a\x1b.md"]).exists()


def test_memory_context_and_start_session_name_their_task_argument_when_they_refuse_it(
    mcp_live_url, dev, dev_token
):
    """A NUL or an over-long task was refused naming `command`, the REST API's field, which neither the
    tool nor the prompt takes."""

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            said = [
                await scenarios.refused(session, "memory_context", task="a\x00b"),
            ]
            for task in ("a\x00b", "x" * 10_001):
                try:
                    await session.get_prompt("start_session", {"task": task})
                except Exception as exc:  # noqa: BLE001 - the SDK raises the JSON-RPC error
                    said.append(str(exc))
            return said

    said = run(body)
    assert len(said) == 3, said
    assert all("task" in text and "command" not in text for text in said), said
