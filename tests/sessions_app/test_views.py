"""Session pages: working buffer and statistics on the session page, archive and restore
from the session page and the sessions list, project statistics on the dashboard."""

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app import recovery as session_recovery
from sessions_app import selectors as session_selectors
from sessions_app import services as session_services
from sessions_app.models import Message, Session, SessionArchive, SessionStatus

pytestmark = pytest.mark.django_db

FIELDS = ("id", "parent_id", "client_id", "role", "text", "internal", "tool_calls", "tool_call_id", "state")


def _messages(session) -> list[tuple]:
    return list(Message.objects.filter(session=session).order_by("id").values_list(*FIELDS, "created_at"))


@pytest.fixture
def session(agent_a):
    result = session_services.messages_append(
        agent=agent_a,
        session_key="chat-1",
        messages=[
            {"role": "user", "text": "Where do we deploy the payments worker?", "client_id": "u1"},
            {"role": "assistant", "text": "The payments worker deploys to Frankfurt.", "client_id": "a1"},
            {"role": "assistant", "text": "internal reasoning about kubernetes", "internal": True},
        ],
    )
    Session.objects.filter(pk=result.session.pk).update(status=SessionStatus.IDLE)
    return Session.objects.get(pk=result.session.pk)


@pytest.fixture
def archived(session):
    session_services.session_archive(session=session, reason="test")
    return Session.objects.get(pk=session.pk)


def _urls(session):
    args = [session.project.slug, session.agent.slug, session.pk]
    return reverse("session-archive", args=args), reverse("session-restore", args=args)


def test_it_sends_anonymous_users_to_login(session):
    client = Client()
    for url in _urls(session):
        response = client.post(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login") + "?next=")
    assert Session.objects.get(pk=session.pk).status == SessionStatus.IDLE
    assert not SessionArchive.objects.exists()


def test_it_refuses_non_curators(client_nc, session, archived):
    for url in _urls(archived):
        assert client_nc.post(url).status_code == 403
    assert Session.objects.get(pk=archived.pk).status == SessionStatus.ARCHIVED
    assert SessionArchive.objects.filter(session=archived).exists()


def test_it_hides_sessions_from_another_projects_curator(client_b, agent_a, session):
    before = _messages(session)
    archive_url, restore_url = _urls(session)
    assert client_b.post(archive_url).status_code == 404
    assert Session.objects.get(pk=session.pk).status == SessionStatus.IDLE
    assert _messages(session) == before
    session_services.session_archive(session=session, reason="test")
    assert client_b.post(restore_url).status_code == 404
    assert Session.objects.get(pk=session.pk).status == SessionStatus.ARCHIVED
    assert not Message.objects.filter(session=session).exists()
    # the same agent slug and session id through the other project's own URL: still 404
    other = reverse("session-restore", args=["globex", agent_a.slug, session.pk])
    assert client_b.post(other).status_code == 404
    assert Session.objects.get(pk=session.pk).status == SessionStatus.ARCHIVED


def test_it_only_accepts_post(client_a, session):
    for url in _urls(session):
        assert client_a.get(url).status_code == 405
    assert Session.objects.get(pk=session.pk).status == SessionStatus.IDLE


def test_archive_then_restore_through_the_ui_gives_identical_messages(client_a, session):
    before = _messages(session)
    assert len(before) == 3
    archive_url, restore_url = _urls(session)
    page = reverse("session-detail", args=["acme", "agent-a", session.pk])

    response = client_a.post(archive_url, follow=True)
    assert response.redirect_chain[-1][0] == page
    html = response.content.decode()
    assert "archived (3 messages compressed)" in html
    assert Session.objects.get(pk=session.pk).status == SessionStatus.ARCHIVED
    assert not Message.objects.filter(session=session).exists()
    # the archived page shows the conversation read-only from the archive, and a restore button
    assert "Archived conversation" in html
    assert "deploys to Frankfurt" in html
    assert restore_url in html and archive_url not in html

    response = client_a.post(restore_url, follow=True)
    html = response.content.decode()
    assert "restored: its messages are back" in html
    assert Session.objects.get(pk=session.pk).status == SessionStatus.IDLE
    assert _messages(session) == before
    assert "Archived conversation" not in html and "deploys to Frankfurt" in html
    assert archive_url in html


def test_restoring_a_session_that_is_not_archived_says_so(client_a, session):
    before = _messages(session)
    response = client_a.post(_urls(session)[1], follow=True)
    assert "The session is not archived." in response.content.decode()
    assert _messages(session) == before


def test_an_active_session_is_archived_from_its_page_as_through_the_api(client_a, session):
    """One rule, in session_archive: archiving is lossless and the next message restores the session,
    so an active session may be archived; the page offers it and does it, as the API does."""
    Session.objects.filter(pk=session.pk).update(status=SessionStatus.ACTIVE)
    page = reverse("session-detail", args=["acme", "agent-a", session.pk])
    archive_url = _urls(session)[0]
    assert archive_url in client_a.get(page).content.decode()
    response = client_a.post(archive_url, follow=True)
    assert "archived (3 messages compressed)" in response.content.decode()
    assert Session.objects.get(pk=session.pk).status == SessionStatus.ARCHIVED
    assert _messages(session) == []


def test_sessions_list_shows_archived_sessions_with_restore(client_a, archived):
    url = reverse("session-list", args=["acme", "agent-a"])
    html = client_a.get(url).content.decode()
    assert "Archived" in html
    assert '3 <span class="small muted">archived</span>' in html
    restore_url = _urls(archived)[1]
    assert restore_url in html
    response = client_a.post(restore_url, {"back": "list"})
    assert response.status_code == 302 and response["Location"] == url
    assert Message.objects.filter(session=archived).count() == 3


def test_session_page_shows_working_buffer_and_statistics(client_a, agent_a, session, settings):
    settings.MEMORY_WORKING_BUFFER_RATIO = 0.5
    Session.objects.filter(pk=session.pk).update(max_input_tokens=40)
    session_services.messages_append(
        agent=agent_a,
        session_key="chat-1",
        messages=[
            {"role": "user", "text": "Now move the reconciliation job to the night window please."},
            {"role": "assistant", "text": "Done: the reconciliation job runs at 02:00 from now on."},
        ],
    )
    session.refresh_from_db()
    entries = list(session_selectors.buffer_entries(session))
    assert session.buffer_started_at is not None and entries  # the window was crossed
    stats = session_selectors.session_stats(session)
    usage = session_recovery.buffer_usage(session)
    html = client_a.get(reverse("session-detail", args=["acme", "agent-a", session.pk])).content.decode()
    assert "Working buffer" in html and "ACTIVE" in html
    assert f"{usage['context_tokens']} of 40 tokens" in html and "threshold 20" in html
    for entry in entries:
        assert entry.text.split("\n")[0][:30] in html
    assert "working-buffer.md" in html and "Danger Zone Log" in html
    assert "<dt>Messages</dt><dd>5 " in html
    assert f"<dt>Tokens</dt><dd>{stats['tokens']} " in html
    assert "0 decisions, 0 lessons" in html


def test_session_page_without_buffer_says_inactive(client_a, session):
    html = client_a.get(reverse("session-detail", args=["acme", "agent-a", session.pk])).content.decode()
    assert "INACTIVE" in html and "No buffer entries." in html


def test_dashboard_shows_project_statistics(client_a, project, session, archived, agent_a):
    session_services.messages_append(
        agent=agent_a, session_key="chat-2", messages=[{"role": "user", "text": "A second session."}]
    )
    stats = session_selectors.project_stats(project.pk, days=14)
    html = client_a.get(reverse("dashboard")).content.decode()
    assert stats["sessions_by_status"] == {"active": 1, "archived": 1}
    assert '<span class="badge" data-state="active">active 1</span>' in html
    assert '<span class="badge" data-state="archived">archived 1</span>' in html
    assert "(+3 archived)" in html
    assert "Storage <strong>" in html
    today = stats["growth"][-1]
    assert today["messages"] == 1 and today["sessions"] == 2
    assert (
        f"Growth: {sum(d['entries'] + d['messages'] for d in stats['growth'])} entries and messages" in html
    )
    assert "Globex" not in html
