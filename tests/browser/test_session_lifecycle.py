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
