import pytest
from playwright.sync_api import expect

from sessions_app import services as session_services
from sessions_app.models import Message, Session, SessionStatus

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_curator_restores_an_archived_session_from_its_page(logged_in, agent_a):
    session = session_services.messages_append(
        agent=agent_a,
        session_key="chat-old",
        messages=[
            {"role": "user", "text": "Which region hosts the ledger database?"},
            {"role": "assistant", "text": "The ledger database lives in Dublin."},
        ],
    ).session
    before = list(
        Message.objects.filter(session=session).order_by("id").values_list("id", "text", "parent_id")
    )
    session_services.session_archive(session=session, reason="month old")
    page = logged_in
    page.goto(f"/projects/acme/agents/agent-a/sessions/{session.pk}/")
    expect(page.get_by_role("heading", name="Archived session")).to_be_visible()
    expect(page.get_by_role("heading", name="Archived conversation")).to_be_visible()
    page.get_by_role("button", name="Restore").click()
    expect(page.locator(".messages")).to_contain_text("restored: its messages are back")
    expect(page.get_by_role("heading", name="Archived session")).to_have_count(0)
    expect(page.locator("#conv-title")).to_contain_text("Conversation")
    expect(page.locator(".conversation").first).to_contain_text("The ledger database lives in Dublin.")
    expect(page.get_by_role("button", name="Archive", exact=True)).to_be_visible()
    assert Session.objects.get(pk=session.pk).status != SessionStatus.ARCHIVED
    after = list(
        Message.objects.filter(session=session).order_by("id").values_list("id", "text", "parent_id")
    )
    assert after == before


def test_the_branch_list_lets_keyboard_users_choose_before_showing(logged_in, agent_a):
    session = session_services.messages_append(
        agent=agent_a,
        session_key="chat-branches",
        messages=[
            {"role": "user", "text": "Which region hosts the ledger database?"},
            {"role": "assistant", "text": "The ledger database lives in Dublin."},
        ],
    ).session
    first = Message.objects.filter(session=session).earliest("id")
    session_services.branch_create(session=session, name="alt", message=first)
    session_services.branch_create(session=session, name="zeta", message=first)
    page = logged_in
    url = f"/projects/acme/agents/agent-a/sessions/{session.pk}/"
    page.goto(url)
    branch = page.get_by_label("Branch")
    branch.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(300)
    assert page.url.endswith(url)  # moving through the list did not navigate
    chosen = branch.input_value()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Show")).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{url}?branch={chosen}")
    expect(page.get_by_label("Branch")).to_have_value(chosen)
