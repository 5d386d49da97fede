"""A page that fails on the server shows the site's error page (what happened, a way back), not
Django's bare "Server Error (500)" heading."""

import pytest
from playwright.sync_api import expect

from memoryproject import views

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_server_error_on_a_page_says_so_with_a_way_back(logged_in, monkeypatch):
    page = logged_in

    def broken(user):
        raise RuntimeError("a bug")

    monkeypatch.setattr(views.stats, "dashboard_agents", broken)
    response = page.goto("/")
    assert response.status == 500
    expect(page.get_by_role("heading", name="Something went wrong")).to_be_visible()
    assert "a bug" not in page.content() and "Traceback" not in page.content()
    page.get_by_role("link", name="Search memory").click()
    expect(page.get_by_role("heading", name="Search")).to_be_visible()
