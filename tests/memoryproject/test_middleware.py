"""The pages' session, user and messages middlewares run for the pages and are skipped under /api/."""

from unittest import mock

import pytest
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware


@pytest.mark.django_db
@pytest.mark.parametrize("middleware", [SessionMiddleware, AuthenticationMiddleware, MessageMiddleware])
def test_it_runs_the_pages_middlewares_for_a_page_and_not_for_an_api_request(
    client, api, token_a, middleware
):
    original = middleware.process_request
    with mock.patch.object(middleware, "process_request", autospec=True, side_effect=original) as ran:
        assert api.get("/me", token=token_a).status_code == 200
        assert api.get("/nope", token=token_a).status_code == 404
        assert ran.call_count == 0
        assert client.get("/login/").status_code == 200
        assert ran.call_count == 1


@pytest.mark.django_db
def test_a_logged_in_curators_page_still_has_its_user(admin_client):
    # The session (the login) and the user still reach the pages.
    response = admin_client.get("/")
    assert response.status_code == 200
    assert response.wsgi_request.user.is_superuser
