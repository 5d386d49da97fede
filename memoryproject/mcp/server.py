"""The one MCP server: every app's tools, the resources and the prompt registered on an SDK MCPServer."""

from functools import cache

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ConfigDict, ValidationError

from memoryproject.mcp import resources, tools_files, tools_search, tools_sessions, tools_vault
from memoryproject.mcp.caller import caller_middleware, describe_error

INSTRUCTIONS = (
    "Long-term and short-term memory for this agent. At the start of a session call memory_context with "
    "the task; search with memory_search before answering from memory; save decisions and lessons with "
    "memory_save; log the conversation with session_log; end with session_close and a summary."
)


def _unknown_arguments_refused(tool) -> None:
    """The SDK's argument model ignores an argument the tool does not take: memory_save(importnace=0.9)
    saved with the default importance and said nothing. Refused now, naming it ("importnace: Extra
    inputs are not permitted"), as the REST API refuses an unknown field; inputSchema says
    additionalProperties false."""
    base = tool.fn_metadata.arg_model
    strict = type(base.__name__, (base,), {"model_config": ConfigDict(extra="forbid")})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)


class MemoryServer(MCPServer):
    def add_tool(self, fn, *args, **kwargs):
        super().add_tool(fn, *args, **kwargs)
        _unknown_arguments_refused(self._tool_manager.get_tool(kwargs.get("name") or fn.__name__))

    async def call_tool(self, name, arguments, context=None):
        """A refused call's text is the REST API's `detail`: the SDK would prefix it with "Error
        executing tool <name>: " and give arguments its schema refuses as pydantic's dump."""
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(describe_error(cause)) from cause
            if isinstance(cause, ToolError):
                raise ToolError(str(cause)) from cause
            raise


@cache
def mcp_server() -> MCPServer:
    server = MemoryServer(
        "agent-memory",
        title="Agent memory server",
        instructions=INSTRUCTIONS,
        version="1",
        middleware=[caller_middleware],
        log_level="WARNING",
    )
    for module in (tools_search, tools_vault, tools_sessions, tools_files, resources):
        module.register(server)
    return server
