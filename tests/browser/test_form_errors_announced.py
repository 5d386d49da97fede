"""A refused entry form says what is wrong where a keyboard and a screen reader are: the field in error
is marked invalid, described by its error (announced as an alert) and given the focus. Before, a
field's error was bare text below it: not announced, not tied to the field, which was not marked
invalid, and a refused new entry came back with the focus nowhere in its form."""

import re

import pytest
from playwright.sync_api import expect

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [360, 1280])
def test_a_refused_edit_puts_the_focus_on_the_field_and_announces_its_error(logged_in, agent_a, width):
    entry = services.entry_create(agent=agent_a, category="decisions", content="We deploy on Tuesdays")
    page = logged_in
    page.set_viewport_size({"width": width, "height": 700})
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{entry.pk}")
    card.get_by_role("link", name="Edit").focus()
    page.keyboard.press("Enter")
    expect(card.locator("textarea[name=content]")).to_be_focused()
    page.keyboard.press("Tab")  # tags
    page.keyboard.type("release bad!tag")
    page.keyboard.press("Enter")
    tags = card.get_by_role("textbox", name="Tags")
    expect(tags).to_be_focused()
    expect(tags).to_have_attribute("aria-invalid", "true")
    expect(tags).to_have_accessible_description(re.compile(r"^Separated by spaces.*Invalid tag 'bad!tag'"))
    expect(card.get_by_role("alert")).to_contain_text("Invalid tag 'bad!tag'")
    expect(tags).to_be_in_viewport()
    expect(card.get_by_role("textbox", name="Content (markdown)")).not_to_have_attribute(
        "aria-invalid", "true"
    )


def test_a_refused_new_entry_marks_its_field(logged_in, agent_a):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/")
    page.get_by_text("New entry").click()
    form = page.locator("details.create form")
    form.get_by_label("Content (markdown)").fill("We ship on Fridays")
    form.get_by_label("Tags").fill("bad!tag")
    form.get_by_role("button", name="Create entry").click()
    tags = page.locator("details.create form").get_by_label("Tags")
    expect(tags).to_have_attribute("aria-invalid", "true")
    expect(tags).to_be_focused()
