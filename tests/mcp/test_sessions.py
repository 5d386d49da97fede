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


def test_a_control_character_in_a_new_session_key_is_refused_naming_it_but_a_stored_one_still_works(
    mcp_live_url, dev, dev_token
):
    """session_log stored a session key holding a newline or an escape sequence, as the REST API did;
    both refuse a new one now, and a session stored with one before is still written to and closed."""
    from tests.sessions_app.test_session_keys import stored_with_key

    old = stored_with_key(dev, "legacy\x1b[0m")
    message = [{"role": "user", "text": "We ship on Friday"}]

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            refused = await scenarios.refused(session, "session_log", session="chat\none", messages=message)
            logged = await scenarios.call(session, "session_log", session="legacy\x1b[0m", messages=message)
            closed = await scenarios.call(session, "session_close", session="legacy\x1b[0m", summary="done")
            return refused, logged, closed

    refused, logged, closed = run(body)
    assert refused == (
        "Invalid input: session: no control characters (newline, tab, escape, bidirectional overrides)"
    )
    assert logged["session"]["id"] == closed["session"]["id"] == old.pk
    assert closed["session"]["status"] == "closed"
