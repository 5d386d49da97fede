"""Streamable HTTP at /mcp: the SDK's Starlette app (stateless, JSON responses) behind the bearer check.

`BearerGate` authenticates `Authorization: Bearer <token>` with the REST API's token_authenticate and
answers 401 as the REST API does; it counts the request against the token's rate limit on the REST
API's counter (429 with Retry-After and a JSON-RPC error when over it); the Caller it resolves (with
`?agent=` from the URL) rides in the ASGI scope's state to the tools (memoryproject/mcp/caller.py).
"""

import json
import logging
from urllib.parse import parse_qs

from django.conf import settings
from django.db import close_old_connections
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse

from memoryproject.database_unavailable import (
    CONFLICT_RETRY_AFTER_SECONDS,
    CONNECTION_ERRORS,
    DETAIL,
    RETRY_AFTER_SECONDS,
    conflict_detail,
    write_conflict,
)
from memoryproject.mcp.caller import Caller, in_database_thread
from memoryproject.mcp.protocol import early_answer, rate_limited_answer
from memoryproject.mcp.server import mcp_server
from memoryproject.security import RateLimited, api_rate_check
from vault.authentication import token_authenticate

MCP_PATH = "/mcp"

logger = logging.getLogger(__name__)


def _admit(secret: str):
    """The token's principal (None when unknown) and, when the request puts it over MEMORY_API_RATE_LIMIT,
    the RateLimited refusal: the REST API's check, on its counter."""
    close_old_connections()
    try:
        principal = token_authenticate(secret)
        if principal is not None:
            try:
                api_rate_check(principal)
            except RateLimited as exc:
                return principal, exc
        return principal, None
    finally:
        close_old_connections()


def _too_large_detail() -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return f"Request body too large: the limit is {limit} bytes (MEMORY_MAX_REQUEST_BYTES)."


_KEPT_HEADERS = (b"allow", b"retry-after", b"www-authenticate")


def _json_errors(send):
    """The ASGI `send` of a request, with the SDK's plain-text refusals (a wrong Content-Type, a body
    over the limit, a bad Host, an unknown path) turned into `{"detail": ...}` as the REST API answers."""
    held = {}

    async def json_send(message):
        if message["type"] == "http.response.start":
            content_type = dict(message.get("headers") or []).get(b"content-type", b"")
            if message["status"] >= 400 and not content_type.startswith(b"application/json"):
                held.update(start=message, body=b"")
                return None
            return await send(message)
        if message["type"] != "http.response.body" or "start" not in held:
            return await send(message)
        held["body"] += message.get("body", b"")
        if message.get("more_body"):
            return None
        start = held.pop("start")
        status = start["status"]
        text = held["body"].decode("utf-8", "replace").strip()
        detail = _too_large_detail() if status == 413 else (text or "Request failed.")
        body = json.dumps({"detail": detail}).encode()
        headers = [(k, v) for k, v in start.get("headers") or [] if k.lower() in _KEPT_HEADERS]
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        return await send({"type": "http.response.body", "body": body})

    return json_send


async def _body_read(receive) -> bytes | None:
    """The whole request body (reading stops one chunk past the limit), or None when the client
    disconnected first: the SDK would read on, meet ClientDisconnect and log it as a server error."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not message.get("more_body") or len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return bytes(body)


def _replay(body: bytes, receive):
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _rate_limited(exc: RateLimited, headers, scope, receive, send):
    """429 with Retry-After, as the REST API answers, and the JSON-RPC error under the request's id."""
    body = None
    declared = headers.get(b"content-length", b"")
    if scope["method"] == "POST" and not (
        declared.isdigit() and int(declared) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    ):
        body = await _body_read(receive)
        if body is None:  # the client left
            return None
    answer = rate_limited_answer(body, exc.detail, exc.retry_after)
    response = JSONResponse(answer, status_code=429, headers={"Retry-After": str(exc.retry_after)})
    return await response(scope, receive, send)


def _database_error(exc: Exception, scope) -> JSONResponse:
    """As the REST API: 409 for a transaction that lost to a concurrent write, 503 for a database that
    cannot be reached; both with Retry-After."""
    kind = write_conflict(exc)
    if kind is not None:
        logger.warning("write conflict (%s) in %s %s: %s", kind, scope["method"], scope["path"], exc)
        headers = {"Retry-After": str(CONFLICT_RETRY_AFTER_SECONDS)}
        return JSONResponse({"detail": conflict_detail(kind)}, status_code=409, headers=headers)
    logger.warning("database unavailable for %s %s: %s", scope["method"], scope["path"], exc)
    return JSONResponse(
        {"detail": DETAIL}, status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)}
    )


class BearerGate:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] == MCP_PATH + "/":
            # The SDK's app answers /mcp/ with a 307 to /mcp, which clients do not follow on a POST: a URL
            # configured with the slash could not connect. It is the same endpoint.
            scope = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}
        send = _json_errors(send)
        headers = dict(scope.get("headers") or [])
        scheme, _, secret = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        principal = limited = None
        if scheme.lower() == "bearer" and secret.strip():
            try:
                principal, limited = await in_database_thread(_admit, secret.strip())
            except CONNECTION_ERRORS as exc:  # as the REST API: retry later, not a server fault
                return await _database_error(exc, scope)(scope, receive, send)
        if principal is None:
            response = JSONResponse(
                {"detail": "Missing, unknown or revoked bearer token. Send 'Authorization: Bearer <token>'."},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            return await response(scope, receive, send)
        if limited is not None:
            return await _rate_limited(limited, headers, scope, receive, send)
        if scope["method"] == "GET":
            # The event stream GET would open carries nothing in a stateless server (it never sends
            # unasked) and never ends; the protocol's other answer is 405.
            detail = "This server streams nothing to clients: send JSON-RPC requests with POST."
            response = JSONResponse({"detail": detail}, status_code=405, headers={"Allow": "POST"})
            return await response(scope, receive, send)
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return await JSONResponse({"detail": _too_large_detail()}, status_code=413)(scope, receive, send)
        if scope["method"] == "POST":
            body = await _body_read(receive)
            if body is None:  # the client left before its request was whole: no one to answer
                return None
            if len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:  # chunked, without a Content-Length
                return await JSONResponse({"detail": _too_large_detail()}, status_code=413)(
                    scope, receive, send
                )
            answer = early_answer(body)
            if answer is not None:
                # A message refused whole (no id to answer under) is a 400, as the SDK's own refusals.
                status = 400 if answer["id"] is None else 200
                return await JSONResponse(answer, status_code=status)(scope, receive, send)
            receive = _replay(body, receive)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        agent = (query.get("agent") or [None])[0] or None
        scope.setdefault("state", {})["mcp_caller"] = Caller(principal=principal, default_agent=agent)
        return await self.app(scope, receive, send)


def _transport_security() -> TransportSecuritySettings:
    """Host and Origin checks against DNS rebinding, from Django's ALLOWED_HOSTS."""
    hosts = [h for h in settings.ALLOWED_HOSTS if h]
    if any(h == "*" or h.startswith(".") for h in hosts):
        # Patterns the SDK cannot express (any host, subdomains): the bearer token, which a rebound
        # page does not have, is then the protection, as it is for the REST API.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed = [pattern for h in hosts for pattern in (h, f"{h}:*")]
    origins = [f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(allowed_hosts=allowed, allowed_origins=origins)


def mcp_http_app():
    """The ASGI app serving /mcp (its lifespan runs the SDK's session manager)."""
    starlette_app = mcp_server().streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # The REST API's limit (MEMORY_MAX_REQUEST_BYTES), for chunked bodies too; the SDK's is 4 MiB.
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        transport_security=_transport_security(),
    )
    return BearerGate(starlette_app)
