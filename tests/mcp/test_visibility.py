"""One memory behind every door: what MCP writes, REST and the curator pages show, and the other way round."""

from datetime import UTC, datetime

from tests.conftest import ApiClient
from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from vault.models import VaultEntry


def test_an_mcp_write_is_visible_through_rest_and_in_the_curator_ui(mcp_live_url, dev_token, curator):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            saved = await scenarios.call(
                session, "memory_save", category="lessons", content="Retry webhooks with exponential backoff."
            )
            await scenarios.call(
                session, "workspace_write", path="PROFILE.md", content="# Profile\nName: Dana\n"
            )
            return saved["id"]

    entry_id = run(body)
    api = ApiClient(dev_token)
    response = api.get(f"/entries/{entry_id}")
    assert response.status_code == 200
    assert response.json()["content"] == "Retry webhooks with exponential backoff."
    assert "Name: Dana" in api.get("/agents/dev/files/PROFILE.md").json()["content"]
    page = curator.get(f"/entries/{entry_id}/")
    assert page.status_code == 200
    assert "Retry webhooks with exponential backoff." in page.content.decode()


def test_rest_and_curator_writes_are_visible_through_mcp(mcp_live_url, dev_token, curator):
    api = ApiClient(dev_token)
    created = api.post(
        "/agents/dev/entries", {"category": "decisions", "content": "Invoices are stored for ten years."}
    )
    assert created.status_code == 201
    entry_id = created.json()["id"]
    edited = curator.post(
        f"/entries/{entry_id}/edit/",
        {
            "category": "decisions",
            "content": "Invoices are stored for ten years, then anonymised.",
            "tags": "",
            "importance": "0.5",
            "status": "active",
        },
    )
    assert edited.status_code in (200, 302)

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            got = await scenarios.call(session, "memory_get", id=entry_id)
            found = await scenarios.call(session, "memory_search", query="invoices anonymised")
            return got, found

    got, found = run(body)
    assert got["content"] == "Invoices are stored for ten years, then anonymised."
    assert entry_id in [r["id"] for r in found["results"]]


def test_mcp_and_rest_write_an_entrys_timestamps_alike(mcp_live_url, dev_token):
    api = ApiClient(dev_token)
    entry_id = api.post(
        "/agents/dev/entries", {"category": "lessons", "content": "Pin the base image."}
    ).json()["id"]
    instant = datetime(2026, 11, 26, 14, 49, 18, 731830, tzinfo=UTC)
    VaultEntry.objects.filter(pk=entry_id).update(created_at=instant, updated_at=instant)

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.call(session, "memory_get", id=entry_id)

    got = run(body)
    rest = api.get(f"/entries/{entry_id}").json()
    assert rest["created_at"] == "2026-11-26T14:49:18.731Z"
    assert (got["created_at"], got["updated_at"]) == (rest["created_at"], rest["updated_at"])
