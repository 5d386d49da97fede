"""A GET on an address that only performs an action (log out, restore a version, archive a session, run
compaction: POST only, 405 from require_POST or a class view's http_method_not_allowed) is a page in the
site's layout, not a blank 405: it says the address performs an action and links to the page the
action belongs to. The status and Allow are kept. /api/ keeps its JSON 405 (middleware.py)."""

from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from memoryproject.middleware import API_PREFIX

# An action's URL name → the page it is taken from, and which of the action's URL arguments that page's
# address takes. An action not listed links to the dashboard.
ACTION_PAGES = {
    "admin:logout": ("admin:index", ()),
    "maintenance-compaction-start": ("maintenance", ("project",)),
    "vault-project-context": ("vault-project-settings", ("project",)),
    "vault-token-create": ("vault-project-settings", ("project",)),
    "vault-token-revoke": ("vault-project-settings", ("project",)),
    "vault-entry-task-toggle": ("vault-entry-detail", ("entry_id",)),
    "vault-entry-restore": ("vault-entry-detail", ("entry_id",)),
    "vault-review-bulk": ("vault-review", ("project",)),
    "vault-review-act": ("vault-review", ("project",)),
    "vault-file-preview": ("vault-file", ("project", "agent")),
    "vault-file-settings": ("vault-file", ("project", "agent")),
    "session-archive": ("session-detail", ("project", "agent", "session_id")),
    "session-restore": ("session-detail", ("project", "agent", "session_id")),
}


def action_page_url(request) -> str | None:
    """The address of the page the request's action belongs to; None when not known."""
    match = request.resolver_match
    page = ACTION_PAGES.get(match.view_name) if match else None
    if page:
        name, arguments = page
        try:
            return reverse(name, kwargs={key: match.kwargs[key] for key in arguments})
        except (KeyError, NoReverseMatch):
            pass
    return None


class ActionPageMiddleware:
    """Give a GET (or HEAD) answered 405 with no body outside /api/ the action page."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code != 405
            or request.method not in ("GET", "HEAD")
            or request.path.startswith(API_PREFIX)
            or response.streaming
            or response.content
        ):
            return response
        back_url = action_page_url(request)
        context = {"back_url": back_url or reverse("dashboard"), "back_known": back_url is not None}
        page = render(request, "405.html", context, status=405)
        if response.has_header("Allow"):
            page["Allow"] = response["Allow"]
        return page
