"""Curator pages in the browser: saving a workspace file, and the search page's links and boxes."""

import pytest
from playwright.sync_api import expect

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
