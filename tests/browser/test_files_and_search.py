"""Curator pages in the browser: saving a workspace file, and the search page's links and boxes."""

import pytest
from playwright.sync_api import expect

from sessions_app import services as session_services
from tests.conftest import ApiClient, _token
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)


def test_saving_a_file_unchanged_keeps_its_newlines_and_writes_no_version(logged_in, agent_a):
    text = "# Profile\n\n- prefers short answers\n- works in UTC\n"
    file, _ = services.file_write(agent=agent_a, path="PROFILE.md", content=text, changed_by="t")
    versions = file.versions.count()
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/files/?path=PROFILE.md")
    page.get_by_role("button", name="Save file").click()
    expect(page.locator(".messages")).to_contain_text("PROFILE.md saved")
    file.refresh_from_db()
    assert file.content == text and file.versions.count() == versions
    api = ApiClient(_token(agent_a.project, agent_a))
    assert api.get("/agents/agent-a/files/PROFILE.md").json()["content"] == text
    edit = api.post(
        "/agents/agent-a/files/PROFILE.md/edit",
        {"old_text": "short answers\n- works", "new_text": "short answers\n- lives"},
    )
    assert edit.status_code == 200, edit.content


@pytest.mark.parametrize("width", [390, 1280])
def test_a_stale_settings_form_keeps_the_agents_change_and_saves_only_when_asked_again(
    logged_in, agent_a, width
):
    """The files page opened, then the agent takes MEMORY.md out of the prompt and moves it: the
    curator's order, saved by keyboard from the row as it was, is refused with a note and the current
    settings (out of the prompt) around the curator's order, on a phone and a laptop; saving again
    applies the order and leaves the file out of the prompt."""
    file, _ = services.file_write(
        agent=agent_a, path="MEMORY.md", content="# Memory", changed_by="t", enabled=True
    )
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/projects/acme/agents/agent-a/files/")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name="MEMORY.md", exact=True))
    order = row.get_by_label("Sort order of MEMORY.md")
    expect(row.get_by_label("enabled")).to_be_checked()
    services.file_settings_set(agent=agent_a, path="MEMORY.md", enabled=False, sort_order=9)
    order.fill("5")
    order.press("Enter")
    expect(row.get_by_role("alert")).to_contain_text("changed since this page was opened")
    expect(row.get_by_role("alert")).to_contain_text("not in the prompt, order 9")
    expect(order).to_have_value("5")
    expect(row.get_by_label("enabled")).not_to_be_checked()
    file.refresh_from_db()
    assert (file.enabled, file.sort_order) == (False, 9)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    row.get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".messages")).to_contain_text("MEMORY.md: settings saved")
    file.refresh_from_db()
    assert (file.enabled, file.sort_order) == (False, 5)


def test_a_message_found_on_another_branch_opens_on_that_branch(logged_in, agent_a):
    session = session_services.messages_append(
        agent=agent_a,
        session_key="chat-branches",
        messages=[
            {"role": "user", "text": "Which cron runs the reports?"},
            {"role": "assistant", "text": "The nightly cron at 02:00."},
        ],
    ).session
    first = session.messages.order_by("id").first()
    session_services.branch_create(session=session, name="alt", message=first)
    session_services.branch_checkout(session=session, name="alt")
    session_services.messages_append(
        agent=agent_a, session=session, messages=[{"role": "user", "text": "quokka scheduler instead?"}]
    )
    session_services.branch_checkout(session=session, name="main")
    message = session.messages.get(text__startswith="quokka")
    page = logged_in
    page.goto("/search/?q=quokka&kind=messages")
    page.locator("#search-results").get_by_role("link", name="user message in session").click()
    expect(page.locator(f"#message-{message.pk}")).to_contain_text("quokka scheduler instead?")
    expect(page.get_by_label("Branch")).to_have_value("alt")


def test_the_header_box_on_the_search_page_searches_with_the_pages_filters(logged_in, agent_a):
    services.entry_create(agent=agent_a, category="lessons", content="Staging deploys need an approval")
    session_services.messages_append(
        agent=agent_a,
        session_key="chat-staging",
        messages=[{"role": "user", "text": "Staging deploys run at noon"}],
    )
    page = logged_in
    page.goto("/search/?q=staging&kind=messages")
    results = page.locator("#search-results")
    expect(results).to_contain_text("1 result for “staging”")
    header = page.get_by_role("search").first.get_by_label("Search memory")
    header.fill("staging deploys")
    expect(results).to_contain_text("1 result for “staging deploys”")
    expect(results).to_contain_text("run at noon")
    expect(results).not_to_contain_text("approval")  # still messages only
    expect(page.locator("#search-q")).to_have_value("staging deploys")
    expect(page.get_by_label("Kind")).to_have_value("messages")
    header.fill("staging noon")
    header.press("Enter")  # a full search page, with the filters
    page.wait_for_url("**/search/?*q=staging+noon*")
    assert "kind=messages" in page.url
    expect(page.locator("#search-q")).to_have_value("staging noon")
    expect(page.get_by_label("Kind")).to_have_value("messages")


def test_the_search_pages_status_filter_is_named_by_its_label(logged_in, agent_a):
    """The status filter's id was the search count's live region's (base.html's #search-status), which
    comes first: its label named the live region, and the select had no name for a screen reader."""
    page = logged_in
    page.goto("/search/?q=ledger")
    expect(page.locator("[id=search-status]")).to_have_count(1)
    expect(page.get_by_role("combobox", name="Status (entries)")).to_have_count(1)
    page.get_by_label("Status (entries)").select_option("all")
    expect(page.locator("#search-status")).to_have_attribute("aria-live", "polite")
