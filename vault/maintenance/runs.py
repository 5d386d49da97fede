"""The run engine: a maintenance run is a list of steps, each recording counts and changes on one
CompactionRun; a dry run is the same code rolled back."""

import logging
import time
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from memoryproject.resilience import guarded
from vault.models import CompactionRun, Project

logger = logging.getLogger(__name__)

ACTOR = "maintenance"
# Advisory lock namespace for per-agent memory jobs (extraction, consolidation): "mem" in ASCII.
AGENT_LOCK_CLASS = 0x6D656D
UNFINISHED = (
    "this run did not finish (its worker was stopped or timed out): listed is what it did before the "
    "step or agent it stopped in; the next run does the rest"
)


def run_change(run: CompactionRun, step: str, action: str, target: str, reason: str, **details) -> None:
    change = {"step": step, "action": action, "target": target, "reason": reason}
    if details:
        change["details"] = details
    run.changes.append(change)


def run_count(run: CompactionRun, key: str, n: int = 1) -> None:
    run.counts[key] = run.counts.get(key, 0) + n


def run_steps(
    *, kind: str, project: Project, trigger: str, dry_run: bool, now: datetime | None, steps, counters
) -> CompactionRun:
    now = now or timezone.now()
    run = CompactionRun(
        project=project,
        kind=kind,
        trigger=trigger,
        dry_run=dry_run,
        started_at=now,
        counts=dict.fromkeys(counters, 0),
        changes=[],
        notes=[],
    )
    started = time.monotonic()
    if dry_run:
        # The same code path as a real run, rolled back: the report is exact and nothing changes.
        with transaction.atomic():
            for step in steps:
                _run_step(run, step, project, now, savepoint=True)
            transaction.set_rollback(True)
    else:
        # Stored before each step with what the steps before it did, and marked unfinished until the
        # end: a worker killed or timed out midway (the steps' units of work are committed one by one)
        # leaves a record of what it changed, not one that says nothing changed.
        run.notes.append(UNFINISHED)
        for step in steps:
            run.duration_ms = round((time.monotonic() - started) * 1000, 2)
            run.save()
            _run_step(run, step, project, now, savepoint=False)
        run.notes.remove(UNFINISHED)
    run.duration_ms = round((time.monotonic() - started) * 1000, 2)
    if not dry_run:
        run.save()
    return run


def _run_step(run: CompactionRun, step, project: Project, now: datetime, *, savepoint: bool) -> None:
    """One step of a run; a failure is noted and the next step (and the next project) goes on.

    A real run's steps open their own transactions, one unit of work each (run_guarded), so that no
    step holds its locks until it ends nor loses all its work to one failure; a dry run's step gets a
    savepoint so that a failed statement leaves the enclosing transaction usable."""
    name = getattr(step, "__name__", str(step))

    def failed(exc: Exception) -> None:
        run.notes.append(f"step {name}: failed and stopped ({exc.__class__.__name__}: {exc})")
        run_count(run, "errors")

    guarded(f"maintenance step {name} of {project.slug}", lambda: step(run, project, now), failed=failed,
            savepoint=savepoint)  # fmt: skip


def run_guarded(run: CompactionRun, label: str, work) -> None:
    """Run one unit of work in its own (sub)transaction; a failure is noted and the run goes on."""

    def failed(exc: Exception) -> None:  # one corrupt session or group must not stop the whole run
        run.notes.append(f"{label}: failed and skipped ({exc.__class__.__name__}: {exc})")
        run_count(run, "errors")

    guarded(f"maintenance step on {label}", work, failed=failed)


def agent_lock_try(agent_id: int) -> bool:
    """Take the agent's job lock for the current transaction; False when another job holds it.

    A PostgreSQL advisory lock, so it holds across processes and machines and is released by commit,
    rollback or a dropped connection: a crashed worker can never leave an agent locked.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [AGENT_LOCK_CLASS, agent_id])
        return bool(cursor.fetchone()[0])
