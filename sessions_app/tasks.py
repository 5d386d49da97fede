"""django-q2 schedules of sessions_app (applied by `manage.py setup_schedules`)."""

from django.conf import settings
from django_q.models import Schedule

from . import services
from .maintenance.extraction import extraction_perform

SCHEDULES = [
    {
        "name": "sessions: lifecycle (idle, archive, delete)",
        "func": "sessions_app.tasks.lifecycle_scheduled",
        "schedule_type": Schedule.MINUTES,
        "minutes": settings.MEMORY_SESSION_LIFECYCLE_MINUTES,
        "repeats": -1,
    },
]


def lifecycle_scheduled() -> dict:
    return services.lifecycle_run()


def extraction_run(agent_id: int, session_id: int, trigger_source: str) -> dict:
    """Enqueued by sessions_app.maintenance.extraction.extraction_enqueue when a session closes or goes
    quiet."""
    return extraction_perform(agent_id=agent_id, session_id=session_id, trigger_source=trigger_source)
