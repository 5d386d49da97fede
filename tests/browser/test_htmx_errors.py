"""When an htmx request fails (403, 404, 5xx, no network) the curator is told, and keeps what they typed."""

import pytest
from playwright.sync_api import expect

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

VIEWPORTS = {390: {"width": 390, "height": 844}, 1366: {"width": 1366, "height": 900}}


def log_in(page):
    page.goto("/login/")
    page.get_by_label("Username").fill("cora")
    page.get_by_label("Password").fill("cora-password-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")


@pytest.mark.parametrize("width", [390, 1366])
def test_a_save_after_the_session_changed_elsewhere_says_so_and_keeps_the_text(logged_in, entry_a, width):
    page = logged_in
    page.set_viewport_size(VIEWPORTS[width])
    page.goto("/projects/acme/agents/agent-a/")
    page.locator(f"#entry-{entry_a.pk}").get_by_role("link", name="Edit").click()
    content = page.locator(f"#entry-{entry_a.pk} textarea[name=content]")
    content.fill("Typed before the session changed")
    # Another tab logs out and in again: the CSRF token this page holds is no longer valid.
    other = page.context.new_page()
    other.goto("/")
    other.get_by_role("button", name="Log out").click()
    log_in(other)
    other.close()
    page.bring_to_front()
    with page.expect_response(lambda r: r.request.method == "POST") as response:
        page.locator(f"#entry-{entry_a.pk}").get_by_role("button", name="Save").click()
    assert response.value.status == 403
    alert = page.get_by_role("alert").filter(has_text="session changed")
    expect(alert).to_contain_text("reload the page")
    expect(alert).to_be_in_viewport()
    expect(content).to_have_value("Typed before the session changed")
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use PostgreSQL #database"


def test_editing_an_entry_deleted_elsewhere_says_it_no_longer_exists(logged_in, entry_a):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/")
    services.entry_delete(entry_id=entry_a.pk, deleted_by="someone else")
    edit = page.locator(f"#entry-{entry_a.pk}").get_by_role("link", name="Edit")
    edit.focus()
    page.keyboard.press("Enter")
    alert = page.get_by_role("alert").filter(has_text="no longer exists")
    expect(alert).to_be_in_viewport()
    alert.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_role("alert").filter(has_text="no longer exists")).to_have_count(0)


def test_a_server_error_or_a_lost_connection_is_reported(logged_in, task_entry):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/?category=tasks")
    card = page.locator(f"#entry-{task_entry.pk}")
    page.route("**/tasks/", lambda route: route.fulfill(status=500, body="boom"))
    card.get_by_role("checkbox").nth(0).click()
    expect(page.get_by_role("alert").filter(has_text="went wrong")).to_be_visible()
    page.unroute("**/tasks/")
    page.route("**/edit/", lambda route: route.abort("internetdisconnected"))
    card.get_by_role("link", name="Edit").click()
    expect(page.get_by_role("alert").filter(has_text="could not reach the server")).to_be_visible()
    task_entry.refresh_from_db()
    assert "- [ ] write notes" in task_entry.content


def server_down(route):
    route.abort("connectionrefused")


@pytest.mark.parametrize("width", [390, 1366])
def test_a_page_form_sent_while_the_server_is_down_says_so_and_keeps_the_text(logged_in, agent_a, width):
    """The file editor and the new-entry form post the whole page (no htmx): with the server down the
    browser left for its own error page and the text typed was gone (Back reloads the page, which
    no-store keeps out of the cache). Now the page says the server cannot be reached and stays, text
    and all; once the server is back the same button saves."""
    from vault.models import VaultEntry

    services.file_write(agent=agent_a, path="MEMORY.md", content="# Memory\n", changed_by="t")
    page = logged_in
    page.set_viewport_size(VIEWPORTS[width])
    page.goto("/projects/acme/agents/agent-a/files/?path=MEMORY.md")
    editor = page.get_by_label("Markdown")
    editor.fill("# Memory\n\nTyped while the server was down\n")
    page.route("**/*", server_down)
    page.get_by_role("button", name="Save file").click()
    alert = page.get_by_role("alert").filter(has_text="could not reach the server")
    expect(alert).to_be_in_viewport()
    expect(editor).to_have_value("# Memory\n\nTyped while the server was down\n")
    assert page.url.endswith("/files/?path=MEMORY.md")
    page.unroute("**/*", server_down)
    page.get_by_role("button", name="Save file").click()
    expect(page.locator(".messages")).to_contain_text("MEMORY.md saved")
    assert agent_a.files.get(path="MEMORY.md").content == "# Memory\n\nTyped while the server was down\n"

    page.goto("/projects/acme/agents/agent-a/")
    page.get_by_text("New entry").click()
    page.get_by_label("Content (markdown)").fill("A lesson typed while the server was down")
    page.route("**/*", server_down)
    page.get_by_role("button", name="Create entry").click()
    expect(page.get_by_role("alert").filter(has_text="could not reach the server")).to_be_visible()
    expect(page.get_by_label("Content (markdown)")).to_have_value("A lesson typed while the server was down")
    assert not VaultEntry.objects.filter(content="A lesson typed while the server was down").exists()
