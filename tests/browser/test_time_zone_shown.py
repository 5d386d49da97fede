"""Times on the curator pages and in the admin: shown in the server's TIME_ZONE, and saying so; a
session's messages read the same before and after it is archived."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from sessions_app import services as session_services
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

SENT = datetime(2026, 1, 5, 10, 0, 7, tzinfo=UTC)  # 19:00:07 in Tokyo


@pytest.mark.parametrize("width", [360, 1280])
def test_a_sessions_times_read_the_same_archived_and_say_their_zone(logged_in, agent_a, settings, width):
    settings.TIME_ZONE = "Asia/Tokyo"
    result = session_services.messages_append(
        agent=agent_a,
        session_key="tz",
        messages=[{"role": "user", "text": "deploy at seven", "created_at": SENT}],
    )
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    url = f"/projects/acme/agents/agent-a/sessions/{result.session.pk}/"
    page.goto(url)
    message = page.locator(".conversation .msg").first
    expect(message.locator("time")).to_have_text("2026-01-05 19:00:07")
    expect(page.locator("footer")).to_contain_text("Times in Asia/Tokyo")

    session_services.session_archive(session=result.session, reason="test")
    page.goto(url)
    message = page.locator(".conversation .msg").first
    expect(message).to_contain_text("deploy at seven")
    expect(message.locator("time")).to_have_text("2026-01-05 19:00:07")
    assert message.locator("time").get_attribute("datetime") == "2026-01-05T19:00:07+09:00"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_the_admin_says_which_zone_its_times_are_in(page, agent_a, settings):
    settings.TIME_ZONE = "America/Sao_Paulo"
    User.objects.create_superuser("root", password="root-password-1")
    entry = services.entry_create(agent=agent_a, category="decisions", content="zone shown")
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("root-password-1")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"/admin/vault/vaultentry/{entry.pk}/change/")
    expect(page.locator("#footer")).to_contain_text("Times in America/Sao_Paulo")
