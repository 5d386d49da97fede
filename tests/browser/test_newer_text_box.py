"""When someone else saved a workspace file while a curator edited it, the page shows the file's current
text beside the form: a long file's text is a box of at most most of a screen that scrolls, reached by
Tab and named for a screen reader, as the preview is (the page was endless under it)."""

import pytest
from playwright.sync_api import expect

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

LONG_FILE = (
    "\n".join(f"- note {n} about the ledger and its replicas" for n in range(1000)) + "\nThe last line."
)


@pytest.mark.parametrize("width", [390, 1366])
def test_a_long_newer_text_scrolls_in_a_box_reached_by_keyboard(logged_in, agent_a, width):
    services.file_write(agent=agent_a, path="MEMORY.md", content="- the first text", changed_by="t")
    page = logged_in
    height = 844 if width == 390 else 900
    page.set_viewport_size({"width": width, "height": height})
    page.goto("/projects/acme/agents/agent-a/files/?path=MEMORY.md")
    services.file_write(agent=agent_a, path="MEMORY.md", content=LONG_FILE, changed_by="someone else")
    page.get_by_label("Markdown").fill("- my edit")
    page.get_by_role("button", name="Save file").click()
    newer = page.get_by_role("region", name="Its current text, changed since you opened this form")
    expect(newer).to_contain_text("The last line.")
    assert newer.bounding_box()["height"] <= 0.75 * height
    editor = page.get_by_label("Markdown")
    assert editor.bounding_box()["y"] - newer.bounding_box()["y"] < 1.5 * height
    page.get_by_text("Its current text, changed since you opened this form").focus()  # the summary
    page.keyboard.press("Tab")  # from the summary to the box
    expect(newer).to_be_focused()
    page.keyboard.press("End")
    page.wait_for_function(
        "() => { const b = document.getElementById('newer-content');"
        " return b.scrollTop > 0 && b.scrollTop + b.clientHeight >= b.scrollHeight - 2; }"
    )
    newer.evaluate("box => box.scrollIntoView({block: 'end'})")
    expect(newer.get_by_text("The last line.")).to_be_in_viewport()
    page.keyboard.press("Tab")  # on to the editor
    expect(editor).to_be_focused()
