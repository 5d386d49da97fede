"""django-q2 tasks and schedules of the vault (applied by `manage.py setup_schedules`)."""

from django.conf import settings
from django_q.models import Schedule

from memoryproject.llm import llm_job_deadline
from vault.maintenance.consolidation import consolidation_run_all
from vault.services import daily_notes_flush

SCHEDULES = [
    {
        "name": "vault: consolidation",
        "func": "vault.tasks.consolidation_scheduled",
        "schedule_type": Schedule.CRON,
        "cron": settings.MEMORY_CONSOLIDATE_CRON,
        "repeats": -1,
    },
    {
        "name": "vault: write queued daily-note exchanges",
        "func": "vault.tasks.daily_notes_flush_scheduled",
        "schedule_type": Schedule.MINUTES,
        "minutes": 1,
        "repeats": -1,
    },
]


def consolidation_scheduled() -> list[dict]:
    """The nightly consolidation, its model calls ended before Q_TIMEOUT and shared among the agents."""
    with llm_job_deadline():
        return consolidation_run_all(time_shared=True)


def daily_notes_flush_scheduled() -> int:
    """Write the exchanges queued for daily notes that no append or read has written since (the last
    ones of a burst of appends): at most MEMORY_DAILY_NOTE_WRITE_SECONDS plus a minute behind."""
    return daily_notes_flush(older_than_seconds=settings.MEMORY_DAILY_NOTE_WRITE_SECONDS, strict=True)
