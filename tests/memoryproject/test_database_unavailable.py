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
    with mock.patch("vault.services.entry_create", side_effect=CONNECTION_REFUSED):
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
    assert b"database is unavailable" in response.content


def test_healthz_says_503_with_retry_after_when_the_database_is_unreachable(client):
    with mock.patch("memoryproject.api.connection.cursor", side_effect=CONNECTION_REFUSED):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response["Retry-After"]
    assert response.json()["database"] == "unavailable"
