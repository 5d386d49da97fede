"""A long workspace file's preview is a box of at most most of a screen that scrolls, reached by Tab and
named for a screen reader (the page was endless under it); the vault pager's new page is announced after
its htmx swap (the panel is replaced whole, and nothing said which page it now showed)."""

import pytest
from playwright.sync_api import expect

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

LONG_FILE = (
    "\n\n".join(f"- note {n} about the ledger and its replicas" for n in range(1000)) + "\n\nThe last line."
)


@pytest.mark.parametrize("width", [390, 1366])
def test_a_long_files_preview_scrolls_in_a_box_reached_by_keyboard(logged_in, agent_a, width):
    services.file_write(agent=agent_a, path="MEMORY.md", content=LONG_FILE, changed_by="t")
    page = logged_in
    height = 844 if width == 390 else 900
    page.set_viewport_size({"width": width, "height": height})
    page.goto("/projects/acme/agents/agent-a/files/?path=MEMORY.md")
    preview = page.get_by_role("region", name="Preview")
    expect(preview).to_contain_text("The last line.")
    assert preview.bounding_box()["height"] <= 0.75 * height
    save = page.get_by_role("button", name="Save file")
    assert save.bounding_box()["y"] - preview.bounding_box()["y"] < 1.5 * height
    page.get_by_label("Markdown").focus()
    page.keyboard.press("Tab")  # from the editor to the preview's box
    expect(preview).to_be_focused()
    page.keyboard.press("End")  # scrolls the box to its end (on a phone the box may reach below the fold)
    page.wait_for_function(
        "() => { const b = document.getElementById('file-preview');"
        " return b.scrollTop > 0 && b.scrollTop + b.clientHeight >= b.scrollHeight - 2; }"
    )
    preview.evaluate("box => box.scrollIntoView({block: 'end'})")
    # In view through the box's own clipping too (Playwright asks an IntersectionObserver).
    expect(preview.get_by_text("The last line.")).to_be_in_viewport()


@pytest.mark.parametrize("width", [390, 1366])
def test_the_vault_pager_announces_the_page_it_swapped_in(logged_in, agent_a, settings, width):
    settings.MEMORY_UI_PAGE_SIZE = 2
    for n in range(5):
        services.entry_create(agent=agent_a, category="lessons", content=f"Lesson number {n} about deploys")
    page = logged_in
    page.set_viewport_size({"width": width, "height": 844 if width == 390 else 900})
    page.goto("/projects/acme/agents/agent-a/?category=lessons")
    status = page.locator("#vault-status")
    expect(status).to_have_attribute("aria-live", "polite")
    older = page.get_by_role("link", name="Older →")
    older.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".pager")).to_contain_text("Page 2 of 3")
    expect(status).to_have_text("5 entries, page 2 of 3.")
    assert status.evaluate("el => !el.closest('#vault-panel')")  # stays: a live region that was there
    expect(page.get_by_role("link", name="Older →")).to_be_focused()
    page.keyboard.press("Enter")
    expect(status).to_have_text("5 entries, page 3 of 3.")
