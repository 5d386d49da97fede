"""A session's extraction queued on Redis still runs when Redis loses the task (a restart without
persistence, a worker killed after taking it off the list): a one-off schedule in the database backs it."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import Schedule

from sessions_app.maintenance import extraction
from sessions_app.maintenance.extraction import EXTRACTION_TASK
from sessions_app.tasks import extraction_run
from tests.conftest import conversation_closed

pytestmark = pytest.mark.django_db

DECISION = "we decided to keep the job queue in PostgreSQL"


@pytest.fixture
def queued(monkeypatch):
    """The broker accepts every task and never runs it."""
    tasks = []
    monkeypatch.setattr(extraction, "async_task", lambda *args, **kwargs: tasks.append(args))
    monkeypatch.setattr(Conf, "SYNC", False)
    return tasks


def test_a_task_redis_lost_is_run_by_the_schedule_left_in_the_database(
    api, token_a, agent_a, settings, monkeypatch, queued, django_capture_on_commit_callbacks
):
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 0
    settings.MEMORY_EXTRACTION_MIN_MESSAGES = 1
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "REDIS", "redis://127.0.0.1:6379/9")
    before = timezone.now()
    session_id = conversation_closed(api, token_a, django_capture_on_commit_callbacks, DECISION)
    assert [args[1:] for args in queued] == [(agent_a.pk, session_id, "close")]  # queued, then lost

    backstop = Schedule.objects.get(func=EXTRACTION_TASK)
    assert backstop.schedule_type == Schedule.ONCE
    assert eval(backstop.args) == (agent_a.pk, session_id, "close")
    due = timedelta(seconds=settings.Q_CLUSTER["timeout"]) + extraction.INTERRUPTED_RETRY_MARGIN
    assert before + due <= backstop.next_run <= timezone.now() + due

    # The scheduler turns it into a task when it falls due: the conversation is extracted, once.
    assert extraction_run(*eval(backstop.args))["status"] == "done"
    assert not Schedule.objects.filter(func=EXTRACTION_TASK).exists()


def test_a_task_that_runs_takes_the_schedule_with_it(
    api, token_a, agent_a, settings, monkeypatch, queued, django_capture_on_commit_callbacks
):
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 0
    settings.MEMORY_EXTRACTION_MIN_MESSAGES = 1
    monkeypatch.setattr(Conf, "ORM", None)
    session_id = conversation_closed(api, token_a, django_capture_on_commit_callbacks, DECISION)
    assert Schedule.objects.filter(func=EXTRACTION_TASK).count() == 1
    assert extraction_run(*queued[0][1:])["status"] == "done"  # the queued task after all
    assert not Schedule.objects.filter(func=EXTRACTION_TASK).exists()
    assert session_id


def test_the_database_broker_keeps_its_tasks_and_needs_no_schedule(
    api, token_a, agent_a, settings, monkeypatch, queued, django_capture_on_commit_callbacks
):
    """PostgreSQL keeps a queued task until it is done, and hands one whose worker died out again."""
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 0
    settings.MEMORY_EXTRACTION_MIN_MESSAGES = 1
    monkeypatch.setattr(Conf, "ORM", "default")
    conversation_closed(api, token_a, django_capture_on_commit_callbacks, DECISION)
    assert len(queued) == 1
    assert not Schedule.objects.filter(func=EXTRACTION_TASK).exists()


def test_a_task_that_skips_the_conversation_takes_the_schedule_with_it(
    api, token_a, agent_a, settings, monkeypatch, queued, django_capture_on_commit_callbacks
):
    """A short conversation is skipped: its schedule would only be skipped again, six minutes later."""
    settings.MEMORY_EXTRACTION_MIN_MESSAGES = 5
    monkeypatch.setattr(Conf, "ORM", None)
    conversation_closed(api, token_a, django_capture_on_commit_callbacks, DECISION)
    assert Schedule.objects.filter(func=EXTRACTION_TASK).count() == 1
    assert extraction_run(*queued[0][1:])["status"] == "skipped"
    assert not Schedule.objects.filter(func=EXTRACTION_TASK).exists()
