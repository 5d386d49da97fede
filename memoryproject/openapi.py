"""The OpenAPI document tells clients every answer an operation can give, errors included.

Ninja documents the success responses declared on each route; the errors come from the handlers in
memoryproject/api.py, the same for every operation, so they are added here once rather than on 54
decorators."""

from ninja import NinjaAPI

from vault.etags import IF_MATCH_PATTERN

ERROR_SCHEMA = {
    "title": "ErrorOut",
    "type": "object",
    "properties": {
        "detail": {"type": "string", "description": "What went wrong, for a person to read"},
        "errors": {
            "type": "array",
            "items": {"type": "object"},
            "description": "Field errors: loc (path to the field), msg, type",
        },
    },
    "required": ["detail"],
}

PRECONDITION_FAILED_SCHEMA = {
    "title": "PreconditionFailedOut",
    "type": "object",
    "properties": {
        "detail": {"type": "string", "description": "What went wrong, for a person to read"},
        "current": {
            "type": "object",
            "description": "The state the resource is in now",
            "properties": {
                "updated_at": {"type": ["string", "null"], "format": "date-time"},
                "etag": {"type": "string", "description": "Its ETag, as the ETag header gives it"},
            },
            "required": ["updated_at", "etag"],
        },
    },
    "required": ["detail", "current"],
}

_REF = {"$ref": "#/components/schemas/ErrorOut"}
_ETAG_HEADER = {
    "ETag": {
        "description": "The current state's entity tag (opaque, strong): send it back in If-Match to "
        "write only if nothing changed since",
        "schema": {"type": "string"},
    }
}


def etag_responses(*statuses: int, if_match: bool = False) -> dict:
    """openapi_extra for an operation answering an ETag header on `statuses`, and, `if_match`, honouring
    If-Match: 412 when the resource changed since the tag was read."""
    responses = {status: {"headers": _ETAG_HEADER} for status in statuses}
    if if_match:
        responses[412] = {
            "description": "If-Match names no ETag of the current state: nothing was changed; the body "
            "and the ETag header say what is current",
            "headers": _ETAG_HEADER,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/PreconditionFailedOut"}}
            },
        }
    return {"responses": responses}


_RETRY_AFTER = {
    "Retry-After": {"description": "Seconds to wait before retrying", "schema": {"type": "integer"}}
}

# status: (description, applies to operations with a body only, headers)
ERRORS = {
    400: ("Malformed JSON, or a value the database refused", False, None),
    401: ("Missing, unknown or revoked bearer token", False, None),
    403: ("The token's scope or agent does not allow this", False, None),
    404: ("No such agent, entry, session, message or file for this token", False, None),
    409: (
        "Conflicts with the current state (already exists, already superseded, not pending), or lost to a "
        "concurrent write and rolled back (deadlock: retry after Retry-After)",
        True,
        None,
    ),
    413: ("Request body over MEMORY_MAX_REQUEST_BYTES, or a text over its size limit", False, None),
    414: ("URL over the web server's request-line limit (answered by gunicorn, as HTML)", False, None),
    422: ("Invalid input (a field, a malformed If-Match header): the field errors say which", False, None),
    429: ("Over the token's rate limit (MEMORY_API_RATE_LIMIT)", False, _RETRY_AFTER),
    503: ("The database is unavailable; retry later", False, _RETRY_AFTER),
}


def _error_response(status: int, description: str, headers: dict | None) -> dict:
    if status == 414:  # refused before Django sees the request
        return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}
    response = {"description": description, "content": {"application/json": {"schema": _REF}}}
    if headers:
        response["headers"] = headers
    return response


# An agent in a URL is its slug (vault.models.SLUG_PATTERN, and not only dots: slug_check), written
# without a look-ahead so that every JSON Schema validator and test-data generator can use it.
AGENT_PATH_SCHEMA = {
    "title": "Agent",
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "pattern": "^[a-z0-9._-]*[a-z0-9_-][a-z0-9._-]*$",
    "description": "The agent's slug: 1-64 characters of a-z, 0-9, '.', '_' or '-', not only dots",
}


class DocumentedNinjaAPI(NinjaAPI):
    """NinjaAPI whose OpenAPI document lists the error responses of every operation, the rule of
    the agent slug in every path that names one, and the syntax of every If-Match header (vault.etags
    checks it, to refuse a malformed one with its own message)."""

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components["ErrorOut"] = ERROR_SCHEMA
        components["PreconditionFailedOut"] = PRECONDITION_FAILED_SCHEMA
        for operations in schema["paths"].values():
            for method, operation in operations.items():
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "path" and parameter.get("name") == "agent":
                        parameter["schema"] = dict(AGENT_PATH_SCHEMA)
                    if parameter.get("in") == "header" and parameter.get("name") == "If-Match":
                        parameter["schema"] = {"type": "string", "pattern": IF_MATCH_PATTERN}
                responses = operation.setdefault("responses", {})
                authenticated = bool(operation.get("security"))
                for status, (description, write_only, headers) in ERRORS.items():
                    if status in responses or str(status) in responses:
                        continue
                    if write_only and method == "get":
                        continue
                    if not authenticated and status != 503:
                        continue
                    responses[status] = _error_response(status, description, headers)
        return schema
