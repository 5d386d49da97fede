"""Browser tests: Playwright driving Debian's Chromium against pytest-django's live_server.

One browser per test session (it is the slow part); a fresh context (cookies) per test.
"""

import os

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from memoryproject.browser import CHROMIUM, CHROMIUM_ARGS
from vault import services
from vault.models import ProjectMembership

# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run inside one
# unless told that this is intended (the test code itself stays synchronous).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(
            "Debian Chromium is not installed at /usr/bin/chromium (bin/test installs it with apt-get)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1200, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Logging in through the form hashes the password; the default hasher costs seconds here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def curator(project):
    user = User.objects.create_user("cora", password="cora-password-1")
    user.groups.add(Group.objects.get_or_create(name="curator")[0])
    ProjectMembership.objects.create(user=user, project=project)
    return user


@pytest.fixture
def logged_in(page, curator, live_server):
    """The curator's session, made as a login through the form makes it, given to the browser as its
    cookie; the page is left blank for the test to open what it tests. Filling the form, then loading
    the dashboard it leads to, cost 1-2 s of every browser test's set-up here; the form itself is
    tested by logged_in_by_form's users and tests/browser/test_login_lockout.py."""
    client = Client()
    client.force_login(curator, backend="django.contrib.auth.backends.ModelBackend")
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
                "httpOnly": True,
                "sameSite": "Lax",
            }
        ]
    )
    return page


@pytest.fixture
def logged_in_by_form(page, curator):
    """Logged in as a curator does, through the login form: the page is then on the dashboard."""
    page.goto("/login/")
    page.get_by_label("Username").fill("cora")
    page.get_by_label("Password").fill("cora-password-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    return page


@pytest.fixture
def task_entry(agent_a):
    return services.entry_create(
        agent=agent_a, category="tasks", content="Release checklist\n\n- [ ] write notes\n- [ ] tag build\n"
    )
