"""The MCP tools take instants by the REST API's rules (memoryproject.timestamps)."""

from datetime import timedelta

from django.utils import timezone

from sessions_app.models import Message
from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run


def test_session_log_and_memory_search_take_instants_as_the_api_does(mcp_live_url, dev, dev_token):
    """A search bound of year 1 at +14:00 was a tool error from an OverflowError; a message dated 2100
    was stored so, the conversation's newest for 74 years; one of year 1 was stored as such."""

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            message = {"role": "user", "text": "the rollout checklist", "timestamp": "2100-01-01T00:00:00Z"}
            await scenarios.call(session, "session_log", session="s", messages=[message])
            early = {"role": "user", "text": "hello", "timestamp": "0001-01-01T00:00:00+14:00"}
            refused = await scenarios.refused(session, "session_log", session="s", messages=[early])
            assert "timestamp" in refused and "0001-01-02T00:00:00Z" in refused, refused
            found = await scenarios.call(
                session,
                "memory_search",
                query="rollout",
                since="0001-01-01T00:00:00+14:00",
                kinds=["messages"],
            )
            assert len(found["results"]) == 1, found
            found = await scenarios.call(
                session,
                "memory_search",
                query="rollout",
                until="9999-12-31T23:59:59-12:00",
                kinds=["messages"],
            )
            assert len(found["results"]) == 1, found

    run(body)
    assert Message.objects.get().created_at <= timezone.now() + timedelta(seconds=1)
