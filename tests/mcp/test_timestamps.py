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
            logged = await scenarios.call(session, "session_log", session="s", messages=[message])
            assert [w["loc"] for w in logged["warnings"]] == [["messages", 0, "timestamp"]], logged
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


def test_memory_update_and_forget_take_any_expected_updated_at(mcp_live_url, dev, dev_token):
    """An expected_updated_at whose UTC time is before year 1 was "Internal server error" (an
    OverflowError comparing it); it is a state the entry was never in, so the write is refused as
    changed since."""
    from vault import services
    from vault.models import VaultEntry

    entry = services.entry_create(agent=dev, category="lessons", content="Deploys wait for Monday")
    never = "0001-01-01T00:00:00+14:00"

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            refused = await scenarios.refused(
                session,
                "memory_update",
                id=entry.pk,
                content="Deploys wait for Tuesday",
                expected_updated_at=never,
            )
            assert "has changed since it was read" in refused, refused
            refused = await scenarios.refused(
                session, "memory_forget", ids=[entry.pk], expected_updated_at=never
            )
            assert "has changed since it was read" in refused, refused

    run(body)
    assert VaultEntry.objects.get(pk=entry.pk).content == "Deploys wait for Monday"


def test_an_expected_updated_at_without_an_offset_is_utc(mcp_live_url, dev, dev_token, settings):
    """A time without an offset is UTC everywhere else (the README's input rules: a message's timestamp,
    since/until); expected_updated_at alone refused it. The current `updated_at` written without its Z
    lets memory_update and memory_forget through, whatever TIME_ZONE is; a stale one is refused as
    changed since."""
    from vault import services
    from vault.models import VaultEntry

    settings.TIME_ZONE = "America/Sao_Paulo"
    entry = services.entry_create(agent=dev, category="lessons", content="Deploys wait for Monday")

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            seen = (await scenarios.call(session, "memory_get", id=entry.pk))["updated_at"]
            assert seen.endswith("Z"), seen
            updated = await scenarios.call(
                session, "memory_update", id=entry.pk, content="Deploys wait for Tuesday",
                expected_updated_at=seen[:-1],
            )  # fmt: skip
            stale = await scenarios.refused(
                session, "memory_forget", ids=[entry.pk], expected_updated_at=seen[:-1]
            )
            assert "has changed since it was read" in stale, stale
            forgotten = await scenarios.call(
                session, "memory_forget", ids=[entry.pk], expected_updated_at=updated["updated_at"][:-1]
            )
            assert forgotten["entries"] == 1, forgotten

    run(body)
    assert not VaultEntry.objects.filter(pk=entry.pk).exists()
