"""An extraction whose worker is killed or times out (Q_TIMEOUT) mid-way: nothing it wrote is kept,
and it is run again by a retry it armed before it started, not only when the session next closes or
goes quiet."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from django_q.exceptions import TimeoutException
from django_q.models import Schedule

from sessions_app.maintenance import extraction
from sessions_app.maintenance.extraction import EXTRACTION_ATTEMPTS, extraction_perform
from tests.maintenance.conftest import session_make
from vault.models import VaultEntry, WorkspaceFile

pytestmark = pytest.mark.django_db

CONVERSATION = [
    "We need to pick a queue for the billing events today.",
    "We decided to use Kafka for the billing events.",
    "Good, and retries should back off exponentially please.",
    "I learned that the consumer must commit offsets after the write.",
]


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


def _killed_after_writing(monkeypatch):
    """The worker's Q_TIMEOUT alarm (django-q2 raises TimeoutException, a SystemExit, in the task)
    going off once the extraction has written its entries and note, before it ends."""
    real = extraction._extract

    def extract_then_killed(*args, **kwargs):
        real(*args, **kwargs)
        raise TimeoutException("Task exceeded maximum timeout value (300 seconds)")

    monkeypatch.setattr(extraction, "_extract", extract_then_killed)


def _due_tasks_run(monkeypatch) -> list[dict]:
    """The cluster's scheduler turns the due schedules into queued tasks, and a worker runs each
    (here in order, on this connection)."""
    from django.utils.module_loading import import_string
    from django_q.brokers import get_broker
    from django_q.models import OrmQ
    from django_q.scheduler import scheduler

    monkeypatch.setattr("django_q.scheduler.close_old_django_connections", lambda: None)
    scheduler(broker=get_broker())
    results = []
    for queued in OrmQ.objects.order_by("id"):
        task = queued.task
        queued.delete()
        results.append(import_string(task["func"])(*task["args"], **task["kwargs"]))
    return results


def test_an_extraction_killed_midway_is_run_again_by_the_next_scheduler_pass(agent_a, monkeypatch, settings):
    """A killed or timed-out extraction (its transaction rolled back) was run again only when the
    session next closed or went quiet: never, for a session that was done. Its retry, armed and committed
    before the work, runs it again after Q_TIMEOUT; the entries are written once."""
    session = session_make(agent_a, CONVERSATION)
    start = timezone.now()
    with monkeypatch.context() as patch:
        _killed_after_writing(patch)
        with time_machine.travel(start, tick=False), pytest.raises(TimeoutException):
            extraction_perform(agent_id=agent_a.pk, session_id=session.pk, trigger_source="close")
    assert not VaultEntry.objects.exists()  # rolled back with the worker
    [retry] = Schedule.objects.filter(name=f"extraction retry: session {session.pk}")
    assert retry.next_run == start + timedelta(seconds=settings.Q_CLUSTER["timeout"] + 60)
    with time_machine.travel(retry.next_run + timedelta(seconds=1), tick=False):
        [result] = _due_tasks_run(monkeypatch)
    assert result["status"] == "done" and result["path"] == "heuristic"
    assert VaultEntry.objects.filter(category="decisions", content__contains="Kafka").count() == 1
    assert VaultEntry.objects.filter(category="lessons").count() == 1
    note = WorkspaceFile.objects.get(agent=agent_a, path__startswith="memory/").content
    assert note.count("We decided to use Kafka") == 1
    assert not Schedule.objects.filter(name__startswith="extraction retry").exists()
    # Run again by anything else (a second delivery of the killed task): nothing is written twice.
    again = extraction_perform(agent_id=agent_a.pk, session_id=session.pk, trigger_source="close")
    assert again["status"] == "skipped"
    assert VaultEntry.objects.count() == 2


def test_an_extraction_that_ends_leaves_no_retry(agent_a):
    session = session_make(agent_a, CONVERSATION)
    assert (
        extraction_perform(agent_id=agent_a.pk, session_id=session.pk, trigger_source="close")["status"]
        == "done"
    )
    assert not Schedule.objects.filter(name__startswith="extraction retry").exists()


def test_an_extraction_killed_every_time_is_tried_a_bounded_number_of_times(agent_a, monkeypatch, settings):
    session = session_make(agent_a, CONVERSATION)
    _killed_after_writing(monkeypatch)
    now = timezone.now()
    attempts = 0
    with time_machine.travel(now, tick=False), pytest.raises(TimeoutException):
        attempts += 1
        extraction_perform(agent_id=agent_a.pk, session_id=session.pk, trigger_source="close")
    while Schedule.objects.filter(name__startswith="extraction retry").exists():
        now += timedelta(seconds=settings.Q_CLUSTER["timeout"] + 61)
        with time_machine.travel(now, tick=False), pytest.raises(TimeoutException):
            attempts += 1
            _due_tasks_run(monkeypatch)
        assert attempts <= EXTRACTION_ATTEMPTS
    assert attempts == EXTRACTION_ATTEMPTS
    assert not VaultEntry.objects.exists()


def test_a_model_slower_than_q_timeout_falls_back_to_the_heuristics_before_the_worker_is_killed(
    agent_a, settings, monkeypatch
):
    """A model that never answers, 60 s timeouts and two retries: the extraction task waited 180 s and
    more, past a Q_TIMEOUT of 120 s, and was killed every attempt. Its calls now end within Q_TIMEOUT less
    a tenth (108 s), retries kept, and the heuristics extract the session (failed before: 180 s on the
    clock). The clock is the LLM client's, moved by the timeouts: nothing waits for real."""
    import urllib.error

    from memoryproject import llm
    from sessions_app.tasks import extraction_run
    from tests.memoryproject.test_llm_deadline import Clock

    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:9/v1", "test-model"
    settings.LLM_TIMEOUT_SECONDS, settings.LLM_MAX_RETRIES = 60, 2
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 120, "sync": False}
    clock = Clock()
    monkeypatch.setattr(llm, "time", clock)

    def silent(url, body, headers, timeout):
        clock.now += timeout
        raise urllib.error.URLError(TimeoutError("timed out"))

    monkeypatch.setattr(llm, "_post", silent)
    session = session_make(agent_a, CONVERSATION)
    started = clock.now
    result = extraction_run(agent_a.pk, session.pk, "close")
    assert clock.now - started <= 108
    assert result["status"] == "done" and result["path"] == "heuristic"
    assert "Q_TIMEOUT (120 s)" in result["llm_error"]
    assert VaultEntry.objects.filter(category="decisions", content__contains="Kafka").count() == 1


def test_a_clock_set_back_does_not_defer_the_agents_extractions_until_it_catches_up(agent_a, settings):
    """The cooldown counted from the last extraction's time: a clock that had run a day ahead and was
    set back left that time a day in the future, and every extraction of the agent was deferred until
    then (failed before: deferred by a day)."""
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 5
    first = session_make(agent_a, CONVERSATION, external_id="chat-1")
    second = session_make(
        agent_a, [text.replace("Kafka", "RabbitMQ") for text in CONVERSATION], external_id="chat-2"
    )
    now = timezone.now()
    with time_machine.travel(now + timedelta(days=1), tick=False):
        assert (
            extraction_perform(agent_id=agent_a.pk, session_id=first.pk, trigger_source="close")["status"]
            == "done"
        )
    with time_machine.travel(now, tick=False):  # set back
        result = extraction_perform(agent_id=agent_a.pk, session_id=second.pk, trigger_source="close")
    assert result["status"] == "done", result
    assert VaultEntry.objects.filter(content__contains="RabbitMQ").exists()
