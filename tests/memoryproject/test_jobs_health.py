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
    assert body["jobs"] == {"overdue": 0, "overdue_schedules": [], "failed_last_day": 0}


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
