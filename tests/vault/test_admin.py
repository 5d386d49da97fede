import re

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth import get_user_model

from vault.models import EntryVersion, VaultEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator_client(client):
    user = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-for-tests-123")
    client.force_login(user)
    return client


def test_every_model_has_an_admin_page(curator_client):
    for name in ["project", "agent", "apitoken", "vaultentry", "entryversion", "projectcontextversion"]:
        assert curator_client.get(f"/admin/vault/{name}/").status_code == 200, name


def test_the_entry_list_filters_by_agent_category_status_and_source(curator_client, entry_a, entry_b):
    response = curator_client.get("/admin/vault/vaultentry/", {"category": "lessons"})
    assert response.status_code == 200
    assert b"Cache keys need a version" in response.content
    assert b"We decided to use PostgreSQL" not in response.content
    for facet in [b"By agent", b"By category", b"By status", b"By source"]:
        assert facet in response.content


def test_the_entry_list_shows_one_clipped_line_and_filters_by_importance_and_tags(
    curator_client, agent_a, entry_a
):
    from vault import services

    long = services.entry_create(
        agent=agent_a, category="lessons", content="First line\n\n" + "word " * 100, importance=0.9
    )
    html = curator_client.get("/admin/vault/vaultentry/").content.decode()
    assert '<span class="entry-preview" title="First line word word' in html
    assert "css/admin.css" in html
    high = curator_client.get("/admin/vault/vaultentry/", {"importance": "high"}).content.decode()
    assert f"/vaultentry/{long.pk}/change/" in high and f"/vaultentry/{entry_a.pk}/change/" not in high
    tagged = curator_client.get("/admin/vault/vaultentry/", {"tagged": "yes"}).content.decode()
    assert f"/vaultentry/{entry_a.pk}/change/" in tagged and f"/vaultentry/{long.pk}/change/" not in tagged


def test_the_entry_list_searches_by_agent_author_and_id(curator_client, entry_a, entry_b):
    by_agent = curator_client.get("/admin/vault/vaultentry/", {"q": "agent-b"}).content.decode()
    assert (
        f"/vaultentry/{entry_b.pk}/change/" in by_agent
        and f"/vaultentry/{entry_a.pk}/change/" not in by_agent
    )
    by_id = curator_client.get("/admin/vault/vaultentry/", {"q": str(entry_a.pk)}).content.decode()
    assert f"/vaultentry/{entry_a.pk}/change/" in by_id


def test_an_admin_edit_is_versioned_like_an_api_edit(curator_client, entry_a):
    response = curator_client.post(
        f"/admin/vault/vaultentry/{entry_a.pk}/change/",
        {
            "category": "decisions",
            "content": "We decided to use CockroachDB #database",
            "tags": "database",
            "status": "active",
            "importance": "0.7",
            "versions-TOTAL_FORMS": "0",
            "versions-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use CockroachDB #database"
    version = EntryVersion.objects.get(entry_id=entry_a.pk)
    assert version.content == "We decided to use PostgreSQL #database"
    assert version.changed_by == "user:curator"


def test_a_stale_admin_change_form_does_not_overwrite_a_newer_edit(curator_client, entry_a):
    """The admin's change form, opened before an agent's edit and saved after it, replaced the agent's
    text with the one it had shown; it is now a form error, and the agent's text stays."""
    from vault import services

    url = f"/admin/vault/vaultentry/{entry_a.pk}/change/"
    page = curator_client.get(url).content.decode()
    seen = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    seen.pop("csrfmiddlewaretoken", None)
    services.entry_update(
        entry_id=entry_a.pk,
        changes=services.EntryChanges(content="We moved to PostgreSQL 17"),
        changed_by="x",
    )
    data = {
        "category": "decisions",
        "content": "We decided to use CockroachDB",
        "tags": "",
        "status": "active",
        "importance": "0.5",
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
    }
    response = curator_client.post(url, {**seen, **data})
    assert response.status_code == 200
    page = response.content.decode()
    assert "changed since" in page and "We moved to PostgreSQL 17" in page
    entry_a.refresh_from_db()
    assert entry_a.content == "We moved to PostgreSQL 17"
    seen = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    assert curator_client.post(url, {**seen, **data}).status_code == 302  # saved again, knowingly
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use CockroachDB"


def test_a_stale_admin_project_form_does_not_put_back_an_older_context(curator_client, project):
    """The project's change form, opened before the orchestrator set the context and saved after it
    (to rename the project, say), put the context it had shown back, silently."""
    from vault import services

    url = f"/admin/vault/project/{project.pk}/change/"
    page = curator_client.get(url).content.decode()
    seen = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    services.project_context_set(project=project, content="# Acme\nPayments, now in EU", changed_by="x")
    data = {
        "slug": project.slug,
        "name": "Acme renamed",
        "context": project.context,
        "redaction_enabled": "on",
        "agents-TOTAL_FORMS": "0",
        "agents-INITIAL_FORMS": "0",
    }
    response = curator_client.post(url, {**seen, **data})
    assert response.status_code == 200
    assert "changed since" in response.content.decode()
    project.refresh_from_db()
    assert (project.name, project.context) == ("Acme", "# Acme\nPayments, now in EU")


def test_the_entry_page_shows_its_versions(curator_client, entry_a):
    from vault import services

    services.entry_update(
        entry_id=entry_a.pk, changes=services.EntryChanges(content="newer text"), changed_by="x"
    )
    response = curator_client.get(f"/admin/vault/vaultentry/{entry_a.pk}/change/")
    assert b"We decided to use PostgreSQL" in response.content  # the old version, in the inline


def test_an_admin_edit_with_a_nul_byte_is_a_form_error(curator_client, entry_a):
    response = curator_client.post(
        f"/admin/vault/vaultentry/{entry_a.pk}/change/",
        {
            "category": "decisions",
            "content": "bad\x00content",
            "tags": "",
            "status": "active",
            "importance": "0.5",
            "versions-TOTAL_FORMS": "0",
            "versions-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200
    assert b"Null characters are not allowed" in response.content
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use PostgreSQL #database"


def test_an_admin_delete_keeps_a_version(curator_client, entry_a):
    response = curator_client.post(f"/admin/vault/vaultentry/{entry_a.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not VaultEntry.objects.filter(pk=entry_a.pk).exists()
    assert EntryVersion.objects.get(entry_id=entry_a.pk).action == "delete"


def test_an_admin_created_entry_takes_hashtags(curator_client, agent_a):
    response = curator_client.post(
        "/admin/vault/vaultentry/add/",
        {
            "agent": agent_a.pk,
            "category": "lessons",
            "content": "Always pin versions #deps",
            "tags": "",
            "status": "active",
            "importance": "0.5",
            "versions-TOTAL_FORMS": "0",
            "versions-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    entry = VaultEntry.objects.get()
    assert entry.tags == ["deps"] and entry.source == "ui" and entry.project_id == agent_a.project_id


def test_adding_a_duplicate_entry_in_the_admin_says_so_and_claims_nothing_was_added(curator_client, entry_a):
    response = curator_client.post(
        "/admin/vault/vaultentry/add/",
        {
            "agent": entry_a.agent_id,
            "category": entry_a.category,
            "content": entry_a.content,
            "tags": "",
            "status": "active",
            "importance": "0.5",
            "versions-TOTAL_FORMS": "0",
            "versions-INITIAL_FORMS": "0",
        },
        follow=True,
    )
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/admin/vault/vaultentry/{entry_a.pk}/change/"
    assert f"Nothing was added: this text is already entry #{entry_a.pk}" in html
    assert "was added successfully" not in html
    assert VaultEntry.objects.count() == 1
    assert not LogEntry.objects.filter(action_flag=ADDITION).exists()


def _secret_in(html: str) -> str:
    return re.search(r"mem_[A-Za-z0-9_-]{20,}", html).group(0)


def test_creating_a_token_in_the_admin_shows_the_secret_on_the_response_only(
    curator_client, project, agent_a
):
    """The secret was shown with a message: Django's message storage kept it in a signed (not
    encrypted) cookie, so it sat in the browser's cookie jar and crossed proxies in the next request's
    Cookie header. It is shown on the response to the POST itself, never cached, never stored nor
    redirected with, with links on; the token works."""
    from tests.conftest import ApiClient
    from vault.authentication import token_authenticate
    from vault.models import ApiToken

    response = curator_client.post(
        "/admin/vault/apitoken/add/",
        {"project": project.pk, "agent": agent_a.pk, "scope": "write", "name": "ci"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    secret = _secret_in(html)
    token = ApiToken.objects.get(name="ci")
    assert secret.startswith(token.prefix) and "shown once" in html
    assert "no-store" in response["Cache-Control"]
    assert "messages" not in response.cookies
    assert not [name for name, morsel in response.cookies.items() if secret in morsel.value]
    assert f'href="/admin/vault/apitoken/{token.pk}/change/"' in html
    assert 'href="/admin/vault/apitoken/"' in html and 'href="/admin/vault/apitoken/add/"' in html
    after = curator_client.get(f"/admin/vault/apitoken/{token.pk}/change/")
    assert after.status_code == 200 and secret not in after.content.decode()
    assert not [name for name, morsel in curator_client.cookies.items() if secret in morsel.value]
    assert secret not in str(dict(curator_client.session.items()))
    assert token_authenticate(secret).agent_id == agent_a.pk
    assert ApiClient(secret).get("/agents").status_code == 200


def test_a_token_the_services_refuse_is_a_form_error_in_the_admin(curator_client, project, agent_a):
    """An agent-bound admin token is refused as the curator page and the command refuse it: the add
    form again with the reason, nothing created, nothing logged as added."""
    from django.contrib.admin.models import ADDITION, LogEntry

    from vault.models import ApiToken

    response = curator_client.post(
        "/admin/vault/apitoken/add/", {"project": project.pk, "agent": agent_a.pk, "scope": "admin"}
    )
    assert response.status_code == 200
    assert "Admin tokens are project-wide" in response.content.decode()
    assert not ApiToken.objects.exists()
    assert not LogEntry.objects.filter(action_flag=ADDITION).exists()


def test_a_token_renamed_in_the_admin_takes_no_control_characters(curator_client, project, agent_a):
    """A new token's name was checked for control characters, an edited one's was not: a newline or an
    escape went into the name shown wherever tokens are listed."""
    from vault.models import ApiToken
    from vault.services import token_create

    token, _ = token_create(project=project, agent=agent_a, scope="write", name="ci")
    form = curator_client.get(f"/admin/vault/apitoken/{token.pk}/change/")
    assert form.status_code == 200
    refused = curator_client.post(f"/admin/vault/apitoken/{token.pk}/change/", {"name": "ci\n\x1b[2Jowned"})
    assert refused.status_code == 200
    assert "must not contain control characters" in refused.content.decode()
    assert ApiToken.objects.get(pk=token.pk).name == "ci"
    renamed = curator_client.post(f"/admin/vault/apitoken/{token.pk}/change/", {"name": "ci runner"})
    assert renamed.status_code == 302, renamed.content.decode()[:2000]
    assert ApiToken.objects.get(pk=token.pk).name == "ci runner"
