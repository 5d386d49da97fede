"""The README's MCP client configurations for streamable HTTP work with the token its Quick start has
the newcomer make (`token_create --project default --scope admin`, project-wide): a URL without the
agent would refuse every agent tool with "Name the agent"."""

import json
import re
from urllib.parse import urlsplit

import pytest

from tests.mcp import scenarios
from tests.mcp.conftest import ROOT, http_session, run
from vault import services
from vault.models import TokenScope

README = (ROOT / "README.md").read_text()


def readme_http_urls() -> list[str]:
    """Every MCP URL a client is configured with in the README: the JSON `url`s and `claude mcp add`."""
    urls = []
    for block in re.findall(r"```json\n(.*?)```", README, re.S):
        for server in json.loads(block).get("mcpServers", {}).values():
            if "url" in server:
                urls.append(server["url"])
    urls += [url.strip("\"'") for url in re.findall(r"claude mcp add --transport http \S+ (\S+)", README)]
    return urls


def test_the_readme_shows_an_http_configuration():
    assert len(readme_http_urls()) >= 2


@pytest.mark.parametrize("url", readme_http_urls())
def test_the_readme_http_configuration_works_with_the_quick_start_token(mcp_live_url, transactional_db, url):
    assert "token_create --project default --scope admin" in README
    project = services.project_create(slug="default", name="default")
    _, secret = services.token_create(project=project, scope=TokenScope.ADMIN)
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc) == ("http", "127.0.0.1:8000")
    live = f"{mcp_live_url}{parts.path}" + (f"?{parts.query}" if parts.query else "")

    async def body():
        async with http_session(live, secret) as session:
            saved = await scenarios.call(
                session, "memory_save", category="lessons", content="Configured as the README says."
            )
            context = await scenarios.call(session, "memory_context", task="what did we learn?")
            return saved, context

    saved, context = run(body)
    assert saved["agent"] == "dev"
    assert "Configured as the README says." in json.dumps(context)
