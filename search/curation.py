"""Search for the curator pages: the search service over every project a user curates."""

from search.selectors import SearchScope, search_run
from vault import selectors as vault_selectors
from vault.models import Agent


def search_for_user(
    user, *, q: str, filters, agent_slug: str | None = None, project_slug: str | None = None
) -> list[dict]:
    """The search service over every project the user curates (one scope per project), merged best
    first and cut to filters.limit; each row gains `project` (its slug).

    `project_slug` keeps one of those projects; `agent_slug` the agent of that slug (in every project
    kept: without `project_slug`, agents of one slug in several projects are searched together)."""
    projects = vault_selectors.projects_for_user(user).order_by("slug")
    if project_slug:
        projects = projects.filter(slug=project_slug)
    rows: list[dict] = []
    for project in projects:
        agent_ids = None
        if agent_slug:
            agent_ids = list(
                Agent.objects.filter(project=project, slug=agent_slug).values_list("pk", flat=True)
            )
            if not agent_ids:
                continue
        outcome = search_run(q=q, scope=SearchScope(project.pk, agent_ids), filters=filters)
        for row in outcome.results:
            row["project"] = project.slug
        rows += outcome.results
    rows.sort(key=lambda row: (-row["score"], row["kind"], -row["id"]))
    return rows[: filters.limit]
