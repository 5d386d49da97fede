"""stdout discipline for the stdio transport: only protocol messages may reach the real stdout.

`manage.py mcp` calls `stdout_divert()` before Django starts (settings may start the embedded
PostgreSQL, whose starter and server processes inherit file descriptor 1): from then on fd 1 and
sys.stdout write to stderr. `stdout_restore()` gives fd 1 back just before the SDK's stdio server
claims it (the SDK then points fd 1 at stderr again for as long as it serves).
"""

import os
import sys

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
