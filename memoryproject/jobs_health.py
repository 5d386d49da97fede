"""What /healthz says of the background jobs, so that a monitor polling it sees a job that fails every
time or a cluster that does not run (`serve --no-cluster` on every host and no `qcluster`): the
schedules no job worker has taken for OVERDUE_AFTER, the tasks that failed in the last day, and the
maintenance runs of the last day that failed somewhere (a compaction or retention step, a consolidated
agent: the run records the failure and goes on, so its task succeeds), and the agents whose scheduled
consolidation failed the last times it ran (raised, its model's answer not used, or its worker killed
or timed out on it: the run goes on with the others, or the next run does). Counted
at most every CACHE_SECONDS by each process: load balancers probe /healthz every few seconds."""

import time
from datetime import timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone
from django_q.models import Schedule, Task

from vault.models import AgentMaintenance, CompactionRun
from vault.text import text_clip

OVERDUE_AFTER = timedelta(minutes=5)  # the scheduler looks every 30 s; a busy cluster lags a little
CACHE_SECONDS = 30
OVERDUE_LISTED = 10
RUNS_FAILED_LISTED = 10
AGENTS_FAILING_LISTED = 10
FAILING_WITHIN = timedelta(days=2)  # the nightly consolidation's last failure, a night missed included

_cache: dict[str, tuple[float, dict]] = {}


def jobs_status_cache_clear() -> None:
    _cache.clear()


def jobs_status() -> dict:
    """{"overdue": schedules past their run by OVERDUE_AFTER, "overdue_schedules": the first names,
    "failed_last_day": tasks that failed (raised, or ran past Q_TIMEOUT) in the last 24 hours,
    "runs_failed_last_day": maintenance runs of the last 24 hours with a failed step or agent,
    "runs_failed": the newest of them, "<kind> of <project>", once each, "agents_failing": agents whose
    scheduled consolidation failed the last time(s) in a row, the last within FAILING_WITHIN, "agents_failing_listed": the ones failing
    most often, "<agent> of <project>: ... N time(s) in a row: <the last reason>"}."""
    key = connection.settings_dict["NAME"]
    counted_at, status = _cache.get(key, (float("-inf"), {}))
    if time.monotonic() - counted_at <= CACHE_SECONDS:
        return status
    now = timezone.now()
    overdue = (
        Schedule.objects.exclude(repeats=0).filter(next_run__lt=now - OVERDUE_AFTER).order_by("next_run")
    )
    runs_failed = (
        CompactionRun.objects.filter(dry_run=False, started_at__gte=now - timedelta(days=1))
        .filter(Q(counts__errors__gt=0) | Q(counts__failed__gt=0))
        .order_by("-started_at", "-pk")
    )
    named = runs_failed.values_list("kind", "project__slug")[: RUNS_FAILED_LISTED * 10]
    status = {
        "overdue": overdue.count(),
        "overdue_schedules": list(overdue.values_list("name", flat=True)[:OVERDUE_LISTED]),
        "failed_last_day": Task.objects.filter(success=False, stopped__gte=now - timedelta(days=1)).count(),
        "runs_failed_last_day": runs_failed.count(),
        "runs_failed": list(dict.fromkeys(f"{kind} of {slug}" for kind, slug in named))[:RUNS_FAILED_LISTED],
    }
    # Failing lately: an agent with no daily notes since (not consolidated any more) is not listed forever.
    failing = AgentMaintenance.objects.filter(
        consolidation_failures__gt=0, consolidation_ended_at__gte=now - FAILING_WITHIN
    )
    status["agents_failing"] = failing.count()
    status["agents_failing_listed"] = [
        f"{slug} of {project}: consolidation failed {count} time(s) in a row: {text_clip(reason, 300)}"
        for slug, project, count, reason in failing.order_by(
            "-consolidation_failures", "agent_id"
        ).values_list(
            "agent__slug", "agent__project__slug", "consolidation_failures", "consolidation_failure"
        )[:AGENTS_FAILING_LISTED]
    ]
    _cache[key] = (time.monotonic(), status)
    return status
