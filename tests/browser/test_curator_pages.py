import re

import pytest
from playwright.sync_api import expect

from vault.models import EntryVersion, VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_logs_in_and_shows_the_dashboard(entry_a, logged_in_by_form):
    page = logged_in_by_form
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page.get_by_role("link", name="agent-a", exact=True)).to_be_visible()
    expect(page.get_by_role("img", name="Entries created per day")).to_be_visible()
    expect(page.get_by_role("img", name="Acme: entries and messages created per day")).to_be_visible()


def test_it_redirects_to_login_and_back(page, curator, entry_a):
    page.goto(f"/entries/{entry_a.pk}/")
    expect(page).to_have_url(re.compile(r"/login/\?next="))
    page.get_by_label("Username").fill("cora")
    page.get_by_label("Password").fill("cora-password-1")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name=f"Entry #{entry_a.pk}")).to_be_visible()


def test_it_edits_an_entry_inline_and_shows_the_version(logged_in, entry_a):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{entry_a.pk}")
    card.get_by_role("link", name="Edit").click()
    content = page.locator(f"#entry-{entry_a.pk} textarea[name=content]")
    expect(content).to_be_visible()
    assert page.url.endswith("/projects/acme/agents/agent-a/")  # swapped in place, no navigation
    content.fill("We use **PostgreSQL 18** #database")
    page.locator(f"#entry-{entry_a.pk}").get_by_role("button", name="Save").click()
    expect(card.locator("strong")).to_have_text("PostgreSQL 18")
    expect(card.get_by_role("status")).to_contain_text("Saved")
    card.get_by_role("link", name=f"#{entry_a.pk}").click()
    history = page.locator("#history")
    expect(history).to_contain_text("version")
    expect(history).to_contain_text("by user:cora")
    expect(history.locator("table.diff")).to_contain_text("We decided to use PostgreSQL")
    assert EntryVersion.objects.get(entry_id=entry_a.pk).content == "We decided to use PostgreSQL #database"


def test_it_deletes_an_entry_after_confirmation(logged_in, entry_a):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{entry_a.pk}")
    card.get_by_role("link", name="Delete").click()
    confirm = card.get_by_role("alertdialog")
    expect(confirm).to_contain_text(f"Delete entry #{entry_a.pk}?")
    assert VaultEntry.objects.filter(pk=entry_a.pk).exists()  # asking deleted nothing
    confirm.get_by_role("link", name="Cancel").click()
    expect(card.get_by_role("alertdialog")).to_have_count(0)
    card.get_by_role("link", name="Delete").click()
    card.get_by_role("button", name="Yes, delete").click()
    expect(page.locator(f"#entry-{entry_a.pk}")).to_contain_text("deleted")
    assert not VaultEntry.objects.filter(pk=entry_a.pk).exists()
    assert EntryVersion.objects.get(entry_id=entry_a.pk).action == "delete"


def test_a_deleted_entrys_history_link_opens_its_history_and_restores_it(logged_in, entry_a):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{entry_a.pk}")
    card.get_by_role("link", name="Delete").click()
    card.get_by_role("button", name="Yes, delete").click()
    page.locator(f"#entry-{entry_a.pk}").get_by_role("link", name="Its history").click()
    expect(page.get_by_role("heading", name=f"Entry #{entry_a.pk} (deleted)")).to_be_visible()
    history = page.locator("#history")
    expect(history).to_contain_text("Deleted")
    expect(history).to_contain_text("by user:cora")
    history.get_by_role("button", name="Restore this version").click()
    expect(page.get_by_role("status")).to_contain_text(f"Entry #{entry_a.pk} restored")
    expect(page.get_by_role("heading", name=f"Entry #{entry_a.pk}", exact=True)).to_be_visible()
    restored = VaultEntry.objects.get(pk=entry_a.pk)
    assert restored.content == "We decided to use PostgreSQL #database"


def test_revoking_a_token_asks_first_and_works_from_the_keyboard(logged_in, project):
    from vault import services

    token = services.token_create(project=project, scope="read", name="ci")[0]
    page = logged_in
    page.goto("/projects/acme/settings/")
    revoke = page.get_by_role("link", name=f"Revoke token {token.prefix}")
    revoke.click()
    confirm = page.get_by_role("alertdialog")
    expect(confirm).to_contain_text(f"Revoke token {token.prefix}…?")
    token.refresh_from_db()
    assert token.revoked_at is None  # asking revoked nothing
    confirm.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    token.refresh_from_db()
    assert token.revoked_at is None
    revoke.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("alertdialog")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Yes, revoke")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text(f"Token {token.prefix}… revoked.")
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_it_ticks_a_task(logged_in, task_entry):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/?category=tasks")
    card = page.locator(f"#entry-{task_entry.pk}")
    boxes = card.get_by_role("checkbox")
    expect(boxes).to_have_count(2)
    boxes.nth(1).click()
    expect(card.get_by_role("checkbox").nth(1)).to_have_attribute("aria-checked", "true")
    expect(card.get_by_role("checkbox").nth(0)).to_have_attribute("aria-checked", "false")
    task_entry.refresh_from_db()
    assert task_entry.content == "Release checklist\n\n- [ ] write notes\n- [x] tag build\n"


def test_it_switches_tabs_and_searches(logged_in, entry_a, entry_b, agent_a):
    from vault import services

    services.entry_create(agent=agent_a, category="lessons", content="Retry with backoff")
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/")
    page.get_by_role("navigation", name="Categories").get_by_role("link", name=re.compile("Lessons")).click()
    expect(page.locator("#vault-panel")).to_contain_text("Retry with backoff")
    expect(page).to_have_url(re.compile(r"category=lessons"))
    page.get_by_role("search").first.get_by_label("Search memory").fill("postgresql")
    page.get_by_role("search").first.get_by_role("button", name="Search").click()
    expect(page.locator(".results mark").first).to_have_text("PostgreSQL")
    expect(page.locator(".results")).not_to_contain_text("Cache keys")  # agent B's lesson is not matched


@pytest.mark.parametrize("width", [390, 1280])
def test_a_stale_inline_edit_shows_the_agents_newer_text_and_saves_only_when_asked_again(
    logged_in, entry_a, width
):
    """The edit form opened, then the agent rewrote the entry: saving by keyboard brings the form back
    with a note and the agent's text instead of overwriting it, on a phone and a laptop; saving again
    replaces it knowingly."""
    from vault import services

    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{entry_a.pk}")
    card.get_by_role("link", name="Edit").click()
    content = card.locator("textarea[name=content]")
    expect(content).to_be_visible()
    services.entry_update(
        entry_id=entry_a.pk,
        changes=services.EntryChanges(content="We moved to PostgreSQL 18"),
        changed_by="agent",
    )
    content.fill("We decided to use PostgreSQL 16")
    card.get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    expect(card).to_contain_text("was changed since this form was opened")
    expect(card.locator("pre")).to_have_text("We moved to PostgreSQL 18")
    expect(card.locator("textarea[name=content]")).to_have_value("We decided to use PostgreSQL 16")
    assert VaultEntry.objects.get(pk=entry_a.pk).content == "We moved to PostgreSQL 18"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    card.get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    expect(card.get_by_role("status")).to_contain_text("Saved")
    assert VaultEntry.objects.get(pk=entry_a.pk).content == "We decided to use PostgreSQL 16"
