"""django-q2 schedules of search (applied by `manage.py setup_schedules`)."""

from dataclasses import asdict

from django.conf import settings
from django_q.models import Schedule

from search.agent_text_index import agent_text_indexes_ensure
from search.embedding_index import embeddings_refresh

SCHEDULES = [
    {
        "name": "search: embed new and edited items",
        "func": "search.tasks.embeddings_refresh_scheduled",
        "schedule_type": Schedule.MINUTES,
        "minutes": settings.MEMORY_EMBEDDINGS_INTERVAL_MINUTES,
        "repeats": -1,
    },
    {
        "name": "search: per-agent text indexes",
        "func": "search.tasks.agent_text_indexes_scheduled",
        "schedule_type": Schedule.HOURLY,
        "repeats": -1,
    },
]


def embeddings_refresh_scheduled() -> dict:
    return asdict(embeddings_refresh(max_seconds=settings.MEMORY_EMBEDDINGS_RUN_SECONDS))


def agent_text_indexes_scheduled() -> dict:
    return agent_text_indexes_ensure()
