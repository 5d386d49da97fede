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
_CONFLICT_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying; sent when the request lost to a concurrent "
        "transaction (deadlock, serialization failure, lock timeout), not on a conflict with the state",
        "schema": {"type": "integer"},
    }
}
_WWW_AUTHENTICATE = {
    "WWW-Authenticate": {
        "description": "The scheme to authenticate with: Bearer",
        "schema": {"type": "string"},
    }
}

# Which operations can answer an error: every one (the database can be unavailable to any), every one
# that authenticates (a token is read from the database: every status its checks and the handlers of
# memoryproject/api.py give), or only those that change state (a request with a body).
EVERY, AUTHENTICATED, WRITES = "every", "authenticated", "writes"

# status: [(which operations, description, headers)]. A status listed twice is one response on an
# operation both apply to, its descriptions joined and its headers merged.
ERRORS = {
    400: [(AUTHENTICATED, "Malformed JSON, or a value the database refused", None)],
    401: [(AUTHENTICATED, "Missing, unknown or revoked bearer token", _WWW_AUTHENTICATE)],
    403: [(AUTHENTICATED, "The token's scope or agent does not allow this", None)],
    404: [(AUTHENTICATED, "No such agent, entry, session, message or file for this token", None)],
    409: [
        (
            WRITES,
            "Conflicts with the current state (already exists, already superseded, not pending)",
            None,
        ),
        (
            # memoryproject/database_unavailable.py: any request that reads the database (the token, at
            # least) can lose to a concurrent write's lock, a GET included.
            AUTHENTICATED,
            "Lost to a concurrent transaction and rolled back (deadlock, serialization failure, lock "
            "timeout): retry after Retry-After",
            _CONFLICT_RETRY_AFTER,
        ),
    ],
    413: [(AUTHENTICATED, "Request body over MEMORY_MAX_REQUEST_BYTES, or a text over its size limit", None)],
    414: [
        (AUTHENTICATED, "URL over the web server's request-line limit (answered by gunicorn, as HTML)", None)
    ],
    422: [
        (
            AUTHENTICATED,
            "Invalid input (a field, a malformed If-Match header): the field errors say which",
            None,
        )
    ],
    429: [(AUTHENTICATED, "Over the token's rate limit (MEMORY_API_RATE_LIMIT)", _RETRY_AFTER)],
    503: [(EVERY, "The database is unavailable; retry later", _RETRY_AFTER)],
}


def _applies(which: str, *, method: str, authenticated: bool) -> bool:
    if which == EVERY:
        return True
    if which == WRITES and method in ("get", "head"):
        return False
    return authenticated


def _error_response(status: int, description: str, headers: dict | None) -> dict:
    if status == 414:  # refused before Django sees the request
        return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}
    response = {"description": description, "content": {"application/json": {"schema": _REF}}}
    if headers:
        response["headers"] = dict(headers)
    return response


def _response_merge(declared: dict | None, description: str, headers: dict | None) -> dict:
    """What an operation declared for a status (its own 409, healthz's 503), with what every operation
    of its kind can also mean by it: the descriptions joined, the headers added, its content kept."""
    merged = dict(declared)
    if description not in merged.get("description", ""):
        merged["description"] = "; or ".join(filter(None, [merged.get("description"), description]))
    if headers:
        merged["headers"] = {**headers, **merged.get("headers", {})}
    return merged


def error_responses(responses: dict, *, method: str, authenticated: bool) -> dict:
    """`responses` (an operation's, keyed by status as int or str) with every error the operation can
    answer (ERRORS) added to or merged into them, keyed by str."""
    result = {str(status): response for status, response in responses.items()}
    for status, meanings in ERRORS.items():
        for which, description, headers in meanings:
            if not _applies(which, method=method, authenticated=authenticated):
                continue
            declared = result.get(str(status))
            if declared is None:
                result[str(status)] = _error_response(status, description, headers)
            else:
                result[str(status)] = _response_merge(declared, description, headers)
    return result


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
                        # `*`: the write goes ahead on whatever the resource is now (a generator's
                        # example that reaches the operation's logic, unlike a guessed tag: 412).
                        parameter["schema"] = {
                            "type": "string",
                            "pattern": IF_MATCH_PATTERN,
                            "examples": ["*"],
                        }
                operation["responses"] = error_responses(
                    operation.get("responses", {}),
                    method=method,
                    authenticated=bool(operation.get("security")),
                )
        return schema
