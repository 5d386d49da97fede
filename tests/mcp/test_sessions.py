"""Session tools checked as the REST API's session endpoints are, through a real client session."""

from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run


def test_a_nul_in_the_session_of_session_checkpoint_is_refused_naming_it(mcp_live_url, dev, dev_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.refused(session, "session_checkpoint", session="chat\x00one")

    assert run(body).startswith("session must not contain NUL (\\u0000) characters")
