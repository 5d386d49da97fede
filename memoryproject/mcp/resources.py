"""Resources (workspace files, project context, latest handoff) and the start_session prompt."""

import logging
from functools import wraps

from django.db import close_old_connections
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from memoryproject.mcp.caller import (
    agent_for_read,
    current_caller,
    describe_error,
    error_status,
    nul_refuse,
    on_database_thread,
)
from memoryproject.mcp.tools_search import context_for
from vault import selectors, services
from vault.models import TokenScope

logger = logging.getLogger(__name__)


def _refusal_adapter(fn):
    """As tool_adapter, for resources and prompts: a domain error becomes a JSON-RPC invalid-params error
    (-32602, the code the SDK gives a resource that does not exist) whose message is the REST API's
    `detail` and whose data holds the REST API's status (404, 422...). The SDK would answer a resource's
    refusal -32603, an internal error, and turn any exception of a prompt into a code 0 error saying
    only that rendering failed, logged as a server fault."""

    @wraps(fn)
    def run(*args, **kwargs):
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except MCPError:
            raise
        except Exception as exc:
            text = describe_error(exc)
            if text is None:
                logger.exception("MCP resource or prompt %s failed", fn.__name__)
                raise MCPError(INTERNAL_ERROR, "Internal server error; it has been logged.") from exc
            status = error_status(exc)
            code = INTERNAL_ERROR if status >= 500 else INVALID_PARAMS  # 503: the database is unreachable
            raise MCPError(code, text, {"status": status}) from exc
        finally:
            close_old_connections()

    return on_database_thread(run)


@_refusal_adapter
def workspace_file(path: str) -> str:
    nul_refuse("path", path)
    target = agent_for_read(current_caller(), None)
    services.daily_notes_flush(agent=target)
    return selectors.file_get(agent=target, path=path).content


@_refusal_adapter
def project_context() -> str:
    caller = current_caller()
    caller.principal.require(TokenScope.READ)
    return selectors.project_for_principal(caller.principal).context


@_refusal_adapter
def handoff_latest() -> str:
    target = agent_for_read(current_caller(), None)
    entry = selectors.handoff_latest(target)
    return entry.content if entry is not None else "No handoff yet: no session of this agent has been closed."


@_refusal_adapter
def start_session(task: str = "") -> str:
    built = context_for(None, task, None)
    return built["text"]


def register(server) -> None:
    server.resource(
        "memory://files/{+path}",
        name="workspace_file",
        description="One of the agent's workspace files (MEMORY.md, PROFILE.md, memory/YYYY-MM-DD.md ...).",
        mime_type="text/markdown",
    )(workspace_file)
    server.resource(
        "memory://project/context",
        name="project_context",
        description="The project context (_project.md) every agent of the project shares.",
        mime_type="text/markdown",
    )(project_context)
    server.resource(
        "memory://handoff/latest",
        name="handoff_latest",
        description="The handoff the agent's last closed session left for the next one.",
        mime_type="text/markdown",
    )(handoff_latest)
    server.prompt(
        name="start_session",
        description="Start a session with the agent's memory: the memory context for the task, as a message.",
    )(start_session)
