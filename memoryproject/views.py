"""The pages that compose every app: the dashboard (projects, agents, growth of entries and sessions)
and the maintenance page (runs of compaction and retention, schedules, deletion audits)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memoryproject.llm import llm_deadline
from memoryproject.maintenance import compaction_run
from sessions_app import selectors as session_selectors
from vault import selectors, stats
from vault.models import Category, RunTrigger
from vault.render import bar_chart
from vault.views.access import curator_required, is_htmx

DASHBOARD_GROWTH_DAYS = 14


@curator_required
def dashboard(request):
    projects = selectors.projects_for_user(request.user)
    agents = stats.dashboard_agents(request.user)
    pending = selectors.review_counts_for_user(request.user)
    last_runs = selectors.last_compaction_runs_for_user(request.user)
    by_project = {
        project.pk: {
            "project": project,
            "agents": [],
            "pending": pending.get(project.pk, 0),
            "last_run": last_runs.get(project.pk),
            "stats": session_selectors.project_stats(project.pk, days=DASHBOARD_GROWTH_DAYS),
        }
        for project in projects
    }
    for row in agents:
        by_project[row["agent"].project_id]["agents"].append(row)
    for group in by_project.values():
        growth = group["stats"]["growth"]
        group["growth_chart"] = bar_chart(
            [(day["date"], day["entries"] + day["messages"]) for day in growth], height=60
        )
        group["growth_sessions"] = sum(day["sessions"] for day in growth)
        group["growth_entries"] = sum(day["entries"] for day in growth)
    return render(
        request,
        "memoryproject/dashboard.html",
        {
            "projects": list(by_project.values()),
            "categories": Category.choices,
            "recent": selectors.entries_recent_for_user(request.user, limit=10),
            "chart": bar_chart(stats.entries_created_per_day(request.user, days=30)),
        },
    )


@curator_required
def maintenance(request, project):
    project = selectors.project_get_for_user(request.user, project)
    return render(
        request,
        "memoryproject/maintenance.html",
        {
            "project": project,
            "runs": selectors.compaction_runs_for_project(project),
            "schedules": selectors.maintenance_schedules(),
            "audits": selectors.deletion_audits_for_project(project),
        },
    )


@curator_required
def maintenance_run(request, project, run_id):
    project = selectors.project_get_for_user(request.user, project)
    run = selectors.compaction_run_get(project, run_id)
    return render(request, "memoryproject/maintenance_run.html", {"project": project, "run": run})


@curator_required
@require_POST
def compaction_start(request, project):
    project = selectors.project_get_for_user(request.user, project)
    dry_run = request.POST.get("dry_run") == "1"
    with llm_deadline():  # the page waits for the model at most LLM_REQUEST_SECONDS
        run = compaction_run(project=project, dry_run=dry_run, trigger=RunTrigger.ADMIN)
    if dry_run:
        context = {"project": project, "run": run, "preview": True}
        template = (
            "memoryproject/maintenance_run.html#run-record"
            if is_htmx(request)
            else "memoryproject/maintenance_run.html"
        )
        return render(request, template, context)
    messages.success(request, f"Compaction run {run.pk} finished: {len(run.changes)} change(s).")
    return redirect("maintenance-run", project.slug, run.pk)
