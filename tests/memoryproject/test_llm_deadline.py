"""A request that asks the model waits for it at most LLM_REQUEST_SECONDS, retries included.

With the defaults (a 60 s timeout, 2 retries, a 429's or 503's Retry-After waited up to the timeout), a
failing model held `POST .../compact` for three to five minutes, past any reverse proxy's patience.
The clock here is the module's own, made to pass by the waits and timeouts it is asked for: nothing
waits for real."""

import urllib.error

import pytest

from memoryproject import llm
from memoryproject.llm import LLMError, llm_chat, llm_deadline
from sessions_app import services
from sessions_app.models import Session


class Clock:
    """Stands for the `time` module in memoryproject.llm: sleeping moves it on."""

    def __init__(self):
        self.now = 1000.0
        self.slept = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(llm, "time", clock)
    return clock


@pytest.fixture
def overloaded(fake_llm, settings):
    """A model that answers 503 with Retry-After: 20 to every call; 60 s timeouts, five retries."""
    settings.LLM_TIMEOUT_SECONDS = 60
    settings.LLM_MAX_RETRIES = 5
    settings.LLM_REQUEST_SECONDS = 45
    fake_llm.reply_raw('{"error": "overloaded"}', status=503, headers={"Retry-After": "20"})
    return fake_llm


def test_a_call_within_a_deadline_stops_retrying_when_no_time_is_left(overloaded, clock):
    """Attempts at 0, 20 and 40 s; the next would start after the deadline (45 s). Failed before:
    six attempts, 100 s of waiting."""
    started = clock.now
    with (
        llm_deadline(),
        pytest.raises(LLMError, match=r"after 3 attempt\(s\).*LLM_REQUEST_SECONDS \(45 s\).*HTTP 503"),
    ):
        llm_chat([{"role": "user", "content": "hi"}])
    assert len(overloaded.requests) == 3
    assert clock.now - started <= 45


def test_a_call_outside_a_deadline_keeps_its_retries(overloaded, clock):
    """A scheduled job's call (no deadline): every retry, as LLM_MAX_RETRIES says."""
    with pytest.raises(LLMError, match=r"after 6 attempt"):
        llm_chat([{"role": "user", "content": "hi"}])
    assert len(overloaded.requests) == 6
    assert clock.slept == 100


def test_an_attempts_timeout_is_what_is_left_of_the_deadline(fake_llm, settings, clock, monkeypatch):
    """A model that never answers: the one attempt waits the 45 s left, not LLM_TIMEOUT_SECONDS (60),
    and none follows."""
    settings.LLM_TIMEOUT_SECONDS, settings.LLM_MAX_RETRIES, settings.LLM_REQUEST_SECONDS = 60, 2, 45
    timeouts = []

    def silent(url, body, headers, timeout):
        timeouts.append(timeout)
        clock.now += timeout
        raise urllib.error.URLError(TimeoutError("timed out"))

    monkeypatch.setattr(llm, "_post", silent)
    with llm_deadline(), pytest.raises(LLMError, match="after 1 attempt"):
        llm_chat([{"role": "user", "content": "hi"}])
    assert timeouts == [45]
    # An outer deadline of 100 s, an inner one of 10 s: the sooner holds.
    with llm_deadline(100), llm_deadline(10), pytest.raises(LLMError, match="after 1 attempt"):
        llm_chat([{"role": "user", "content": "hi"}])
    assert timeouts == [45, 10]


@pytest.mark.django_db
def test_a_compaction_request_answers_within_the_deadline_with_the_heuristic_summary(
    overloaded, clock, api, agent_a, token_a, settings
):
    """POST .../compact with an overloaded model: the heuristic summary within LLM_REQUEST_SECONDS.
    Failed before: six attempts and 100 s of waiting (three to five minutes with real timeouts)."""
    settings.MEMORY_COMPACT_KEEP_FIRST, settings.MEMORY_COMPACT_KEEP_TURNS = 0, 1
    padding = "the migration of the ledger tables to PostgreSQL goes on, table by table, " * 4
    texts = [f"step {i}: {padding}" for i in range(6)] + ["what next?"]
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "text": t} for i, t in enumerate(texts)]
    services.messages_append(agent=agent_a, messages=messages, session_key="long")
    started = clock.now
    response = api.post(f"/agents/{agent_a.slug}/sessions/long/compact", {"force": True}, token=token_a)
    assert response.status_code == 200, response.content
    assert response.json()["compacted"] is True
    assert len(overloaded.requests) == 3
    assert clock.now - started <= 45
    summary = Session.objects.get(agent=agent_a).messages.get(internal=True, archived=False).text
    assert "earlier messages" in summary  # the heuristic one
