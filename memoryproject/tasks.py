"""django-q2 tasks and schedules of the maintenance runs that span the apps (compaction, retention),
and the session lifecycle (whose deletions reach search's vectors), applied by `manage.py
setup_schedules`. The schedule names are the ones they always had."""

from django.conf import settings
from django_q.models import Schedule

from memoryproject import maintenance
from sessions_app.tasks import lifecycle_counts_check
from vault.models import RunTrigger

SCHEDULES = [
    {
        "name": "vault: compaction",
        "func": "memoryproject.tasks.compaction_scheduled",
        "schedule_type": Schedule.MINUTES,
        "minutes": settings.MEMORY_COMPACT_INTERVAL_MINUTES,
        "repeats": -1,
    },
    {
        "name": "vault: retention and size",
        "func": "memoryproject.tasks.retention_scheduled",
        "schedule_type": Schedule.CRON,
        "cron": settings.MEMORY_RETENTION_CRON,
        "repeats": -1,
    },
    {
        "name": "sessions: lifecycle (idle, archive, delete)",
        "func": "memoryproject.tasks.lifecycle_scheduled",
        "schedule_type": Schedule.MINUTES,
        "minutes": settings.MEMORY_SESSION_LIFECYCLE_MINUTES,
        "repeats": -1,
    },
]


def _summary(runs) -> list[dict]:
    return [{"project": run.project.slug, "run": run.pk, "counts": run.counts} for run in runs]


def compaction_scheduled() -> list[dict]:
    return _summary(maintenance.compaction_run_all(dry_run=False, trigger=RunTrigger.SCHEDULE))


def retention_scheduled() -> list[dict]:
    return _summary(maintenance.retention_run_all(dry_run=False, trigger=RunTrigger.SCHEDULE))


def lifecycle_scheduled() -> dict:
    """The session lifecycle; its task fails (sessions_app's LifecycleFailed) when the pass failed on a
    session, so that /healthz shows it."""
    return lifecycle_counts_check(maintenance.lifecycle_run())
