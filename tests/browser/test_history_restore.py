"""Back after htmx moved the vault page to another tab, when the browser's htmx history cache does not
hold the page (more than ten steps back, storage full or cleared): htmx asks the server for the page
(HX-Request with HX-History-Restore-Request) and puts the answer in place of the whole body. The server
answered with the tab's partial alone, so the page lost its header, navigation and forms."""

import re

import pytest
from playwright.sync_api import expect

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [360, 1280])
def test_back_to_a_tab_the_history_cache_lost_shows_the_whole_page(logged_in, agent_a, width):
    services.entry_create(agent=agent_a, category="decisions", content="We deploy on Tuesdays")
    services.entry_create(agent=agent_a, category="lessons", content="Backups need a restore drill")
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/projects/acme/agents/agent-a/?category=decisions")
    page.evaluate("htmx.config.historyCacheSize = 0")  # as when the storage is full: nothing kept
    page.get_by_role("link", name="Lessons").click()
    expect(page).to_have_url(re.compile(r"category=lessons$"))
    expect(page.get_by_text("Backups need a restore drill")).to_be_visible()
    page.get_by_role("link", name="Tasks").click()
    expect(page).to_have_url(re.compile(r"category=tasks$"))
    page.go_back()
    expect(page).to_have_url(re.compile(r"category=lessons$"))
    expect(page.get_by_text("Backups need a restore drill")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_contain_text("agent-a")
    expect(page.locator("footer.footer")).to_be_visible()
    expect(page.locator("header.topbar")).to_have_count(1)
