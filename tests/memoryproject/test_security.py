"""Security defaults: the secret key, API rate limits, login throttling, HTTPS settings, the CSP."""

import os
import re
import stat
import subprocess
import sys
import threading
import types
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

import pytest
import time_machine
from django.core.cache import cache, caches
from django.core.cache.backends.db import DatabaseCache
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django_ratelimit import ALL

from memoryproject import cache as cache_module
from memoryproject.security import secret_key_load

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_KEY = "insecure-dev-key-set-SECRET_KEY-in-production-0123456789abcdef"


def test_it_generates_a_secret_key_on_first_start_and_keeps_it(tmp_path):
    key = secret_key_load(configured="", data_dir=tmp_path, debug=False)
    assert len(key) >= 50 and key != PUBLIC_KEY
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600
    assert secret_key_load(configured="", data_dir=tmp_path, debug=False) == key
    assert secret_key_load(configured="", data_dir=tmp_path / "other", debug=False) != key


def test_it_refuses_a_known_public_key_unless_debug_is_on(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        secret_key_load(configured=PUBLIC_KEY, data_dir=tmp_path, debug=False)
    with pytest.raises(ImproperlyConfigured):
        secret_key_load(configured="django-insecure-abc" + "x" * 50, data_dir=tmp_path, debug=False)
    assert secret_key_load(configured=PUBLIC_KEY, data_dir=tmp_path, debug=True) == PUBLIC_KEY


def test_the_server_refuses_to_start_with_the_old_public_key():
    env = {
        **os.environ,
        "SECRET_KEY": PUBLIC_KEY,
        "DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "memoryproject.settings",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


@override_settings(MEMORY_API_RATE_LIMIT="3/m")
@pytest.mark.usefixtures("one_rate_window")
def test_it_answers_429_with_retry_after_once_a_token_is_over_its_limit(api, token_a, token_b, agent_a):
    for _ in range(3):
        assert api.get("/me", token=token_a).status_code == 200
    response = api.get("/me", token=token_a)
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "MEMORY_API_RATE_LIMIT" in response.json()["detail"]
    assert api.get("/me", token=token_b).status_code == 200  # limits are per token


@override_settings(MEMORY_API_RATE_LIMIT="3/m")
@pytest.mark.usefixtures("one_rate_window")
def test_a_busy_shared_cache_does_not_drop_a_tokens_count(api, token_a, agent_a):
    for _ in range(3):
        assert api.get("/me", token=token_a).status_code == 200
    # Many other keys (other tokens' counters): the database cache culled a third of its keys, in key
    # order, once it held 300, and this token's counter sorts before these.
    cache.set_many({f"zz-other-{i:04d}": i for i in range(400)}, 60)
    assert api.get("/me", token=token_a).status_code == 429


@override_settings(MEMORY_API_RATE_LIMIT="3/m")
@pytest.mark.django_db
@pytest.mark.usefixtures("one_rate_window")
def test_a_tokens_count_is_kept_under_the_key_django_ratelimit_names_for_the_rate_as_written():
    """The rate is handed to django-ratelimit parsed once, and its settings set to their defaults: the
    counter must stay under the key the written rate names, which web processes of an earlier version
    (during a rolling restart) and of other hosts count on."""
    from django_ratelimit.core import _get_window, _make_cache_key

    from memoryproject.security import api_rate_check

    principal = types.SimpleNamespace(token_id=4242)
    key = _make_cache_key("api-token", _get_window("4242", 60), "3/m", "4242", ALL)
    assert key.startswith("rl:")
    api_rate_check(principal)
    api_rate_check(principal)
    assert cache.get(key) == 2


@override_settings(MEMORY_API_RATE_LIMIT="")
def test_an_empty_rate_limit_turns_the_limit_off(api, token_a, agent_a):
    assert all(api.get("/me", token=token_a).status_code == 200 for _ in range(5))


@override_settings(AXES_FAILURE_LIMIT=3)
def test_it_locks_out_a_login_after_repeated_wrong_passwords(django_user_model):
    django_user_model.objects.create_user(username="curator", password="right-horse-battery")
    client = Client()
    statuses = [
        client.post("/login/", {"username": "curator", "password": "wrong"}).status_code for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    response = client.post("/login/", {"username": "curator", "password": "right-horse-battery"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_right_password_still_logs_in_below_the_limit(django_user_model):
    django_user_model.objects.create_user(username="curator", password="right-horse-battery")
    client = Client()
    client.post("/login/", {"username": "curator", "password": "wrong"})
    response = client.post("/login/", {"username": "curator", "password": "right-horse-battery"})
    assert response.status_code == 302
    assert "_auth_user_id" in client.session


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment does not.
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "DJANGO_SETTINGS_MODULE": "memoryproject.settings",
        "DEBUG": "0",
        "SECRET_KEY": "",
        "MEMORY_DATA_DIR": str(tmp_path),
        "MEMORY_BEHIND_TLS": "1",
        "ALLOWED_HOSTS": "memory.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://memory.example.com",
        "DATABASE_URL": os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/unused",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600


def test_curator_pages_send_a_csp_without_inline_script(admin_client, project):
    response = admin_client.get("/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    html = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert not re.search(r"\son[a-z]+=", html)


def test_no_template_has_inline_handlers_scripts_or_styles():
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        assert not re.search(r"\son(click|change|focus|submit|load|input|keyup|keydown)=", text), path
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), path
        assert "style=" not in text and "<style" not in text, path


@pytest.mark.django_db
def test_the_database_cache_deletes_dead_windows_and_keeps_live_counters(monkeypatch):
    """Rate-limit counters of past windows are never read again: they must not pile up (every write
    counted them) nor push live counters out."""
    if not isinstance(caches["default"], DatabaseCache):
        pytest.skip("REDIS_URL is set: the cache is Redis")
    monkeypatch.setattr(cache_module, "CULL_SECONDS", 0.0)
    cache.clear()
    with time_machine.travel(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), tick=False):
        cache.set_many({f"window-1-token-{i}": i for i in range(500)}, 60)
        cache.set("live-counter", 7, 3600)
    with time_machine.travel(datetime(2026, 3, 1, 12, 5, tzinfo=UTC), tick=False):
        cache.set("window-6-token-1", 1, 60)
        with connection.cursor() as cursor:
            cursor.execute("SELECT cache_key FROM memory_cache ORDER BY cache_key")
            keys = [row[0].split(":")[-1] for row in cursor.fetchall()]
        assert keys == ["live-counter", "window-6-token-1"]
        assert cache.get("live-counter") == 7


def _database_cache_only():
    if not isinstance(caches["default"], DatabaseCache):
        pytest.skip("REDIS_URL is set: the cache is Redis")


@pytest.mark.django_db(transaction=True)
def test_concurrent_increments_of_one_counter_are_all_counted():
    """Several web processes count the same token at once: every request must be counted (Django's
    database cache read the value and wrote it back, so concurrent increments were lost)."""
    _database_cache_only()
    cache.add("rl-shared", 0, 600)
    errors = []

    def count():
        try:
            for _ in range(40):
                cache.incr("rl-shared")
        except Exception as exc:  # noqa: BLE001 - any failure fails the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=count) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert cache.get("rl-shared") == 240


@pytest.mark.django_db
def test_a_counter_keeps_its_expiry_and_an_expired_one_starts_again():
    _database_cache_only()
    with time_machine.travel(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), tick=False):
        assert cache.add("rl-window", 0, 60) is True
        assert cache.add("rl-window", 0, 60) is False  # live: the window's count stays
        assert cache.incr("rl-window") == 1
    with time_machine.travel(datetime(2026, 3, 1, 12, 0, 30, tzinfo=UTC), tick=False):
        assert cache.incr("rl-window", 5) == 6
    with time_machine.travel(datetime(2026, 3, 1, 12, 1, 1, tzinfo=UTC), tick=False):
        assert cache.get("rl-window") is None  # incrementing did not extend the window
        with pytest.raises(ValueError):
            cache.incr("rl-window")
        assert cache.add("rl-window", 0, 60) is True  # the expired key is taken over
        assert cache.get("rl-window") == 0


@pytest.mark.django_db
def test_a_live_counter_is_counted_with_one_statement_a_request():
    """A window's counter, once this process has seen it, is not stored again on every request: `add`
    answers from memory and only `incr` reaches the database."""
    _database_cache_only()
    with time_machine.travel(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), tick=False):
        assert cache.add("rl-seen", 0, 60) is True
        with CaptureQueriesContext(connection) as queries:
            for expected in (1, 2, 3):
                assert cache.add("rl-seen", 0, 60) is False
                assert cache.incr("rl-seen") == expected
        assert len(queries.captured_queries) == 3
    with time_machine.travel(datetime(2026, 3, 1, 12, 1, 1, tzinfo=UTC), tick=False):
        assert cache.add("rl-seen", 0, 60) is True  # past its expiry: asked again, and taken over
        assert cache.incr("rl-seen") == 1


@pytest.mark.django_db
def test_a_counter_seen_by_another_process_is_remembered_and_one_deleted_behind_its_back_comes_back():
    _database_cache_only()
    with time_machine.travel(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), tick=False):
        other = caches.create_connection("default")  # another web process's cache object
        assert other.add("rl-other", 0, 60) is True
        assert cache.add("rl-other", 0, 60) is False  # asked once: it is there and live
        with CaptureQueriesContext(connection) as queries:
            assert cache.add("rl-other", 0, 60) is False
        assert queries.captured_queries == []
        assert cache.incr("rl-other") == 1
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM memory_cache")
        assert cache.add("rl-other", 0, 60) is False  # still remembered as live...
        with pytest.raises(ValueError):
            cache.incr("rl-other")  # ...until counting finds it gone
        assert cache.add("rl-other", 0, 60) is True
        assert cache.incr("rl-other") == 1
        cache.delete("rl-other")
        assert cache.add("rl-other", 0, 60) is True  # a delete through the cache forgets it at once


@pytest.mark.django_db
def test_the_database_cache_still_stores_any_value():
    _database_cache_only()
    assert cache.add("flag", True, 60) is True
    assert cache.get("flag") is True
    cache.set("settings", {"limit": 5, "name": "#int:7"}, 60)
    assert cache.get("settings") == {"limit": 5, "name": "#int:7"}
    cache.set("pickled-count", 3, 60)  # set() pickles: incr still works on it
    assert cache.incr("pickled-count") == 4
    assert cache.get_many(["flag", "settings", "missing"]) == {
        "flag": True,
        "settings": {"limit": 5, "name": "#int:7"},
    }


@pytest.mark.django_db
def test_the_cache_table_is_unlogged_so_counting_a_request_waits_for_no_disk_flush():
    """Every API request writes its rate-limit counter: in a logged table each of those commits waited
    for the write-ahead log to reach the disk (migration memoryproject 0002)."""
    _database_cache_only()
    with connection.cursor() as cursor:
        cursor.execute("SELECT relpersistence FROM pg_class WHERE oid = to_regclass('memory_cache')")
        assert cursor.fetchone() == ("u",)
    assert cache.add("rl-unlogged", 0, 60) is True
    assert cache.incr("rl-unlogged") == 1


@pytest.mark.django_db
def test_the_policy_is_built_once_and_every_response_gets_it(api, token_a, admin_client, project, settings):
    from csp.utils import build_policy

    expected = build_policy()
    with mock.patch("csp.middleware.build_policy", wraps=build_policy) as built:
        for _ in range(3):
            assert api.get("/me", token=token_a)["Content-Security-Policy"] == expected
            assert admin_client.get("/")["Content-Security-Policy"] == expected
    assert built.call_count == 0
    assert "Content-Security-Policy-Report-Only" not in api.get("/me", token=token_a)
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    assert api.get("/me", token=token_a)["Content-Security-Policy"] == "default-src 'none'"
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"img-src": ["'self'"]}}
    assert api.get("/me", token=token_a)["Content-Security-Policy-Report-Only"] == build_policy(
        report_only=True
    )
    assert "img-src 'self'" in build_policy(report_only=True)
