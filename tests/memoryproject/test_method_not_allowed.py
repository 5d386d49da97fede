"""An address that performs an action (log out, restore a version, archive a session, run compaction)
takes POST only. Typed or followed with GET it answered 405 with an empty body: a blank page. It now
answers 405 (Allow kept) with a page in the site's layout saying what the address is and linking to
the page it belongs to; the API keeps its JSON 405."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from sessions_app import services as session_services
from vault import services

pytestmark = pytest.mark.django_db


def _page(response) -> str:
    assert response.status_code == 405
    assert response["Allow"].split(", ")[0] == "POST"  # the logout view adds OPTIONS
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert '<main id="main"' in html and "Agent memory" in html  # the site's layout
    assert "performs an action" in html
    return html


def test_a_get_on_a_versions_restore_says_so_and_links_to_the_entry(client_a, agent_a):
    entry = services.entry_create(agent=agent_a, category="lessons", content="first words")
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="second words"), changed_by="t"
    )
    version = entry.versions.first()
    html = _page(client_a.get(reverse("vault-entry-restore", args=[entry.pk, version.pk])))
    assert f'href="{reverse("vault-entry-detail", args=[entry.pk])}"' in html


def test_a_get_on_a_sessions_archive_links_to_the_session(client_a, agent_a):
    result = session_services.messages_append(
        agent=agent_a, session_key="chat-1", messages=[{"role": "user", "text": "hello"}]
    )
    session = result.session
    url = reverse("session-archive", args=["acme", agent_a.slug, session.pk])
    html = _page(client_a.get(url))
    assert f'href="{reverse("session-detail", args=["acme", agent_a.slug, session.pk])}"' in html


def test_a_get_on_compaction_start_links_to_the_maintenance_page(client_a, project):
    html = _page(client_a.get(reverse("maintenance-compaction-start", args=["acme"])))
    assert f'href="{reverse("maintenance", args=["acme"])}"' in html


def test_typing_logout_links_home(client_a):
    html = _page(client_a.get("/logout/"))
    assert 'href="/"' in html
    assert client_a.get("/").status_code == 200  # still logged in


def test_the_admins_logout_gets_the_same_page(client):
    client.force_login(User.objects.create_superuser("root", password="pw-123456789"))
    html = _page(client.get("/admin/logout/"))
    assert f'href="{reverse("admin:index")}"' in html


def test_the_api_keeps_its_json_405(api, token_a, agent_a):
    response = api.get("/agents/agent-a/sleep", token=token_a)  # an action: POST only
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response["Content-Type"].startswith("application/json")
    assert "not allowed" in response.json()["detail"]
