"""Resources refused as the prompt is: a JSON-RPC error with the REST API's detail and status, never an
internal error."""

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.mcp.conftest import http_session, run
from vault import services
from vault.models import TokenScope


def _read_refused(url: str, token: str, uri: str):
    async def body():
        async with http_session(url, token) as session:
            with pytest.raises(MCPError) as refused:
                await session.read_resource(uri)
            return refused.value.error

    return run(body)


def test_a_refused_resource_read_is_invalid_params_with_the_rest_apis_detail_and_status(
    mcp_live_url, dev, ops, dev_token, mcp_project
):
    """A workspace file that does not exist, an agent the token may not see or no agent named were
    answered -32603, an internal error, as if the server had failed: a client retries those or reports
    a server fault. The REST API answers 404 / 422 with the same detail."""
    error = _read_refused(f"{mcp_live_url}/mcp", dev_token, "memory://files/NOPE.md")
    assert (error.code, error.message, error.data["status"]) == (
        INVALID_PARAMS,
        "File 'NOPE.md' not found.",
        404,
    )

    error = _read_refused(f"{mcp_live_url}/mcp?agent=ops", dev_token, "memory://handoff/latest")
    assert (error.code, error.message, error.data["status"]) == (
        INVALID_PARAMS,
        "Agent 'ops' not found.",
        404,
    )

    project_reader = services.token_create(project=mcp_project, agent=None, scope=TokenScope.READ)[1]
    error = _read_refused(f"{mcp_live_url}/mcp", project_reader, "memory://handoff/latest")
    assert error.code == INVALID_PARAMS and error.data["status"] == 422
    assert error.message.startswith("Name the agent")


def test_a_workspace_file_path_over_255_characters_is_invalid_not_echoed_as_not_found(
    mcp_live_url, dev, dev_token
):
    """memory://files/{path} took a path of any length and answered "File '<the whole path>' not
    found."; no file has such a path: it is an invalid path (422), quoted in at most 80 characters."""
    error = _read_refused(f"{mcp_live_url}/mcp", dev_token, "memory://files/" + "x" * 5_000 + ".md")
    assert error.code == INVALID_PARAMS and error.data["status"] == 422
    assert error.message.startswith(f"Invalid path {'x' * 79 + '…'!r}: at most 255 characters.")
    assert len(error.message) < 200

    async def tool():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await session.call_tool("workspace_read", {"path": "x" * 5_000 + ".md"})

    result = run(tool)
    assert result.is_error and len(result.content[0].text) < 200
