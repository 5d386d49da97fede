"""/mcp counts against the REST API's per-token rate limit (MEMORY_API_RATE_LIMIT), on the same counters."""

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from memoryproject.mcp.protocol import RATE_LIMITED
from tests.conftest import ApiClient
from tests.mcp.conftest import http_session, run, stdio_session
from tests.mcp.scenarios import call

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _ping(url: str, token: str, request_id):
    message = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    return httpx2.post(f"{url}/mcp", json=message, headers={**HEADERS, "Authorization": f"Bearer {token}"})


@pytest.mark.usefixtures("one_rate_window")
def test_mcp_requests_count_against_the_tokens_rest_api_limit_and_are_answered_429(
    mcp_live_url, dev, dev_token, project_admin_token, settings
):
    """/mcp was not rate-limited at all: a token over MEMORY_API_RATE_LIMIT on the REST API went on
    calling tools over MCP without limit, and MCP calls did not count towards the REST API's limit."""
    settings.MEMORY_API_RATE_LIMIT = "4/m"
    rest = ApiClient(dev_token)
    assert rest.get("/me").status_code == 200
    assert rest.get("/me").status_code == 200
    assert _ping(mcp_live_url, dev_token, 1).status_code == 200
    assert _ping(mcp_live_url, dev_token, 2).status_code == 200  # the fourth request of the token

    response = _ping(mcp_live_url, dev_token, "over")
    assert response.status_code == 429
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    answer = response.json()
    assert answer["id"] == "over"  # under the request's id, as a client correlates it
    assert answer["error"]["code"] == RATE_LIMITED
    assert "MEMORY_API_RATE_LIMIT" in answer["error"]["message"] and "4/m" in answer["error"]["message"]
    assert answer["error"]["data"] == {"status": 429, "retry_after": int(response.headers["Retry-After"])}

    # The same counter: the REST API refuses this token now too, and another token is not affected.
    assert rest.get("/me").status_code == 429
    assert _ping(mcp_live_url, project_admin_token, 3).status_code == 200


@pytest.mark.usefixtures("one_rate_window")
def test_the_sdk_client_sees_the_limit_as_an_error_naming_it(mcp_live_url, dev, dev_token, settings):
    settings.MEMORY_API_RATE_LIMIT = "4/m"

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:  # initialize + initialized
            await call(session, "memory_list")  # tools/list (the client reads the schemas), tools/call
            with pytest.raises(MCPError) as refused:
                await session.call_tool("memory_list", {})
            return refused.value.error

    error = run(body)
    assert error.code == RATE_LIMITED
    assert error.message.startswith("Rate limit exceeded: this token may make 4/m requests")
    assert error.data["status"] == 429 and error.data["retry_after"] >= 1


def test_an_empty_limit_turns_it_off_for_mcp_too(mcp_live_url, dev, dev_token, settings):
    settings.MEMORY_API_RATE_LIMIT = ""
    assert all(_ping(mcp_live_url, dev_token, i).status_code == 200 for i in range(5))


def test_the_stdio_transport_is_not_rate_limited(dev, dev_token):
    """stdio is a local process holding the database's own credentials: a limit would protect nothing."""

    async def body():
        async with stdio_session("--token", dev_token, MEMORY_API_RATE_LIMIT="1/m") as session:
            for _ in range(3):
                await call(session, "memory_list")

    run(body)
