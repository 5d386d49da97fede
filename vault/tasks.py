"""django-q2 tasks and schedules of the vault (applied by `manage.py setup_schedules`)."""

import logging

from django.conf import settings
from django_q.models import Schedule

from vault import maintenance
from vault.models import RunTrigger

logger = logging.getLogger(__name__)

SCHEDULES = [
    {
        "name": "vault: compaction",
        "func": "vault.tasks.compaction_scheduled",
        "schedule_type": Schedule.MINUTES,
        "minutes": settings.MEMORY_COMPACT_INTERVAL_MINUTES,
        "repeats": -1,
    },
    {
        "name": "vault: consolidation",
        "func": "vault.tasks.consolidation_scheduled",
        "schedule_type": Schedule.CRON,
        "cron": settings.MEMORY_CONSOLIDATE_CRON,
        "repeats": -1,
    },
    {
        "name": "vault: retention and size",
        "func": "vault.tasks.retention_scheduled",
        "schedule_type": Schedule.CRON,
        "cron": settings.MEMORY_RETENTION_CRON,
        "repeats": -1,
    },
]


def _summary(runs) -> list[dict]:
    return [{"project": run.project.slug, "run": run.pk, "counts": run.counts} for run in runs]


def compaction_scheduled() -> list[dict]:
    return _summary(maintenance.compaction_run_all(dry_run=False, trigger=RunTrigger.SCHEDULE))


def retention_scheduled() -> list[dict]:
    return _summary(maintenance.retention_run_all(dry_run=False, trigger=RunTrigger.SCHEDULE))


def consolidation_scheduled() -> list[dict]:
    return maintenance.consolidation_run_all()


def extraction_run(agent_id: int, session_id: int, trigger_source: str) -> dict:
    """Enqueued by vault.services.extraction_enqueue when a session closes or goes quiet."""
    return maintenance.extraction_perform(
        agent_id=agent_id, session_id=session_id, trigger_source=trigger_source
    )
