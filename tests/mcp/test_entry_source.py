"""Entries an agent writes over MCP say so (`source: "mcp"`), apart from the REST API's ("api"), for the
curators who filter by source; a review policy holds them as it holds any agent write."""

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.conftest import ApiClient
from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from vault import services
from vault.models import VaultEntry


def test_an_entry_saved_over_mcp_has_source_mcp_and_one_posted_over_rest_api(mcp_live_url, dev, dev_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            saved = await scenarios.call(session, "memory_save", category="decisions", content="MCP said SSE")
            updated = await scenarios.call(session, "memory_update", id=saved["id"], content="MCP said SSE!")
            return saved, updated

    saved, updated = run(body)
    assert (saved["source"], updated["source"]) == ("mcp", "mcp")
    assert VaultEntry.objects.get(pk=saved["id"]).source == "mcp"

    rest = ApiClient(dev_token)
    posted = rest.post("/agents/dev/entries", {"category": "decisions", "content": "REST said Kafka"})
    assert posted.status_code == 201 and posted.json()["source"] == "api"
    assert VaultEntry.objects.get(pk=posted.json()["id"]).source == "api"
    by_source = rest.get("/agents/dev/entries?source=mcp").json()
    assert [item["content"] for item in by_source["items"]] == ["MCP said SSE!"]

    curator = Client()
    curator.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = curator.get(reverse("vault-agent", args=["acme", "dev"]), {"source": "mcp"}).content.decode()
    assert '<option value="mcp" selected>MCP</option>' in page
    assert "MCP said SSE!" in page and "REST said Kafka" not in page
    admin = curator.get("/admin/vault/vaultentry/", {"source__exact": "mcp"}).content.decode()
    assert "MCP said SSE!" in admin and "REST said Kafka" not in admin and "?source__exact=mcp" in admin


def test_a_policy_holding_agent_writes_holds_an_entry_saved_over_mcp(mcp_live_url, dev, dev_token):
    services.review_policy_set(
        project=dev.project, category="decisions", hold_agent_writes=True, hold_extracted=False
    )

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.call(session, "memory_save", category="decisions", content="Hold me")

    saved = run(body)
    assert saved["outcome"].startswith("held for review") and saved["status"] == "pending"
    assert (
        VaultEntry.objects.get(pk=saved["id"])
        .review_items.get()
        .detail.endswith("holds mcp entries for review")
    )
