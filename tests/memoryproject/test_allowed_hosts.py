"""A server bound beyond this machine answers only the names in ALLOWED_HOSTS: said at start, and in JSON
under /api/."""

import pytest
from django.test import Client

from memoryproject.serve_state import allowed_hosts_warning

DEFAULTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]


@pytest.mark.parametrize(
    ("host", "allowed", "warned"),
    [
        ("127.0.0.1", DEFAULTS, False),
        ("localhost", DEFAULTS, False),
        ("0.0.0.0", DEFAULTS, True),
        ("::", DEFAULTS, True),
        ("10.0.0.5", DEFAULTS, True),
        ("10.0.0.5", [*DEFAULTS, "10.0.0.5"], False),
        ("0.0.0.0", [*DEFAULTS, "memory.example.com"], False),
        ("0.0.0.0", ["*"], False),
    ],
)
def test_serve_warns_when_it_listens_beyond_this_machine_for_names_it_refuses(host, allowed, warned):
    message = allowed_hosts_warning(host, allowed)
    assert (message is not None) == warned
    if warned:
        assert "ALLOWED_HOSTS" in message and host in message


@pytest.mark.django_db
def test_a_host_not_allowed_gets_a_json_400_naming_it_under_the_api():
    """It was Django's HTML 400 page, for /api/v1/healthz and every other API path."""
    response = Client(HTTP_HOST="10.0.0.5:9000").get("/api/v1/healthz")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert "10.0.0.5" in response.json()["detail"] and "ALLOWED_HOSTS" in response.json()["detail"]
