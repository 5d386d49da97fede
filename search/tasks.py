"""django-q2 schedules of search (applied by `manage.py setup_schedules`)."""

from dataclasses import asdict

from django.conf import settings
from django_q.models import Schedule

from memoryproject.llm import job_seconds
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
    return asdict(embeddings_refresh(max_seconds=embeddings_run_seconds()))


def embeddings_run_seconds() -> float:
    """How long a run of the job may start batches: MEMORY_EMBEDDINGS_RUN_SECONDS, less when a batch
    started then could outlast the task's Q_TIMEOUT. A batch sent to an embeddings server may take
    its timeout on every attempt; with a backlog (100,000 messages waiting) and a Q_TIMEOUT under
    MEMORY_EMBEDDINGS_RUN_SECONDS plus that, every run was killed midway, a failed task each minute."""
    batch = 0.0
    if settings.MEMORY_EMBEDDINGS == "openai":
        attempts = settings.MEMORY_EMBEDDINGS_MAX_RETRIES + 1
        batch = settings.MEMORY_EMBEDDINGS_TIMEOUT_SECONDS * attempts + 0.5 * (2 ** (attempts - 1) - 1)
    return max(1.0, min(settings.MEMORY_EMBEDDINGS_RUN_SECONDS, job_seconds() - batch))


def agent_text_indexes_scheduled() -> dict:
    return agent_text_indexes_ensure()
