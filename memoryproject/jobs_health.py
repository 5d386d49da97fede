"""What /healthz says of the background jobs, so that a monitor polling it sees a job that fails every
time or a cluster that does not run (`serve --no-cluster` on every host and no `qcluster`): the
schedules no job worker has taken for OVERDUE_AFTER, and the tasks that failed in the last day. Counted
at most every CACHE_SECONDS by each process: load balancers probe /healthz every few seconds."""

import time
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from django_q.models import Schedule, Task

OVERDUE_AFTER = timedelta(minutes=5)  # the scheduler looks every 30 s; a busy cluster lags a little
CACHE_SECONDS = 30
OVERDUE_LISTED = 10

_cache: dict[str, tuple[float, dict]] = {}


def jobs_status_cache_clear() -> None:
    _cache.clear()


def jobs_status() -> dict:
    """{"overdue": schedules past their run by OVERDUE_AFTER, "overdue_schedules": the first names,
    "failed_last_day": tasks that failed (raised, or ran past Q_TIMEOUT) in the last 24 hours}."""
    key = connection.settings_dict["NAME"]
    counted_at, status = _cache.get(key, (float("-inf"), {}))
    if time.monotonic() - counted_at <= CACHE_SECONDS:
        return status
    now = timezone.now()
    overdue = (
        Schedule.objects.exclude(repeats=0).filter(next_run__lt=now - OVERDUE_AFTER).order_by("next_run")
    )
    status = {
        "overdue": overdue.count(),
        "overdue_schedules": list(overdue.values_list("name", flat=True)[:OVERDUE_LISTED]),
        "failed_last_day": Task.objects.filter(success=False, stopped__gte=now - timedelta(days=1)).count(),
    }
    _cache[key] = (time.monotonic(), status)
    return status
