"""stdout discipline for the stdio transport: only protocol messages may reach the real stdout.

`manage.py mcp` calls `stdout_divert()` before Django starts (settings may start the embedded
PostgreSQL, whose starter and server processes inherit file descriptor 1): from then on fd 1 and
sys.stdout write to stderr. `stdout_restore()` gives fd 1 back just before the SDK's stdio server
claims it (the SDK then points fd 1 at stderr again for as long as it serves).

`serve_stdio` runs the server on stdin/stdout, answering the lines the SDK's reader would drop.
"""

import io
import os
import sys

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

from memoryproject.mcp.protocol import early_answer

_saved_fd: int | None = None


def stdout_divert() -> None:
    global _saved_fd
    if _saved_fd is not None:
        return
    sys.stdout.flush()
    _saved_fd = os.dup(1)
    os.dup2(2, 1)


def stdout_restore() -> None:
    global _saved_fd
    if _saved_fd is None:
        return
    sys.stdout.flush()
    os.dup2(_saved_fd, 1)
    os.close(_saved_fd)
    _saved_fd = None


class _AnsweringStdin:
    """stdin's lines for the SDK's reader, less those it would drop without a word (a line escaping
    half of a surrogate pair, a request whose id is null), which are answered here instead: the client
    would wait for that answer forever."""

    def __init__(self, lines):
        self.lines = lines
        self.write_stream = None

    async def __aiter__(self):
        async for line in self.lines:
            answer = early_answer(line.encode("utf-8", "surrogatepass"))
            if answer is None or self.write_stream is None:
                yield line
                continue
            await self.write_stream.send(SessionMessage(jsonrpc_message_adapter.validate_python(answer)))


async def serve_stdio(server) -> None:
    """The SDK's MCPServer.run_stdio_async, reading stdin through _AnsweringStdin."""
    lines = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    stdin = _AnsweringStdin(lines)
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        stdin.write_stream = write_stream
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
