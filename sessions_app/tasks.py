"""django-q2 schedules of sessions_app (applied by `manage.py setup_schedules`)."""

from django.conf import settings
from django_q.models import Schedule

from . import services

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
