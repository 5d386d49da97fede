"""503 with Retry-After, never 500, while the database cannot be reached.

`serve` restarts the embedded PostgreSQL when it dies (a few seconds); a managed server fails over or
comes back by itself. Until then every request that needs the database fails with a connection error
(django.db's OperationalError or InterfaceError): the client is told to retry rather than shown a
server fault. The API maps them in memoryproject/api.py; the middleware covers the curator pages and
the admin.

Not every OperationalError is the database going away: a deadlock, a serialization failure or a lock
timeout is this request's transaction losing to a concurrent write. PostgreSQL rolled it back; the
database is fine. Those answer 409 with a short Retry-After and a detail saying so (`write_conflict`).
"""

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
DETAIL = f"The database is unavailable; retry in {RETRY_AFTER_SECONDS} seconds."
CONNECTION_ERRORS = (OperationalError, InterfaceError)

# SQLSTATEs of a transaction that lost to a concurrent one; psycopg raises them as OperationalError.
WRITE_CONFLICTS = {"40001": "serialization failure", "40P01": "deadlock", "55P03": "lock timeout"}
CONFLICT_RETRY_AFTER_SECONDS = 1


def write_conflict(exc: BaseException) -> str | None:
    """What kind of conflict with a concurrent transaction `exc` is (deadlock...), None for any other error."""
    if not isinstance(exc, OperationalError):
        return None
    cause = exc.__cause__
    return WRITE_CONFLICTS.get(getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None) or "")


def conflict_detail(kind: str) -> str:
    return (
        f"A concurrent write conflicted with this request ({kind}) and the database rolled its "
        f"transaction back. Retry it (in {CONFLICT_RETRY_AFTER_SECONDS} second)."
    )


def is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, CONNECTION_ERRORS) and write_conflict(exc) is None


def _unavailable_page(request) -> str:
    """The curators' page in the site's layout, rendered without the request (so without the context
    processors, which would read the session and the user): nothing in it queries. Plain text if even
    that fails, rather than a 500."""
    retry_url = request.get_full_path() if request.method == "GET" else None
    try:
        return render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS, "retry_url": retry_url})
    except Exception:
        logger.exception("the database-unavailable page could not be rendered")
        return DETAIL


def conflict_response(request, kind: str) -> HttpResponse:
    """409: the request's transaction lost to a concurrent write and was rolled back; retry it."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": conflict_detail(kind)}, status=409)
    else:
        response = HttpResponse(conflict_detail(kind), status=409, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(CONFLICT_RETRY_AFTER_SECONDS)
    return response


def unavailable_response(request) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": DETAIL}, status=503)
    else:
        response = HttpResponse(_unavailable_page(request), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        kind = write_conflict(exception)
        if kind is not None:
            logger.warning("write conflict (%s) in %s %s: %s", kind, request.method, request.path, exception)
            return conflict_response(request, kind)
        if not is_connection_error(exception):
            return None
        logger.warning("database unavailable for %s %s: %s", request.method, request.path, exception)
        return unavailable_response(request)
