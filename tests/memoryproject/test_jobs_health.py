"""/healthz says what a monitor needs to know of the background jobs: schedules no job worker has taken
(none is running: `serve --no-cluster` everywhere and no qcluster) and tasks that failed lately."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_q.models import Schedule, Task

from memoryproject import jobs_health

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_count():
    jobs_health.jobs_status_cache_clear()


def test_it_reports_no_trouble_when_the_jobs_run(api):
    call_command("setup_schedules")
    body = api.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["jobs"] == {
        "overdue": 0,
        "overdue_schedules": [],
        "failed_last_day": 0,
        "runs_failed_last_day": 0,
        "runs_failed": [],
        "agents_failing": 0,
        "agents_failing_listed": [],
    }


def test_it_names_the_schedules_no_worker_has_taken(api):
    call_command("setup_schedules")
    Schedule.objects.filter(name="vault: compaction").update(next_run=timezone.now() - timedelta(hours=1))
    response = api.get("/healthz")
    assert response.status_code == 200  # the web process is healthy: a balancer keeps it
    assert response.json()["jobs"]["overdue"] == 1
    assert response.json()["jobs"]["overdue_schedules"] == ["vault: compaction"]


def test_it_counts_the_tasks_that_failed_in_the_last_day(api):
    now = timezone.now()
    for n, stopped in enumerate(
        [now - timedelta(minutes=5), now - timedelta(hours=3), now - timedelta(days=2)]
    ):
        Task.objects.create(id=f"{n:032x}", name=f"t{n}", func="vault.tasks.consolidation_scheduled",
                            started=stopped, stopped=stopped, success=False, group="vault: consolidation")  # fmt: skip
    Task.objects.create(id="f" * 32, name="ok", func="vault.tasks.consolidation_scheduled", started=now,
                        stopped=now, success=True, group="vault: consolidation")  # fmt: skip
    assert api.get("/healthz").json()["jobs"]["failed_last_day"] == 2


def test_it_counts_the_scheduled_runs_whose_work_failed(api, agent_a, monkeypatch):
    """A compaction whose step fails, or a consolidation whose agent fails, records the failure in its
    run and goes on, so its task succeeds: /healthz said nothing of a job that failed every time
    (failed_last_day counts failed tasks only). The runs of the last day that failed somewhere are
    counted, and the first named (kind and project), for an operator to open."""
    from memoryproject import maintenance, tasks
    from vault.models import CompactionRun, RunKind

    def broken(run, project, now):
        raise RuntimeError("the step broke")

    monkeypatch.setattr(maintenance, "COMPACTION_STEPS", (broken,))
    tasks.compaction_scheduled()
    assert CompactionRun.objects.get(kind=RunKind.COMPACTION).counts["errors"] == 1
    CompactionRun.objects.create(project=agent_a.project, kind=RunKind.CONSOLIDATION, started_at=timezone.now(),
                                 counts={"agents": 2, "updated": 1, "refused": 0, "failed": 1})  # fmt: skip
    CompactionRun.objects.create(project=agent_a.project, kind=RunKind.RETENTION, counts={"errors": 3},
                                 started_at=timezone.now() - timedelta(days=2))  # fmt: skip
    CompactionRun.objects.create(project=agent_a.project, kind=RunKind.RETENTION, counts={"errors": 0},
                                 started_at=timezone.now())  # fmt: skip
    jobs = api.get("/healthz").json()["jobs"]
    assert jobs["failed_last_day"] == 0  # no task failed
    assert jobs["runs_failed_last_day"] == 2
    assert sorted(jobs["runs_failed"]) == ["compaction of acme", "consolidation of acme"]


def test_a_lifecycle_pass_that_failed_on_a_session_fails_its_task(agent_a, monkeypatch):
    """The session lifecycle counted a session it failed to archive in its result's "errors" and
    returned: its task succeeded, so a session failing every pass (every few minutes) showed nowhere in
    /healthz. The pass still does the other sessions, then raises, saying what it did: the task is
    failed (failed_last_day) with the counts in its error."""
    from memoryproject import tasks
    from sessions_app import tasks as sessions_tasks
    from sessions_app.models import Session
    from sessions_app.services import lifecycle
    from tests.maintenance.conftest import session_make

    session_make(agent_a, ["hello"], start=timezone.now() - timedelta(days=100), external_id="old-1")
    session_make(agent_a, ["hello"], start=timezone.now() - timedelta(days=100), external_id="old-2")
    Session.objects.update(last_activity_at=timezone.now() - timedelta(days=100), status="idle")
    archive = lifecycle.session_archive
    failing = Session.objects.get(external_id="old-1").pk

    def session_archive(*, session, **options):
        if session.pk == failing:
            raise RuntimeError("the archive broke")
        return archive(session=session, **options)

    monkeypatch.setattr(lifecycle, "session_archive", session_archive)
    with pytest.raises(sessions_tasks.LifecycleFailed, match="1 error") as failed:
        tasks.lifecycle_scheduled()
    assert "'archived': 1" in str(failed.value)
    assert Session.objects.get(external_id="old-2").status == "archived"
