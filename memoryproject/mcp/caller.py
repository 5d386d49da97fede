"""Who calls a tool, and on which agent: the same principals and tenancy as the REST API.

Over streamable HTTP the bearer token is checked once per request by `BearerGate` (memoryproject/mcp/
http.py), which leaves a Caller (principal and the URL's `?agent=`) in the ASGI scope's state;
`caller_middleware` hands it to the tool, resource and prompt functions through a context variable
(copied into the worker thread a sync function runs on). Over stdio the `mcp` command resolves one
caller when it starts and installs it with `stdio_caller_set`.
"""

import asyncio
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial, wraps

from django.db import DataError, close_old_connections
from django.http import Http404
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from memoryproject.database_unavailable import DETAIL as DATABASE_UNAVAILABLE
from memoryproject.database_unavailable import conflict_detail, is_connection_error, write_conflict
from memoryproject.env import env_int
from memoryproject.errors import DomainError, InvalidInput, PermissionDenied
from memoryproject.middleware import NUL_MESSAGE
from vault import selectors as vault_selectors
from vault import services as vault_services
from vault.authentication import token_authenticate
from vault.models import Agent, TokenScope
from vault.principal import Principal

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    principal: Principal
    default_agent: str | None = None  # `?agent=` on the URL, or `--agent` of the stdio command
    # The stdio command's token: checked again on every call, as the REST API checks each request, so
    # that revoking it takes effect in a running process.
    secret: str | None = field(default=None, repr=False)


_stdio_caller: Caller | None = None


def stdio_caller_set(caller: Caller | None) -> None:
    global _stdio_caller
    _stdio_caller = caller


_http_caller: ContextVar[Caller | None] = ContextVar("mcp_http_caller", default=None)
_REFUSED = object()


async def caller_middleware(ctx, call_next):
    """SDK middleware: make the HTTP request's Caller visible to the handler of this message."""
    request = ctx.request
    if request is None:  # stdio: the command's caller
        return await call_next(ctx)
    # An HTTP request never falls back to another caller: without the gate's Caller it is refused.
    reset = _http_caller.set(request.scope.get("state", {}).get("mcp_caller") or _REFUSED)
    try:
        return await call_next(ctx)
    finally:
        _http_caller.reset(reset)


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _database_threads() -> ThreadPoolExecutor:
    """The threads the MCP server's database work runs on: WEB_THREADS of them per process, as many as
    Django's views get (memoryproject/asgi.py), each keeping its connection from one call to the next
    (DATABASE_CONN_MAX_AGE). The SDK would run each handler on anyio's pool of up to 40 threads, in a
    fresh copy of the event loop's context where Django then kept the call's connection: every
    concurrent call left a connection open, and a burst of clients used up PostgreSQL's
    max_connections for the whole server."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=env_int("WEB_THREADS", 4, minimum=1, maximum=1024), thread_name_prefix="mcp-db"
            )
        return _executor


def _run_as(caller, fn, args, kwargs):
    reset = _http_caller.set(caller)
    try:
        return fn(*args, **kwargs)
    finally:
        _http_caller.reset(reset)


async def in_database_thread(fn, *args, **kwargs):
    """Run the sync `fn` on one of the database threads, as the calling request's Caller."""
    loop = asyncio.get_running_loop()
    call = partial(_run_as, _http_caller.get(), fn, args, kwargs)
    return await loop.run_in_executor(_database_threads(), call)


def on_database_thread(fn):
    """A sync handler as the async one the SDK awaits: its body runs on the database threads."""

    @wraps(fn)
    async def run(*args, **kwargs):
        return await in_database_thread(fn, *args, **kwargs)

    return run


def current_caller() -> Caller:
    caller = _http_caller.get() or _stdio_caller
    if caller is None or caller is _REFUSED:  # BearerGate refuses such HTTP requests before this
        raise PermissionDenied("Missing, unknown or revoked bearer token.")
    if caller.secret is not None:
        principal = token_authenticate(caller.secret)
        if principal is None:
            raise PermissionDenied("The token (--token / MEMORY_TOKEN) is unknown or has been revoked.")
        caller = replace(caller, principal=principal)
    return caller


def nul_refuse(field: str, *values) -> None:
    """As the REST API's middleware for a path or query parameter: a NUL is a 422 naming the argument,
    before PostgreSQL (whose text cannot hold it) refuses it with a message that names nothing."""
    if any(isinstance(value, str) and "\x00" in value for value in values):
        raise InvalidInput(f"Invalid input: {field}: {NUL_MESSAGE}", [{"loc": [field], "msg": NUL_MESSAGE}])


def agent_name_check(slug: str | None) -> None:
    """An agent a tool is given (its argument, the URL's `?agent=`, stdio's `--agent`) is named by the
    REST API's rule (vault's slug_check: 1-64 characters of a-z, 0-9, '.', '_' or '-', a safe path
    segment, never `.` or `..`): a name no agent can have is refused with the API's error naming the
    argument, not looked up ("not found", or "no results" from a search filter)."""
    nul_refuse("agent", slug)
    if slug:
        vault_services.slug_check(slug, field="agent")


def _own_agent(principal: Principal) -> Agent:
    return vault_selectors.agents_for_principal(principal).get(pk=principal.agent_id)


def agent_for_read(caller: Caller, agent: str | None) -> Agent:
    """The agent a reading tool works on: the argument, else the URL's `?agent=` (or stdio `--agent`),
    else the token's own agent. Whatever is named must be visible to the principal."""
    caller.principal.require(TokenScope.READ)
    slug = agent or caller.default_agent
    agent_name_check(slug)
    if slug:
        return vault_selectors.agent_get_for_principal(caller.principal, slug)
    if caller.principal.is_agent_bound:
        return _own_agent(caller.principal)
    raise InvalidInput(
        "Name the agent: pass the `agent` argument, or configure the URL as /mcp?agent=NAME.",
        [{"loc": ["agent"], "msg": "required for a project-wide token"}],
    )


def agent_for_write(caller: Caller, agent: str | None) -> Agent:
    """As the REST API's agent_for_write: a project-wide token may create the agent on first use."""
    principal = caller.principal
    principal.require(TokenScope.WRITE)
    slug = agent or caller.default_agent
    agent_name_check(slug)
    if principal.is_agent_bound:
        return vault_selectors.agent_get_for_principal(principal, slug) if slug else _own_agent(principal)
    if not slug:
        return agent_for_read(caller, None)  # raises the "name the agent" error
    project = vault_selectors.project_for_principal(principal)
    return vault_services.agent_ensure(project=project, slug=slug)


def describe_error(exc: Exception) -> str | None:
    """The tool error text for an exception the REST API maps to a 4xx, or None for a server fault."""
    if isinstance(exc, PermissionDenied):
        return f"Permission denied: {exc.detail}"
    if isinstance(exc, DomainError):
        fields = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', []))}: {e.get('msg', '')}" for e in exc.errors
        )
        return f"{exc.detail}" + (f" ({fields})" if fields and fields not in exc.detail else "")
    if isinstance(exc, ValidationError):
        described = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
        )
        return f"Invalid input: {described}"
    if isinstance(exc, Http404):
        return str(exc) or "Not found."
    if isinstance(exc, Agent.DoesNotExist):
        return "Agent not found."
    if isinstance(exc, DataError):
        return f"A value was rejected by the database: {str(exc).splitlines()[0]}"
    if write_conflict(exc) is not None:
        logger.warning("write conflict in an MCP call: %s", exc)
        return conflict_detail(write_conflict(exc))
    if is_connection_error(exc):
        logger.warning("database unavailable for an MCP call: %s", exc)
        return DATABASE_UNAVAILABLE
    return None


def error_status(exc: Exception) -> int:
    """The HTTP status the REST API answers for an exception describe_error describes."""
    if isinstance(exc, DomainError):
        return exc.status_code
    if isinstance(exc, ValidationError):
        return 422
    if isinstance(exc, Http404 | Agent.DoesNotExist):
        return 404
    if write_conflict(exc) is not None:
        return 409
    if is_connection_error(exc):
        return 503
    return 400


def tool_adapter(fn):
    """Run a tool body as a request of its own: fresh database connections, domain errors as tool errors.

    A domain error becomes the same message the REST API puts in `detail`; anything else is logged and
    reported as an internal error, and the session goes on. A dict result (the REST API's response
    body) goes back as compact JSON text: the SDK would indent it, which costs the model tokens.
    """

    @wraps(fn)
    def body(*args, **kwargs):
        close_old_connections()
        try:
            result = fn(*args, **kwargs)
            if isinstance(result, dict):
                return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            return result
        except ToolError:
            raise
        except Exception as exc:
            text = describe_error(exc)
            if text is None:
                logger.exception("MCP tool %s failed", fn.__name__)
                raise ToolError("Internal server error; it has been logged.") from exc
            raise ToolError(text) from exc
        finally:
            close_old_connections()

    run = on_database_thread(body)
    if fn.__annotations__.get("return") is dict:
        run.__annotations__ = {**fn.__annotations__, "return": str}
    return run
