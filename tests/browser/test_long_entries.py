"""A 60 KB entry among others: in the vault list and the review queue its text is shown in a box of its
own height that scrolls (by mouse, or by keyboard once it has the focus), so the buttons that act on it
and the entries after it stay within reach; its own page shows it whole."""

import pytest
from playwright.sync_api import expect

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

PARAGRAPH = "Paragraph of notes about the ledger and its replicas. " * 20
LONG = "\n\n".join([PARAGRAPH] * 56) + "\n\nThe last line of the long entry."


@pytest.mark.parametrize("width", [390, 1366])
def test_a_60_kb_entry_keeps_its_buttons_and_the_next_entry_within_reach(logged_in, project, agent_a, width):
    older = services.entry_create(agent=agent_a, category="lessons", content="A short lesson")
    long = services.entry_create(agent=agent_a, category="lessons", content=LONG)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=True)
    pending = services.entry_create(
        agent=agent_a, category="lessons", content=LONG.replace("ledger", "queue")
    )
    assert len(long.content) > 60_000
    page = logged_in
    height = 844 if width == 390 else 900
    page.set_viewport_size({"width": width, "height": height})

    page.goto("/projects/acme/review/")
    item = page.locator(f"#review-{pending.pk}")
    top = item.bounding_box()["y"]
    approve = item.get_by_role("button", name="Approve")
    assert approve.bounding_box()["y"] - top < 1.5 * height
    item.get_by_role("link", name=f"#{pending.pk}").focus()
    page.keyboard.press("Tab")  # the text's box
    text = item.locator(".markdown")
    expect(text).to_be_focused()
    page.keyboard.press("End")
    # In view through the box's own clipping too (Playwright asks an IntersectionObserver).
    expect(text.get_by_text("The last line of the long entry.")).to_be_in_viewport()
    approve.click()
    expect(item.get_by_role("status")).to_have_text(f"Entry #{pending.pk} approved.")

    page.goto("/projects/acme/agents/agent-a/?category=lessons")
    first = page.locator(f"#entry-{long.pk}").bounding_box()["y"]
    assert page.locator(f"#entry-{older.pk}").bounding_box()["y"] - first < 1.5 * height

    page.goto(f"/entries/{long.pk}/")
    whole = page.locator(f"#entry-{long.pk} .markdown")
    assert whole.evaluate("box => box.scrollHeight <= box.clientHeight")
    expect(whole).to_contain_text("The last line of the long entry.")


@pytest.mark.parametrize("width", [390, 1366])
def test_a_long_entrys_box_is_reached_by_tab_and_named_even_with_a_link_in_it(
    logged_in, project, agent_a, width
):
    # Chromium puts a box that scrolls in the Tab order by itself only while nothing in it takes the
    # focus: with a link at its top, Tab went into the link and End scrolled the page, not the box.
    text = "See [the runbook](https://example.com/runbook).\n\n" + LONG
    long = services.entry_create(agent=agent_a, category="lessons", content=text)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=True)
    pending = services.entry_create(
        agent=agent_a, category="lessons", content=text.replace("ledger", "queue")
    )
    page = logged_in
    page.set_viewport_size({"width": width, "height": 844 if width == 390 else 900})
    for url, entry, before in [
        ("/projects/acme/agents/agent-a/?category=lessons", long, "Delete"),
        ("/projects/acme/review/", pending, f"#{pending.pk}"),
    ]:
        page.goto(url)
        box = page.get_by_role("region", name=f"Text of entry #{entry.pk}")
        expect(box).to_contain_text("The last line of the long entry.")
        page.locator(f"[id$='-{entry.pk}']").get_by_role("link", name=before, exact=True).focus()
        page.keyboard.press("Tab")
        expect(box).to_be_focused()
        page.keyboard.press("End")
        expect(box.get_by_text("The last line of the long entry.")).to_be_in_viewport()
        page.keyboard.press("Tab")  # then into the text: its link
        expect(box.get_by_role("link", name="the runbook")).to_be_focused()
