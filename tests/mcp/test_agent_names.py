"""An agent named to an MCP tool obeys the REST API's rule for agent names (vault's slug_check), with
the API's error naming the argument: a reading tool answered "Agent not found", and memory_search took
any text as its agent filter."""

from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from vault.models import Agent

INVALID = (
    "is not valid: use 1-64 characters of a-z, 0-9, '.', '_' or '-', not only dots. (agent: invalid slug)"
)


def test_every_tool_refuses_an_agent_name_the_api_refuses(mcp_live_url, project_admin_token, dev):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", project_admin_token) as session:
            listed = await session.list_tools()
            return listed, [
                await scenarios.refused(session, "memory_list", agent=".."),
                await scenarios.refused(
                    session, "memory_save", agent="Dev", category="lessons", content="a b c"
                ),
                await scenarios.refused(session, "memory_search", query="deploy", agent="../dev"),
                await scenarios.refused(session, "memory_forget", agent=".", category="lessons"),
                await scenarios.refused(session, "workspace_read", path="MEMORY.md", agent="dev/x"),
                await scenarios.refused(session, "session_recover", agent="dev x"),
            ]

    listed, refused = run(body)
    names = ["'..'", "'Dev'", "'../dev'", "'.'", "'dev/x'", "'dev x'"]
    assert refused == [f"agent {name} {INVALID}" for name in names]
    save = next(tool for tool in listed.tools if tool.name == "memory_save")
    assert save.input_schema["properties"]["agent"]["pattern"] == "^[a-z0-9._-]*[a-z0-9_-][a-z0-9._-]*$"
    assert list(Agent.objects.values_list("slug", flat=True)) == ["dev"]


def test_it_refuses_an_invalid_agent_in_the_url(mcp_live_url, project_admin_token, dev):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp?agent=..", project_admin_token) as session:
            return await scenarios.refused(session, "memory_search", query="deploy")

    assert run(body) == f"agent '..' {INVALID}"
