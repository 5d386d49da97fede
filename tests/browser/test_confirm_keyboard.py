"""The confirmations that ask before deleting an entry or revoking a token, worked by keyboard alone:
Escape answers no, Cancel gives the focus back to the button that asked, and a link drawn as a
button answers Space as well as Enter."""

import pytest
from playwright.sync_api import expect

from vault import services
from vault.models import ApiToken, VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)


def settled(page):
    # As a person would, not faster: a key pressed within htmx's settle delay is not what is tested.
    expect(page.locator(".htmx-request, .htmx-settling, .htmx-added")).to_have_count(0)


@pytest.mark.parametrize("width", [390, 1280])
def test_escape_closes_the_delete_confirmation_and_keeps_the_entry(logged_in, entry_a, width):
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{entry_a.pk}")
    delete = card.get_by_role("link", name="Delete", exact=True)
    delete.focus()
    page.keyboard.press("Enter")
    expect(card.get_by_role("alertdialog")).to_be_visible()
    settled(page)
    page.keyboard.press("Escape")  # from the Delete button that opened it
    expect(card.get_by_role("alertdialog")).to_have_count(0)
    expect(card.get_by_role("link", name="Edit", exact=True)).to_be_focused()

    card.get_by_role("link", name="Delete", exact=True).focus()
    page.keyboard.press("Enter")
    settled(page)
    page.keyboard.press("Tab")
    expect(card.get_by_role("button", name="Yes, delete")).to_be_focused()
    page.keyboard.press("Escape")  # from inside it
    expect(card.get_by_role("alertdialog")).to_have_count(0)
    expect(card.get_by_role("link", name="Edit", exact=True)).to_be_focused()
    assert VaultEntry.objects.filter(pk=entry_a.pk).exists()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_token_revoke_confirmation_closes_by_escape_or_cancel_back_to_its_button(logged_in, project, width):
    token, _ = services.token_create(project=project, name="ci")
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/projects/acme/settings/")
    revoke = page.get_by_role("link", name=f"Revoke token {token.prefix}")
    dialog = page.get_by_role("alertdialog")

    revoke.focus()
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    settled(page)
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Yes, revoke")).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(revoke).to_be_focused()

    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    settled(page)
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(dialog.get_by_role("link", name="Cancel")).to_be_focused()
    page.keyboard.press("Enter")
    expect(dialog).to_have_count(0)
    # Not the page's body: the next Tab goes on from where the curator was.
    expect(revoke).to_be_focused()
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None


def test_space_on_a_link_drawn_as_a_button_does_what_enter_does(logged_in, entry_a):
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/")
    card = page.locator(f"#entry-{entry_a.pk}")
    card.get_by_role("link", name="Edit", exact=True).focus()
    page.keyboard.press("Space")
    expect(card.locator("textarea[name=content]")).to_be_focused()
    page.keyboard.press("Tab")  # tags
    page.keyboard.press("Tab")  # Save
    page.keyboard.press("Tab")  # Cancel
    page.keyboard.press("Space")
    expect(card.locator("textarea")).to_have_count(0)
    card.get_by_role("link", name="Delete", exact=True).focus()
    page.keyboard.press("Space")
    expect(card.get_by_role("alertdialog")).to_be_visible()
