"""The one NinjaAPI: bearer auth, error handlers mapping domain errors to HTTP, and the routers."""

import logging

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.db import DataError, connection
from django.http import Http404, HttpRequest
from ninja import Field, Query, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer

from memoryproject.database_unavailable import (
    CONNECTION_ERRORS,
    conflict_response,
    unavailable_response,
    write_conflict,
)
from memoryproject.errors import DomainError, PermissionDenied, PreconditionFailed
from memoryproject.jobs_health import jobs_status
from memoryproject.maintenance_api import router as maintenance_router
from memoryproject.openapi import DocumentedNinjaAPI
from memoryproject.security import RateLimited, api_rate_check
from search.api import router as search_router
from search.schemas import EmbeddingsStatusOut
from search.semantic import semantic_status
from sessions_app import selectors as sessions_selectors
from sessions_app.api import router as sessions_router
from sessions_app.schemas import ProjectStatsOut
from vault import stats as vault_stats
from vault.api import router as vault_router
from vault.authentication import token_authenticate
from vault.files_api import router as files_router
from vault.models import TokenScope
from vault.review_api import router as review_router

logger = logging.getLogger(__name__)


class BearerAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        # The agent the request names (a path's {agent}, or search's ?agent=) is read with the token.
        match = request.resolver_match
        agent = (match.kwargs.get("agent") if match else None) or request.GET.get("agent")
        principal = token_authenticate(token, agent_slug=agent if isinstance(agent, str) else None)
        if principal is not None:
            api_rate_check(principal)
        return principal


api = DocumentedNinjaAPI(
    title="Agent memory server",
    version="1",
    description=(
        "Long-term and short-term memory for AI agents. Authenticate with `Authorization: Bearer <token>`.\n\n"
        "The same memory is served over the Model Context Protocol at `/mcp` (streamable HTTP, same bearer "
        "tokens; a project-wide token names the agent with `?agent=NAME` or per call) and on stdio by "
        "`manage.py mcp --agent NAME`: tools memory_context, memory_search, memory_save, memory_update, "
        "memory_get, memory_list, memory_forget, session_log, session_checkpoint, session_recover, "
        "session_close, workspace_read, workspace_write, workspace_edit and memory (see the README's MCP "
        "section)."
    ),
    auth=BearerAuth(),
    urls_namespace="api",
)


def _error(request, status: int, detail: str, errors: list | None = None):
    body = {"detail": detail}
    if errors:
        body["errors"] = errors
    return api.create_response(request, body, status=status)


@api.exception_handler(DomainError)
def on_domain_error(request, exc: DomainError):
    return _error(request, exc.status_code, exc.detail, exc.errors)


@api.exception_handler(PreconditionFailed)
def on_precondition_failed(request, exc: PreconditionFailed):
    # What the row is now, in the body and as the ETag header, for the client to read it again.
    body = {"detail": exc.detail, "current": {"updated_at": exc.updated_at, "etag": exc.etag}}
    response = api.create_response(request, body, status=412)
    response["ETag"] = exc.etag
    return response


@api.exception_handler(RateLimited)
def on_rate_limited(request, exc: RateLimited):
    response = _error(request, 429, exc.detail)
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(AuthenticationError)
def on_authentication_error(request, exc):
    response = _error(
        request, 401, "Missing, unknown or revoked bearer token. Send 'Authorization: Bearer <token>'."
    )
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(ValidationError)
def on_validation_error(request, exc: ValidationError):
    errors = [
        {
            "loc": [str(part) for part in error.get("loc", [])],
            "msg": str(error.get("msg", "")),
            "type": str(error.get("type", "")),
        }
        for error in exc.errors
    ]
    if any(
        error["msg"] == "Cannot parse request body" or error["type"] == "json_invalid" for error in errors
    ):
        return _error(request, 400, "Malformed JSON: the request body cannot be parsed.", errors)
    described = "; ".join(
        f"{'.'.join(part for part in e['loc'][1:] if part != 'payload') or 'body'}: {e['msg']}"
        for e in errors
    )
    return _error(request, 422, f"Invalid input: {described}", errors)


@api.exception_handler(ObjectDoesNotExist)
def on_row_gone(request, exc):
    # A row deleted by a concurrent request between a view's check and its write: gone, not a fault.
    logger.info("row not found in %s %s: %s", request.method, request.path, exc)
    return _error(request, 404, "Not found (it may have just been deleted).")


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return _error(request, 404, str(exc) or "Not found.")


@api.exception_handler(HttpError)
def on_http_error(request, exc: HttpError):
    if exc.status_code == 400 and "Cannot parse request body" in str(exc):
        return _error(request, 400, "Malformed JSON: the request body cannot be parsed.")
    return _error(request, exc.status_code, str(exc))


@api.exception_handler(DataError)
def on_data_error(request, exc: DataError):
    # A value PostgreSQL refused (out of range, bad encoding) is bad input, not a server fault.
    logger.info("database rejected a value: %s", exc)
    return _error(request, 400, f"A value was rejected by the database: {str(exc).splitlines()[0]}")


def on_database_unavailable(request, exc):
    kind = write_conflict(exc)
    if kind is not None:  # lost to a concurrent write, rolled back: retry, the database is fine
        logger.warning("write conflict (%s) in %s %s: %s", kind, request.method, request.path, exc)
        return conflict_response(request, kind)
    logger.warning("database unavailable for %s %s: %s", request.method, request.path, exc)
    return unavailable_response(request)


for _connection_error in CONNECTION_ERRORS:
    api.add_exception_handler(_connection_error, on_database_unavailable)


@api.exception_handler(RequestDataTooBig)
def on_request_too_big(request, exc):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return _error(
        request, 413, f"Request body too large: the limit is {limit} bytes (MEMORY_MAX_REQUEST_BYTES)."
    )


@api.exception_handler(UnicodeEncodeError)
def on_unencodable_text(request, exc: UnicodeEncodeError):
    # JSON may carry lone surrogates ("\ud800"); no text column can store them, wherever they are sent.
    if "surrogate" not in str(exc):
        return on_unexpected_error(request, exc)
    return _error(request, 422, "Invalid input: text contains invalid Unicode (lone surrogates).")


@api.exception_handler(Exception)
def on_unexpected_error(request, exc: Exception):
    logger.exception("unhandled error in %s %s", request.method, request.path)
    return _error(request, 500, "Internal server error; it has been logged.")


def health_status() -> tuple[int, dict]:
    """200 and "ok" when the database answers; 503 otherwise (reported, never raised). Also says
    whether semantic search runs, how many items wait to be embedded, and how the background jobs fare
    (jobs_health: schedules no worker has taken, tasks failed in the last day)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any database failure means "not healthy"
        logger.warning("health check failed: %s", exc)
        return 503, {"status": "error", "database": "unavailable"}
    return 200, {"status": "ok", "database": "ok", "embeddings": semantic_status(), "jobs": jobs_status()}


class DailyNoteQueueOut(Schema):
    appends: int = Field(description="appends whose exchanges wait for their daily note's next write")
    oldest_seconds: float | None = Field(description="age of the oldest, in seconds (null: none waits)")


class ProjectStatsWithEmbeddingsOut(ProjectStatsOut):
    embeddings: EmbeddingsStatusOut
    daily_note_queue: DailyNoteQueueOut


@api.get(
    "/stats", response=ProjectStatsWithEmbeddingsOut, tags=["sessions"], summary="Statistics of the project"
)
def project_stats(request, days: int = Query(14, ge=1, le=366)):
    # Here rather than in sessions_app, which may not import search.
    request.auth.require(TokenScope.READ)
    if request.auth.is_agent_bound:
        raise PermissionDenied("Project statistics need an admin or project-wide token.")
    stats = sessions_selectors.project_stats(request.auth.project_id, days=days)
    return {
        **stats,
        "embeddings": semantic_status(project_id=request.auth.project_id),
        "daily_note_queue": vault_stats.daily_note_queue_stats(request.auth.project_id),
    }


_HEALTH = {
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "status": {"type": "string"},
                    "database": {"type": "string"},
                    "embeddings": {"type": "object"},
                    "jobs": {"type": "object"},
                },
                "required": ["status", "database"],
            }
        }
    }
}


@api.get(
    "/healthz",
    auth=None,
    tags=["health"],
    summary="Liveness and database check",
    openapi_extra={
        "responses": {
            200: {"description": "The database answers", **_HEALTH},
            503: {"description": "The database does not answer", **_HEALTH},
        }
    },
)
def healthz(request):
    status, body = health_status()
    response = api.create_response(request, body, status=status)
    if status == 503:
        response["Retry-After"] = "5"
    return response


# Load balancers probe with HEAD. An operation of its own, so that the OpenAPI document gives it an
# operationId of its own; the web server (gunicorn, uvicorn) sends the GET's headers without its body.
@api.api_operation(
    ["HEAD"],
    "/healthz",
    auth=None,
    tags=["health"],
    summary="Liveness and database check, headers only",
    operation_id="healthz_head",
    openapi_extra={
        "responses": {
            200: {"description": "The database answers"},
            503: {"description": "The database does not answer"},
        }
    },
)
def healthz_head(request):
    return healthz(request)


api.add_router("", vault_router)
api.add_router("", review_router)
api.add_router("", sessions_router)
api.add_router("", search_router)
api.add_router("", files_router)

api.add_router("", maintenance_router)
