"""A curator whose login ended while a page was open presses one of its buttons (a plain form's POST):
the login page says why, and after logging in they are back on that page, not stranded on a blank
"HTTP ERROR 405" (the form's address, which takes no GET)."""

import pytest
from playwright.sync_api import expect

from vault.models import CompactionRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_button_pressed_after_the_login_ended_comes_back_to_its_page(logged_in, project, live_server):
    page = logged_in
    page.goto("/projects/acme/maintenance/")
    page.context.clear_cookies(name="sessionid")  # the login ended (expired, or logged out elsewhere)
    page.get_by_role("button", name="Run now").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Your login had ended")
    page.get_by_label("Username").fill("cora")
    page.get_by_label("Password").fill("cora-password-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/projects/acme/maintenance/")
    expect(page.get_by_role("button", name="Run now")).to_be_visible()
    assert not CompactionRun.objects.filter(project=project).exists()  # nothing ran unasked
