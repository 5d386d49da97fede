"""Every answer under /api/ is JSON, including the ones Django or Ninja produce before a view runs; a NUL
in an API parameter is refused before a view runs; the pages' session, user and messages middlewares
are skipped under /api/."""

from django.contrib.auth import middleware as auth_middleware
from django.contrib.messages import middleware as messages_middleware
from django.contrib.sessions import middleware as sessions_middleware
from django.core.exceptions import DisallowedHost
from django.http import JsonResponse

API_PREFIX = "/api/"
API_NAMESPACE = "api"  # the NinjaAPI's urls_namespace (memoryproject/api.py)
NUL_MESSAGE = "must not contain NUL (\\u0000) characters"

_DETAILS = {
    400: "Bad request.",
    403: "Forbidden.",
    404: "Not found.",
    405: "Method not allowed.",
    413: "Request body too large.",
}


class ApiJsonErrorsMiddleware:
    """Turn a non-JSON error response under /api/ (Ninja's empty 405, Django's HTML 400/403/404/413) into
    `{"detail": ...}` with the same status and headers such as Allow."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json") or response.streaming:
            return response
        detail = _DETAILS.get(response.status_code, "Request failed.")
        if response.status_code == 400:
            try:
                request.get_host()
            except DisallowedHost as exc:  # Django's message names the host and ALLOWED_HOSTS
                detail = f"Bad request: {exc}"
        if response.status_code == 405:
            detail = f"Method {request.method} not allowed here; allowed: {response.get('Allow', 'none')}."
        replaced = JsonResponse({"detail": detail}, status=response.status_code)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                replaced[header] = response[header]
        return replaced


class ApiNulParametersMiddleware:
    """A NUL in a path or query parameter of an API operation is a 422 naming the parameter, before the
    view runs (and so before authentication or any query): PostgreSQL text cannot hold NUL, and each
    view would otherwise learn it from the database's DataError, a 400 that names nothing. Bodies are
    checked by their schemas and services."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if match is None or API_NAMESPACE not in match.namespaces:
            return None
        located = [["path", name] for name, value in view_kwargs.items() if "\x00" in str(value)]
        located += [
            ["query", name] for name, values in request.GET.lists() if any("\x00" in v for v in values)
        ]
        if not located:
            return None
        return JsonResponse(
            {
                "detail": "Invalid input: " + "; ".join(f"{name}: {NUL_MESSAGE}" for _, name in located),
                "errors": [{"loc": loc, "msg": NUL_MESSAGE, "type": "value_error"} for loc in located],
            },
            status=422,
        )


def _pages_only(middleware: type) -> type:
    """`middleware` run for the curator pages and skipped under /api/, whose requests carry a bearer
    token and never read the session, the logged-in user or flash messages (the three such middlewares
    made a sixth of Django's work around an API view: a session store, a lazy user and two message
    stores per request, none used)."""

    class PagesOnly(middleware):
        def __call__(self, request):
            if request.path.startswith(API_PREFIX):
                return self.get_response(request)
            return super().__call__(request)

    PagesOnly.__name__ = PagesOnly.__qualname__ = f"PagesOnly{middleware.__name__}"
    return PagesOnly


SessionMiddleware = _pages_only(sessions_middleware.SessionMiddleware)
AuthenticationMiddleware = _pages_only(auth_middleware.AuthenticationMiddleware)
MessageMiddleware = _pages_only(messages_middleware.MessageMiddleware)
