"""Session tools checked as the REST API's session endpoints are, through a real client session."""

from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run


def test_a_nul_in_the_session_of_session_checkpoint_is_refused_naming_it(mcp_live_url, dev, dev_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.refused(session, "session_checkpoint", session="chat\x00one")

    assert run(body).startswith("session must not contain NUL (\\u0000) characters")


def test_session_log_reports_the_model_and_its_window_as_the_rest_apis_append_does(
    mcp_live_url, dev, dev_token
):
    """POST /agents/{agent}/messages takes model_id and max_input_tokens (past half of that window the
    working buffer logs every exchange, README "Session continuity"); session_log refused both as
    unknown arguments, so an MCP agent could never turn the working buffer on."""
    message = {"role": "user", "text": "We migrate the ledger on Friday", "id": "m1"}

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.call(
                session,
                "session_log",
                session="chat-1",
                messages=[message],
                model_id="claude-sonnet",
                max_input_tokens=8000,
            )

    logged = run(body)
    assert logged["session"]["model_id"] == "claude-sonnet"
    assert logged["session"]["max_input_tokens"] == 8000
