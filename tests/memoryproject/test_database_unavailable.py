"""While the database cannot be reached, clients get 503 with Retry-After (retry later), never 500."""

from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.db import OperationalError

CONNECTION_REFUSED = OperationalError(
    "connection failed: connection to server on socket failed: Connection refused"
)


@pytest.mark.django_db
def test_the_api_answers_503_with_retry_after_when_the_database_is_unreachable(api, admin_token):
    with mock.patch("memoryproject.api.token_authenticate", side_effect=CONNECTION_REFUSED):
        response = api.get("/agents", token=admin_token)
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert "database is unavailable" in response.json()["detail"]


@pytest.mark.django_db
def test_an_api_write_that_loses_the_database_midway_gets_503(api, token_a):
    with mock.patch("vault.services.entry_create_for_principal", side_effect=CONNECTION_REFUSED):
        response = api.post(
            "/agents/agent-a/entries", {"category": "lessons", "content": "Retry me later"}, token=token_a
        )
    assert response.status_code == 503
    assert response["Retry-After"]


@pytest.mark.django_db
def test_curator_pages_answer_503_with_retry_after_when_the_database_is_unreachable(client):
    user = User.objects.create_superuser("root", password="pw-123456789")
    client.force_login(user)
    with mock.patch.object(SessionStore, "load", side_effect=CONNECTION_REFUSED):
        response = client.get("/")
    assert response.status_code == 503
    assert response["Retry-After"]
    assert b"memory database is unreachable" in response.content


def test_healthz_says_503_with_retry_after_when_the_database_is_unreachable(client):
    with mock.patch("memoryproject.api.connection.cursor", side_effect=CONNECTION_REFUSED):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response["Retry-After"]
    assert response.json()["database"] == "unavailable"


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/healthz", "/api/v1/healthz"])
def test_healthz_answers_head_as_get_without_a_body(client, url):
    """Load balancers probe with HEAD."""
    response = client.head(url)
    assert (response.status_code, response.content) == (200, b"")
    with mock.patch("memoryproject.api.connection.cursor", side_effect=CONNECTION_REFUSED):
        response = client.head(url)
    assert (response.status_code, response.content) == (503, b"")
    assert response["Retry-After"]


@pytest.mark.django_db
def test_a_created_entry_is_serialised_without_touching_the_database(agent_a, token_a):
    """The database dying after the commit gave a 500 while the response read the entry's review
    items; everything the response shows is now read before it is serialised."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from vault import services
    from vault.authentication import token_authenticate
    from vault.models import ApiToken
    from vault.schemas import EntryOut

    principal = token_authenticate(token_a)
    assert ApiToken.objects.exists() and principal is not None
    entry = services.entry_create_for_principal(
        principal, agent=agent_a, category="lessons", content="Retry me later"
    )
    with CaptureQueriesContext(connection) as queries:
        out = EntryOut.model_validate(entry).model_dump()
    assert out["review"] == [] and out["superseded_by"] is None
    assert len(queries) == 0, [q["sql"] for q in queries]


@pytest.mark.django_db
def test_a_curator_page_says_the_database_is_unreachable_in_the_sites_layout(client):
    """It was a plain-text line. The page is rendered without the database: every query fails here, as
    it would with the server down, and a page that asked for the session or the user would be a 500."""
    client.force_login(User.objects.create_superuser("root", password="pw-123456789"))
    with mock.patch(
        "django.db.backends.base.base.BaseDatabaseWrapper.cursor", side_effect=CONNECTION_REFUSED
    ):
        response = client.get("/search/?q=postgres")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert '<main id="main"' in html and 'href="/static/' in html  # the site's layout and its styles
    assert "memory database is unreachable" in html and "retry" in html.lower()
