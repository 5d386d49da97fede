"""How much memory there is: counts and sizes per agent and project, for the dashboard, /stats and /healthz."""

from datetime import datetime, time, timedelta

from django.conf import settings
from django.db.models import Count, Func, IntegerField, Min, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from vault.models import (
    Agent,
    Category,
    EntryStatus,
    QueuedNoteAppend,
    VaultEntry,
    WorkspaceFile,
)
from vault.selectors import agents_for_user, entries_for_user


class OctetLength(Func):
    """PostgreSQL's octet_length: the bytes a text takes."""

    function = "octet_length"
    output_field = IntegerField()


def dashboard_agents(user) -> list[dict]:
    """Per visible agent: active entries per category and storage used (entry content + live files)."""
    entry_bytes = (
        VaultEntry.objects.filter(agent=OuterRef("pk"))
        .values("agent")
        .annotate(total=Sum(Func("content", function="octet_length", output_field=IntegerField())))
        .values("total")
    )
    file_bytes = (
        WorkspaceFile.objects.filter(agent=OuterRef("pk"), deleted_at__isnull=True)
        .values("agent")
        .annotate(total=Sum("size"))
        .values("total")
    )
    agents = agents_for_user(user).annotate(
        entry_bytes=Coalesce(Subquery(entry_bytes, output_field=IntegerField()), 0),
        file_bytes=Coalesce(Subquery(file_bytes, output_field=IntegerField()), 0),
        **{
            f"n_{category}": Count(
                "entries", filter=Q(entries__category=category, entries__status=EntryStatus.ACTIVE)
            )
            for category in Category.values
        },
    )
    limit = settings.MEMORY_AGENT_STORAGE_LIMIT_BYTES
    result = []
    for agent in agents.order_by("project__slug", "slug"):
        used = agent.entry_bytes + agent.file_bytes
        result.append(
            {
                "agent": agent,
                "counts": {category: getattr(agent, f"n_{category}") for category in Category.values},
                "total": sum(getattr(agent, f"n_{category}") for category in Category.values),
                "storage_bytes": used,
                "storage_limit": limit,
                "storage_percent": min(100.0, round(100.0 * used / limit, 1)),
            }
        )
    return result


def entries_created_per_day(user, *, days: int = 30) -> list[tuple]:
    """(date, count) for each of the last `days` days (today included, in TIME_ZONE), zeros kept."""
    today = timezone.localdate()
    first = today - timedelta(days=days - 1)
    start = timezone.make_aware(datetime.combine(first, time.min))
    rows = (
        entries_for_user(user)
        .filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at", tzinfo=timezone.get_current_timezone()))
        .values("day")
        .annotate(n=Count("id"))
    )
    by_day = {row["day"]: row["n"] for row in rows}
    return [(first + timedelta(days=i), by_day.get(first + timedelta(days=i), 0)) for i in range(days)]


def daily_note_queue_stats(project_id: int) -> dict:
    """The project's daily-note exchanges waiting for their note's next write (QueuedNoteAppend): how
    many appends, and the age in seconds of the oldest (None when none waits)."""
    row = QueuedNoteAppend.objects.filter(agent__project_id=project_id).aggregate(
        appends=Count("id"), oldest=Min("created_at")
    )
    oldest = row["oldest"]
    return {
        "appends": row["appends"],
        "oldest_seconds": round((timezone.now() - oldest).total_seconds(), 1) if oldest else None,
    }


def project_memory_stats(project_id: int, *, since: datetime) -> dict:
    """The vault's share of a project's statistics: agents, entries (by category, status, and created per
    local day since `since`), live files, and the bytes entries and files take."""
    entries = VaultEntry.objects.filter(project_id=project_id)
    files = WorkspaceFile.objects.filter(agent__project_id=project_id, deleted_at__isnull=True)
    per_day = (
        entries.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("id"))
        .order_by("day")
    )
    return {
        "agents": Agent.objects.filter(project_id=project_id).count(),
        "entries": entries.count(),
        "entries_by_category": {
            r["category"]: r["n"]
            for r in entries.values("category").annotate(n=Count("id")).order_by("category")
        },
        "entries_by_status": {
            r["status"]: r["n"] for r in entries.values("status").annotate(n=Count("id")).order_by("status")
        },
        "entries_per_day": {row["day"]: row["n"] for row in per_day},
        "files": files.count(),
        "entries_bytes": entries.aggregate(n=Sum(OctetLength("content")))["n"] or 0,
        "files_bytes": files.aggregate(n=Sum(OctetLength("content")))["n"] or 0,
    }
