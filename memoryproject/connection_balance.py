"""Client connections spread evenly over the web workers.

gunicorn's workers share one listening socket, and uvloop, when the socket is readable, accepts every
connection waiting there. So a few keep-alive clients that connect together all land on whichever
worker woke first: `bench_write --clients 8` found all 8 of its connections on one of the two workers
in most runs, whose Python (one interpreter lock) then served them on one core while the other core
idled (163-205 entries/s against 272-305 with 4 and 4; docs/benchmarks.md).

Here a worker accepts one connection at a time and only while it holds no more open connections than
the live workers' average, read from a table every worker of the server shares (anonymous shared
memory made by gunicorn's master, which imports this module before it forks the workers). The worker
with the fewest is always at or below the average, so some worker always accepts. A worker above the
average stops reading the socket for PAUSE_SECONDS and looks again; a connection still waiting after
PATIENCE pauses (its fair worker stuck, or busy for longer than that) is accepted anyway, so a stuck
worker delays new connections by at most about PAUSE_SECONDS x PATIENCE instead of holding them.
"""

import contextlib
import errno
import logging
import mmap
import multiprocessing
import os
import socket
import struct
import time

import uvloop

from memoryproject.processes import process_exists

logger = logging.getLogger(__name__)

PAUSE_SECONDS = 0.005
PATIENCE = 10
# accept() errors that mean the process or the machine is out of something: wait, as asyncio does.
RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
RESOURCE_WAIT_SECONDS = 1.0


class WorkerTable:
    """One slot per web worker: its pid and how many client connections it holds open. Each worker
    writes only its own slot; a slot whose process is gone counts as free."""

    SLOT = struct.Struct("qq")  # pid, open connections

    def __init__(self, slots: int = 256):
        self.slots = slots
        self._memory = mmap.mmap(-1, slots * self.SLOT.size)  # shared with the processes forked later
        try:
            self._claim = multiprocessing.Lock()
        except (OSError, ImportError):  # no POSIX semaphores here (no /dev/shm): claims may race, rarely
            self._claim = contextlib.nullcontext()

    def _read(self, index: int) -> tuple[int, int]:
        return self.SLOT.unpack_from(self._memory, index * self.SLOT.size)

    def claim(self, pid: int) -> int:
        """A free slot for `pid` (its count at 0); -1 when every slot holds a live process."""
        with self._claim:
            for index in range(self.slots):
                holder, _ = self._read(index)
                if holder in (0, pid) or not process_exists(holder):
                    self.SLOT.pack_into(self._memory, index * self.SLOT.size, pid, 0)
                    return index
        return -1

    def release(self, index: int) -> None:
        self.SLOT.pack_into(self._memory, index * self.SLOT.size, 0, 0)

    def publish(self, index: int, pid: int, connections: int) -> None:
        self.SLOT.pack_into(self._memory, index * self.SLOT.size, pid, connections)

    def may_accept(self, index: int) -> bool:
        """Whether the worker in slot `index` holds no more connections than the live workers' mean."""
        mine, total, workers = self._read(index)[1], 0, 0
        for slot in range(self.slots):
            pid, connections = self._read(slot)
            if pid and (slot == index or process_exists(pid)):
                total += connections
                workers += 1
        return mine * workers <= total


# Made at import: in gunicorn's master, which loads the worker class before it forks the workers.
TABLE = WorkerTable()


class BalancedServer:
    """Serves `protocol_factory` on the shared listening `sock` in `loop`, accepting as the module says.
    Has what uvicorn asks of the server `loop.create_server` returns: close() and wait_closed()."""

    def __init__(self, loop, protocol_factory, sock: socket.socket, ssl=None, table: WorkerTable = TABLE):
        self._loop, self._factory, self._sock, self._ssl, self._table = (
            loop,
            protocol_factory,
            sock,
            ssl,
            table,
        )
        self.sockets = [sock]
        self._pid = os.getpid()
        self._slot = table.claim(self._pid)
        self._open = 0
        self._reading = False
        self._closed = False
        self._resume = None
        self._resumed_at = 0.0
        self._waits = 0
        sock.setblocking(False)
        self._read_start()

    # The listening socket: read while this worker may accept, paused for a moment while it may not.

    def _read_start(self) -> None:
        if not self._reading and not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._on_readable)
            self._reading = True
            self._resumed_at = time.monotonic()

    def _pause(self, seconds: float) -> None:
        if self._reading:
            self._loop.remove_reader(self._sock.fileno())
            self._reading = False
        if self._resume is None and not self._closed:
            self._resume = self._loop.call_later(seconds, self._on_resume)

    def _on_resume(self) -> None:
        self._resume = None
        self._read_start()

    def _fair(self) -> bool:
        if self._slot < 0 or self._table.may_accept(self._slot):
            self._waits = 0
            return True
        # Readable at once after a pause: a connection has waited through it for a fairer worker.
        waited = time.monotonic() - self._resumed_at < PAUSE_SECONDS / 5
        self._waits = self._waits + 1 if waited else 1
        if self._waits > PATIENCE:
            self._waits = 0
            return True
        return False

    def _on_readable(self) -> None:
        if not self._fair():
            self._pause(PAUSE_SECONDS)
            return
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return  # another worker took it, or the client gave up meanwhile
        except OSError as exc:
            if exc.errno not in RESOURCE_ERRORS:
                raise
            logger.error("accepting a connection failed (%s); retrying in %.0f s", exc, RESOURCE_WAIT_SECONDS)
            self._pause(RESOURCE_WAIT_SECONDS)
            return
        conn.setblocking(False)
        if conn.family in (socket.AF_INET, socket.AF_INET6):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._count(+1)
        self._loop.create_task(self._serve(conn))

    # Connections: counted from accept() until the protocol loses them (or their set-up fails).

    def _count(self, change: int) -> None:
        self._open += change
        if self._slot >= 0:
            self._table.publish(self._slot, self._pid, self._open)

    async def _serve(self, conn: socket.socket) -> None:
        state = {"made": False, "lost": False}

        def lost() -> None:
            if not state["lost"]:
                state["lost"] = True
                self._count(-1)

        def factory():
            protocol = self._factory()
            made, gone = protocol.connection_made, protocol.connection_lost

            def connection_made(transport):
                state["made"] = True
                made(transport)

            def connection_lost(exc):
                try:
                    gone(exc)
                finally:
                    lost()

            protocol.connection_made, protocol.connection_lost = connection_made, connection_lost
            return protocol

        try:
            await self._loop.connect_accepted_socket(factory, conn, ssl=self._ssl)
        except Exception as exc:  # a failed TLS handshake, or the client gone during set-up
            logger.debug("connection set-up failed: %r", exc)
            conn.close()
            if not state["made"]:
                lost()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._reading:
            self._loop.remove_reader(self._sock.fileno())
            self._reading = False
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        if self._slot >= 0:
            self._table.release(self._slot)
            self._slot = -1

    def is_serving(self) -> bool:
        return not self._closed

    async def wait_closed(self) -> None:
        return None


class BalancedLoop(uvloop.Loop):
    """uvloop, whose servers on a listening socket handed over by gunicorn are BalancedServers."""

    async def create_server(self, protocol_factory, host=None, port=None, *, sock=None, ssl=None, **kwargs):
        if sock is None:
            return await super().create_server(protocol_factory, host, port, ssl=ssl, **kwargs)
        return BalancedServer(self, protocol_factory, sock, ssl)
