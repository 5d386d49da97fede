"""After an htmx swap the keyboard focus lands where the curator is working, not on the page's body."""

import pytest
from playwright.sync_api import expect

from vault import services
from vault.models import VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)


def test_focus_follows_edit_save_cancel_and_delete_from_the_keyboard(logged_in, agent_a, entry_a):
    newer = services.entry_create(agent=agent_a, category="decisions", content="We deploy on Tuesdays")
    page = logged_in
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{newer.pk}")
    edit = card.get_by_role("link", name="Edit")

    card.get_by_role("link", name=f"#{newer.pk}").focus()
    page.keyboard.press("Tab")
    expect(edit).to_be_focused()
    page.keyboard.press("Enter")
    content = card.locator("textarea[name=content]")
    expect(content).to_be_focused()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("We deploy on Wednesdays")
    page.keyboard.press("Tab")  # tags
    page.keyboard.press("Tab")  # Save
    expect(card.get_by_role("button", name="Save")).to_be_focused()
    page.keyboard.press("Enter")
    expect(card.get_by_role("status")).to_contain_text("Saved")
    expect(edit).to_be_focused()

    page.keyboard.press("Enter")
    expect(content).to_be_focused()
    page.keyboard.press("Tab")  # tags
    page.keyboard.press("Tab")  # Save
    page.keyboard.press("Tab")  # Cancel
    expect(card.get_by_role("link", name="Cancel")).to_be_focused()
    page.keyboard.press("Enter")
    expect(card.locator("textarea")).to_have_count(0)
    expect(edit).to_be_focused()

    page.keyboard.press("Tab")  # Delete
    page.keyboard.press("Enter")
    expect(card.get_by_role("alertdialog")).to_be_visible()
    page.keyboard.press("Tab")  # into the confirmation: "Yes, delete"
    expect(card.get_by_role("button", name="Yes, delete")).to_be_focused()
    page.keyboard.press("Enter")
    expect(card).to_contain_text("deleted")
    # On to the next entry.
    expect(page.locator(f"#entry-{entry_a.pk}").get_by_role("link", name=f"#{entry_a.pk}")).to_be_focused()

    page.keyboard.press("Tab")  # its Edit
    page.keyboard.press("Tab")  # its Delete
    page.keyboard.press("Enter")
    expect(page.get_by_role("alertdialog")).to_be_visible()
    # As a person would, not faster: htmx has settled the confirmation before the key is pressed (an
    # Enter within the settle delay submitted the form without htmx, and the page went to the list).
    page.wait_for_function("!document.querySelector('.htmx-settling, .htmx-added')")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Yes, delete")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(f"#entry-{entry_a.pk}")).to_contain_text("deleted")
    # No entry left after it: the list's heading, its category tab.
    expect(page.get_by_role("navigation", name="Categories").locator("[aria-current=page]")).to_be_focused()
    assert VaultEntry.objects.filter(pk__in=[newer.pk, entry_a.pk]).count() == 0


def test_focus_stays_on_a_task_box_after_ticking_it(logged_in, task_entry):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/?category=tasks")
    card = page.locator(f"#entry-{task_entry.pk}")
    card.get_by_role("checkbox").nth(0).focus()
    page.keyboard.press("Tab")
    second = card.get_by_role("checkbox").nth(1)
    expect(second).to_be_focused()
    page.keyboard.press("Space")
    expect(second).to_have_attribute("aria-checked", "true")
    expect(second).to_be_focused()
    page.keyboard.press("Space")
    expect(second).to_have_attribute("aria-checked", "false")
    expect(second).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(card.get_by_role("checkbox").nth(0)).to_be_focused()
    task_entry.refresh_from_db()
    assert task_entry.content == "Release checklist\n\n- [ ] write notes\n- [ ] tag build\n"


@pytest.mark.parametrize("width", [390, 1366])
def test_focus_stays_where_the_curator_was_when_the_list_changes_tab_page_or_filter(
    logged_in, agent_a, settings, width
):
    """The category tabs, the pager and the filter form replace the whole list (htmx): the keyboard
    focus stays on the tab, the pager link or the Filter button pressed, not on the page's body (from
    where the next Tab starts again at the skip link)."""
    settings.MEMORY_UI_PAGE_SIZE = 2
    for n in range(3):
        services.entry_create(agent=agent_a, category="lessons", content=f"Lesson {n} #ops")
    services.entry_create(agent=agent_a, category="decisions", content="We deploy on Tuesdays")
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/projects/acme/agents/agent-a/?category=decisions")
    panel = page.locator("#vault-panel")
    tabs = page.get_by_role("navigation", name="Categories")

    tabs.get_by_role("link", name="Lessons").focus()
    page.keyboard.press("Enter")
    expect(tabs.locator("[aria-current=page]")).to_contain_text("Lessons")
    expect(tabs.get_by_role("link", name="Lessons")).to_be_focused()

    pager = page.get_by_role("navigation", name="Pages", exact=True)
    pager.get_by_role("link", name="Older").focus()
    page.keyboard.press("Enter")
    expect(pager).to_contain_text("Page 2 of 2")
    # The last page has no "Older" link: the focus goes to the one left, "Newer".
    expect(pager.get_by_role("link", name="Newer")).to_be_focused()
    page.keyboard.press("Enter")
    expect(pager).to_contain_text("Page 1 of 2")
    expect(pager.get_by_role("link", name="Older")).to_be_focused()

    panel.get_by_label("Tag", exact=True).fill("ops")
    panel.get_by_role("button", name="Filter").focus()
    page.keyboard.press("Enter")
    expect(panel.get_by_role("link", name="Clear filters")).to_be_visible()
    expect(panel.get_by_role("button", name="Filter")).to_be_focused()
    page.keyboard.press("Tab")
    expect(panel.get_by_role("link", name="Clear filters")).to_be_focused()
    page.keyboard.press("Enter")
    expect(panel.get_by_role("link", name="Clear filters")).to_have_count(0)
    # Its link is gone with the filters: the focus goes back to the button that filters.
    expect(panel.get_by_role("button", name="Filter")).to_be_focused()
