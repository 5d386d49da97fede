"""django-q2 tasks and schedules of the vault (applied by `manage.py setup_schedules`)."""

from django.conf import settings
from django_q.models import Schedule

from vault.maintenance.consolidation import consolidation_run_all

SCHEDULES = [
    {
        "name": "vault: consolidation",
        "func": "vault.tasks.consolidation_scheduled",
        "schedule_type": Schedule.CRON,
        "cron": settings.MEMORY_CONSOLIDATE_CRON,
        "repeats": -1,
    },
]


def consolidation_scheduled() -> list[dict]:
    return consolidation_run_all()
