"""The curator's search page: entries, messages and files of every project the user curates."""

from urllib.parse import urlencode

from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import reverse

from memoryproject.errors import DomainError
from search.curation import search_for_user
from search.forms import SearchFilterForm
from search.selectors import KINDS, SearchFilters
from sessions_app import selectors as session_selectors
from vault import selectors as vault_selectors
from vault.render import highlight, snippet_markdown
from vault.views.access import UNPROCESSABLE, curator_required, is_htmx
from vault.views.files import file_page_url

SEARCH_LIMIT = 30


@curator_required
def search(request):
    form = SearchFilterForm(request.GET)
    query, results, error = "", [], ""
    if form.is_valid():
        data = form.cleaned_data
        query = data["q"].strip()
        if query:
            filters = SearchFilters(
                category=data["category"] or None,
                status=data["status"] or "active",
                kinds=(data["kind"],) if data["kind"] else KINDS,
                limit=SEARCH_LIMIT,
            )
            project_slug, agent_slug = data["agent"]
            try:
                rows = search_for_user(
                    request.user, q=query, filters=filters, agent_slug=agent_slug, project_slug=project_slug
                )
            except DomainError as exc:
                error = exc.detail
            else:
                branches = session_selectors.message_branch_names(
                    [(row["session_id"], row["id"]) for row in rows if row["kind"] == "message"]
                )
                results = [_result(row, query, branches) for row in rows]
    else:
        error = "; ".join(f"{field}: {' '.join(errs)}" for field, errs in form.errors.items())
    context = {
        "form": form,
        "query": query,
        "results": results,
        "error": error,
        "summary": f"{len(results)} result{pluralize(len(results))} for “{query}”."
        if query and not error
        else "",
        "agents": vault_selectors.agents_for_user(request.user).order_by("project__slug", "slug"),
    }
    template = "search/search.html#results" if is_htmx(request) else "search/search.html"
    return render(request, template, context, status=UNPROCESSABLE if error else 200)


def _result(row: dict, query: str, branches: dict[int, str]) -> dict:
    kind = row["kind"]
    if kind == "entry":
        url = reverse("vault-entry-detail", args=[row["id"]])
        title = f"Entry #{row['id']}"
    elif kind == "message":
        url = reverse("session-detail", args=[row["project"], row["agent"], row["session_id"]])
        if branches.get(row["id"]):  # a message on a branch other than the active one
            url += "?" + urlencode({"branch": branches[row["id"]]})
        url += f"#message-{row['id']}"
        title = f"{row['role']} message in session {row['session'] or row['session_id']}"
    else:
        url = file_page_url(row["project"], row["agent"], row["path"])
        title = row["path"]
    # Entries and files are markdown and read as on their own pages; messages are plain text there.
    snippet = highlight if kind == "message" else snippet_markdown
    return {**row, "url": url, "title": title, "highlighted": snippet(row["text"], query)}
