"""The one MCP server: every app's tools, the resources and the prompt registered on an SDK MCPServer."""

from functools import cache

from mcp.server.mcpserver import MCPServer

from memoryproject.mcp import resources, tools_files, tools_search, tools_sessions, tools_vault
from memoryproject.mcp.caller import caller_middleware

INSTRUCTIONS = (
    "Long-term and short-term memory for this agent. At the start of a session call memory_context with "
    "the task; search with memory_search before answering from memory; save decisions and lessons with "
    "memory_save; log the conversation with session_log; end with session_close and a summary."
)


@cache
def mcp_server() -> MCPServer:
    server = MCPServer(
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
