"""A curator locked out after too many wrong passwords gets a page that says so, for how long and
what to do, in the site's layout, on a phone too; not a bare line of text."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_page_layout import LAYOUT_PROBLEMS_JS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [390, 1280])
def test_a_locked_out_login_says_for_how_long_in_the_sites_layout(page, curator, settings, width):
    settings.AXES_FAILURE_LIMIT = 3
    page.set_viewport_size({"width": width, "height": 900})
    for _ in range(3):
        page.goto("/login/")
        page.get_by_label("Username").fill("cora")
        page.get_by_label("Password").fill("not-the-password")
        # Wait for the form's own navigation: a goto while it is in flight aborts one of them.
        with page.expect_navigation():
            page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Login locked")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("locked for 15 minutes")
    assert page.evaluate(LAYOUT_PROBLEMS_JS) == []
    page.get_by_role("link", name="Back to the login page").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
