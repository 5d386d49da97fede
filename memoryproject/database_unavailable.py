"""503 with Retry-After, never 500, while the database cannot be reached.

`serve` restarts the embedded PostgreSQL when it dies (a few seconds); a managed server fails over or
comes back by itself. Until then every request that needs the database fails with a connection error
(django.db's OperationalError or InterfaceError): the client is told to retry rather than shown a
server fault. The API maps them in memoryproject/api.py; the middleware covers the curator pages and
the admin.
"""

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
DETAIL = f"The database is unavailable; retry in {RETRY_AFTER_SECONDS} seconds."
CONNECTION_ERRORS = (OperationalError, InterfaceError)


def is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, CONNECTION_ERRORS)


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
        if not is_connection_error(exception):
            return None
        logger.warning("database unavailable for %s %s: %s", request.method, request.path, exception)
        return unavailable_response(request)
