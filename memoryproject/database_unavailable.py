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

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
DETAIL = f"The database is unavailable; retry in {RETRY_AFTER_SECONDS} seconds."
CONNECTION_ERRORS = (OperationalError, InterfaceError)


def is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, CONNECTION_ERRORS)


def unavailable_response(request) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": DETAIL}, status=503)
    else:
        response = HttpResponse(DETAIL, status=503, content_type="text/plain; charset=utf-8")
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
