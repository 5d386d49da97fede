"""The curator's project settings page shows the MCP URL and a ready configuration for a new token."""

import html
import json
import re

from django.urls import reverse

from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run


def test_a_new_token_comes_with_an_mcp_configuration_that_works(mcp_live_url, dev, curator):
    response = curator.post(
        reverse("vault-token-create", args=["acme"]), {"name": "claude", "agent": "dev", "scope": "write"}
    )
    assert response.status_code == 201
    page = response.content.decode()
    config = json.loads(
        html.unescape(re.search(r'<textarea id="mcp-config"[^>]*>(.*?)</textarea>', page, re.S)[1])
    )
    server = config["mcpServers"]["memory"]
    assert server["url"] == "http://testserver/mcp"
    assert "claude mcp add --transport http memory http://testserver/mcp" in html.unescape(page)

    # The snippet's header authenticates for real against the MCP endpoint.
    async def body():
        async with http_session(
            f"{mcp_live_url}/mcp", server["headers"]["Authorization"].removeprefix("Bearer ")
        ) as s:
            return await scenarios.call(
                s, "memory_save", category="lessons", content="Configured from the page."
            )

    assert run(body)["agent"] == "dev"


def test_a_project_wide_token_gets_the_agent_query_parameter(mcp_project, curator):
    response = curator.post(
        reverse("vault-token-create", args=["acme"]), {"name": "ci", "agent": "", "scope": "write"}
    )
    assert response.status_code == 201
    assert "http://testserver/mcp?agent=AGENT" in response.content.decode()
