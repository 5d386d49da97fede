"""django-q2 schedules of sessions_app (applied by `manage.py setup_schedules`)."""

from memoryproject.llm import llm_job_deadline

from . import services
from .maintenance.extraction import extraction_perform

# The session lifecycle's schedule is memoryproject's (memoryproject.tasks): a session it deletes takes
# its exchanges out of the daily notes, whose old vectors search drops after it.
SCHEDULES: list[dict] = []


class LifecycleFailed(Exception):
    """A lifecycle pass failed on some sessions (it did the others): the task fails, so that /healthz and
    the admin's failed tasks show a session that fails every pass."""


def lifecycle_scheduled() -> dict:
    """What the lifecycle schedule ran before it was memoryproject's; setup_schedules (run by `serve`
    at start) points the schedule at memoryproject.tasks.lifecycle_scheduled."""
    return lifecycle_counts_check(services.lifecycle_run())


def lifecycle_counts_check(counts: dict) -> dict:
    """A lifecycle pass's counts, or LifecycleFailed when it failed on a session (after doing the
    others)."""
    if counts["errors"]:
        raise LifecycleFailed(
            f"the session lifecycle failed on {counts['errors']} error(s) (logged): {counts}"
        )
    return counts


def extraction_run(agent_id: int, session_id: int, trigger_source: str, attempt: int = 1) -> dict:
    """Enqueued by sessions_app.maintenance.extraction.extraction_enqueue when a session closes or goes
    quiet; run again by its retries (deferred, or `attempt` after an interrupted run)."""
    with llm_job_deadline():  # the model gives up before Q_TIMEOUT, and the heuristics run
        return extraction_perform(
            agent_id=agent_id, session_id=session_id, trigger_source=trigger_source, attempt=attempt
        )
