"""Curators' passwords are stored with the project's own hashers, not the fast one the tests use
(tests/conftest.py's `passwords_hashed_fast`): the override must not reach production settings."""

import importlib

from django.conf import global_settings
from django.test import Client
from django.test.utils import override_settings

from tests.factories import CuratorFactory


def production_hashers() -> list[str]:
    settings_module = importlib.import_module("memoryproject.settings")
    return getattr(settings_module, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS)


def test_the_tests_hash_fast_and_production_keeps_django_s_slow_hasher():
    from django.conf import settings

    assert settings.PASSWORD_HASHERS == ["django.contrib.auth.hashers.MD5PasswordHasher"]
    assert production_hashers()[0] == "django.contrib.auth.hashers.PBKDF2PasswordHasher"


def test_a_curator_s_password_is_stored_with_pbkdf2_and_logs_in(db, project):
    with override_settings(PASSWORD_HASHERS=production_hashers()):
        user = CuratorFactory(username="carol", project=project)
        assert user.password.startswith("pbkdf2_sha256$1000000$")
        client = Client()
        response = client.post("/login/", {"username": "carol", "password": "pw-carol"})
    assert response.status_code == 302
    assert "_auth_user_id" in client.session
