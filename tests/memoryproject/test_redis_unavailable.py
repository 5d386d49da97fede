"""Redis (REDIS_URL) unreachable while the server runs, then back: the API keeps answering (rate limits
are not counted meanwhile, and a warning says so) and a session's extraction is not lost when the job
broker cannot take it."""

import json
import logging
import os
import subprocess
import sys

import pytest
import redis
from django_q.conf import Conf
from django_q.models import Schedule

from memoryproject import security
from sessions_app.maintenance.extraction import EXTRACTION_TASK
from tests.conftest import conversation_closed

pytestmark = pytest.mark.django_db

REDIS_DB = 7  # not 0: the machine's Redis is shared; this test flushes only this database
NOBODY = "redis://127.0.0.1:1/0"  # port 1: nothing listens, connections are refused


def redis_cache(url: str) -> dict:
    return {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}


@pytest.fixture
def live_redis():
    url = f"redis://127.0.0.1:6379/{REDIS_DB}"
    try:
        redis.Redis.from_url(url).flushdb()
    except redis.exceptions.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    yield url
    redis.Redis.from_url(url).flushdb()


def test_it_keeps_answering_while_redis_is_unreachable_and_counts_again_once_it_is_back(
    api, token_a, agent_a, settings, live_redis, caplog, monkeypatch
):
    settings.MEMORY_API_RATE_LIMIT = "2/m"
    settings.CACHES = redis_cache(NOBODY)
    monkeypatch.setattr(security, "_rate_limit_warned_at", float("-inf"))
    with caplog.at_level(logging.WARNING, logger="memoryproject.security"):
        for _ in range(3):  # over the limit, but nothing can count: not limited, never a 500
            assert api.get("/agents", token=token_a).status_code == 200
        created = api.post(
            "/agents/agent-a/entries",
            {"category": "lessons", "content": "written while Redis is down"},
            token=token_a,
        )
        assert created.status_code == 201, created.content
    warnings = [r.getMessage() for r in caplog.records if "rate limit not counted" in r.getMessage()]
    assert len(warnings) == 1  # once a minute per process, not once a request

    settings.CACHES = redis_cache(live_redis)  # Redis is back: counted and limited again
    assert api.get("/agents", token=token_a).status_code == 200
    assert api.get("/agents", token=token_a).status_code == 200
    limited = api.get("/agents", token=token_a)
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1


def test_the_redis_cache_and_broker_give_up_on_a_host_that_does_not_answer():
    """A Redis host that drops packets (no refusal) would hold every API request (and a session's close,
    which queues its extraction) for the OS's connect timeout (minutes): connections give up first."""
    script = (
        "from django.conf import settings; "
        "print(json.dumps([settings.CACHES['default'], settings.Q_CLUSTER['redis']]))"
    )
    env = {
        **os.environ,
        "REDIS_URL": "redis://10.255.255.1:6379/0",
        "DJANGO_SETTINGS_MODULE": "memoryproject.settings",
    }
    out = subprocess.run(
        [sys.executable, "-c", f"import json, django; django.setup(); {script}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    cache, broker = json.loads(out.stdout.strip().splitlines()[-1])
    assert broker == "redis://10.255.255.1:6379/0?socket_connect_timeout=2"  # the job broker too
    assert cache["LOCATION"] == "redis://10.255.255.1:6379/0"
    assert 0 < cache["OPTIONS"]["socket_connect_timeout"] <= 2
    assert 0 < cache["OPTIONS"]["socket_timeout"] <= 2


def test_a_closed_sessions_extraction_is_kept_when_the_broker_is_unreachable(
    api, token_a, agent_a, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 0
    monkeypatch.setattr(Conf, "SYNC", False)
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "REDIS", NOBODY)
    session_id = conversation_closed(
        api, token_a, django_capture_on_commit_callbacks, "we chose PostgreSQL for the queue"
    )
    # The broker could not take the task: a one-off schedule (in the database) runs it once Redis is back.
    retry = Schedule.objects.get(func=EXTRACTION_TASK)
    assert retry.schedule_type == Schedule.ONCE
    assert eval(retry.args) == (agent_a.pk, session_id, "close")
