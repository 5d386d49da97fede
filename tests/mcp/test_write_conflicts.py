"""A tool call whose transaction loses a deadlock to a concurrent write is a tool error saying so (retry),
not that the database is unavailable; its retry stores everything once."""

from unittest import mock

import httpx2
import pytest

from sessions_app.models import Message
from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from tests.memoryproject.test_write_conflicts import FIRST, SECOND, deadlock_error, deadlocked

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_deadlocked_session_log_over_mcp_is_a_tool_error_saying_retry(mcp_live_url, dev, dev_token):
    async def log(messages):
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as client:
            return await client.call_tool("session_log", {"session": "s1", "messages": messages})

    assert not run(log, FIRST).is_error
    result = deadlocked("s1", lambda: run(log, SECOND))
    assert result.is_error
    said = scenarios.text(result)
    assert "concurrent write conflicted" in said and "Retry" in said and "unavailable" not in said
    assert not run(log, SECOND).is_error
    assert sorted(Message.objects.values_list("client_id", flat=True)) == ["c1", "c2"]


def test_a_bearer_check_that_loses_a_deadlock_is_a_409_saying_retry(mcp_live_url, dev_token):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Authorization": f"Bearer {dev_token}", "Accept": "application/json, text/event-stream"}
    with mock.patch("memoryproject.mcp.http.token_authenticate", side_effect=deadlock_error()):
        response = httpx2.post(f"{mcp_live_url}/mcp", json=initialize, headers=headers)
    assert response.status_code == 409 and response.headers["Retry-After"] == "1"
    assert "concurrent write conflicted" in response.json()["detail"]
