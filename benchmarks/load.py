"""Write load over HTTP against the production server (`manage.py serve`): N clients, each with its own
agent and token and one keep-alive connection, create entries, then append batches of messages. Every
acknowledged write is then looked up in the database, so a lost write shows as a failure, not a figure.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

from benchmarks.corpus import corpus_generate
from benchmarks.db_waits import WaitSampler
from sessions_app.models import Message
from vault import services
from vault.models import Project, TokenScope, VaultEntry, WorkspaceFile

# The servers the benchmarks start count each request against its token's limit, as production does,
# under a limit no benchmark reaches: one token asking thousands of questions a minute, on a fast
# machine, is over the default MEMORY_API_RATE_LIMIT (3000 a minute) and would be answered 429.
BENCH_RATE_LIMIT = "1000000000/m"


def bench_env(**extra: str) -> dict[str, str]:
    """The environment of a server started by a benchmark: this process's, quieter logs, and the
    rate limit no benchmark reaches."""
    return dict(os.environ, LOG_LEVEL="WARNING", MEMORY_API_RATE_LIMIT=BENCH_RATE_LIMIT, **extra)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def proc_table() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU seconds used so far, command line) of every process this user can read
    (Linux `/proc`; empty elsewhere, and the CPU report is then left out)."""
    table = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue  # exited meanwhile
        table[pid] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, command)
    return table


def database_pid() -> int | None:
    """The pid of the embedded PostgreSQL server (its postmaster, from the data folder's postmaster.pid);
    None when it is not running here or DATABASE_URL names another server."""
    if not settings.EMBEDDED_DATABASE:
        return None
    try:
        first = (settings.MEMORY_DATA_DIR / "pg" / "postmaster.pid").read_text().split("\n", 1)[0]
        return int(first)
    except (OSError, ValueError):
        return None


def _descendants(table: dict[int, tuple[int, float, str]], root: int | None) -> set[int]:
    """`root` and every process below it in a `proc_table()` (empty when it is not there)."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found = set()
    pending = [root] if root in table else []
    while pending:
        pid = pending.pop()
        found.add(pid)
        pending += children.get(pid, [])
    return found


def cpu_by_role(
    table: dict[int, tuple[int, float, str]],
    server_pid: int | None,
    client_pid: int,
    database_pid: int | None = None,
) -> dict:
    """CPU seconds of the server (its process and every descendant), PostgreSQL and this load client,
    from a `proc_table()`. PostgreSQL is the server `database_pid` names and its backends when it is
    known (the embedded one), else every `postgres` process: other servers on a shared machine then
    count too."""
    server = _descendants(table, server_pid)
    database = _descendants(table, database_pid) if database_pid else None

    def is_database(pid: int, command: str) -> bool:
        if database is not None:
            return pid in database
        return command.startswith("postgres") or "/postgres " in command or command.endswith("/postgres")

    totals = {"server": 0.0, "database": 0.0, "client": 0.0}
    for pid, (_, seconds, command) in table.items():
        if pid in server:
            totals["server"] += seconds
        elif is_database(pid, command):
            totals["database"] += seconds
        elif pid == client_pid:
            totals["client"] += seconds
    return totals


def _socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets a process holds open (empty when it cannot be read)."""
    inodes = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _tcp_tables() -> list[str]:
    """The text of `/proc/net/tcp` and `/proc/net/tcp6` (what of them can be read)."""
    tables = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as table:
                tables.append(table.read())
        except OSError:
            continue
    return tables


def established_inodes(port: int, tables: list[str], peer_port: int | None = None) -> set[int]:
    """The inodes of the established TCP connections whose local port is `port` (and whose remote port
    is `peer_port`, when given), from the text of `/proc/net/tcp` and `/proc/net/tcp6`."""
    found = set()
    for text in tables:
        for line in text.splitlines()[1:]:
            fields = line.split()
            # local address "0100007F:4966" (port in hex), remote address, state 01 = ESTABLISHED, inode
            if (
                len(fields) > 9
                and fields[3] == "01"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
                and (peer_port is None or int(fields[2].rsplit(":", 1)[1], 16) == peer_port)
            ):
                found.add(int(fields[9]))
    return found


def worker_connections(server_pid: int, port: int) -> list[int]:
    """How many of the clients' connections to `port` each process of the server holds (its web
    workers), largest first; processes holding none are left out. Linux only: empty elsewhere."""
    established = established_inodes(port, _tcp_tables())
    counts = [len(_socket_inodes(pid) & established) for pid in _descendants(proc_table(), server_pid)]
    return sorted((n for n in counts if n), reverse=True)


def _gunicorn_workers(server_pid: int) -> set[int]:
    """The web workers under `serve`: the processes whose parent is its gunicorn master."""
    table = proc_table()
    gunicorn = {pid for pid in _descendants(table, server_pid) if "gunicorn" in table[pid][2]}
    return {pid for pid in gunicorn if table[pid][0] in gunicorn}


def _holds_peer(pid: int, port: int, peer_port: int) -> bool:
    """Whether process `pid` holds the server side of the connection from local port `peer_port` to `port`."""
    return bool(established_inodes(port, _tcp_tables(), peer_port) & _socket_inodes(pid))


@dataclass
class PhaseResult:
    name: str
    requests: int = 0
    items: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    acknowledged: list = field(default_factory=list)
    cpu: dict = field(default_factory=dict)
    waits: str = ""  # WaitSampler.line(): what the database's sessions were doing

    @property
    def items_per_second(self) -> float:
        return self.items / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        return (
            (
                f"{self.name:9} {self.items:6d} items in {self.seconds:6.2f} s = {self.items_per_second:8.1f}/s  "
                f"request p50 {percentile(self.latencies_ms, 50):6.1f} ms  p95 {percentile(self.latencies_ms, 95):6.1f} ms  "
                f"statuses {dict(sorted(self.statuses.items()))}"
            )
            + self.cpu_line()
            + self.waits
        )

    def cpu_line(self) -> str:
        """Where the CPU went during the phase: the machine's cores are shared by all three."""
        if not self.cpu or not self.requests or not self.seconds:
            return ""
        cores = os.cpu_count() or 1
        busy = sum(self.cpu.values()) / (self.seconds * cores) * 100
        per_request = ", ".join(
            f"{role} {seconds / self.requests * 1000:.1f}" for role, seconds in self.cpu.items()
        )
        spent = ", ".join(f"{role} {seconds:.1f} s" for role, seconds in self.cpu.items())
        return f"\n          CPU: {spent} ({busy:.0f} % of {cores} cores); per request ms: {per_request}"


class Server:
    """`manage.py serve --no-cluster` on a port of 127.0.0.1, the same command line as production."""

    def __init__(self, port: int, env: dict | None = None):
        self.port = port
        self.env = bench_env(**(env or {}))
        self.process: subprocess.Popen | None = None

    def __enter__(self):
        self.process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "serve",
                "--no-cluster",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            cwd=settings.BASE_DIR,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.3)
        else:
            self.__exit__()
            raise RuntimeError(f"the server did not start on port {self.port} within 90 s")
        if not self._workers_serving(deadline):
            self.__exit__()
            raise RuntimeError("the server's web workers did not all start within 90 s")
        return self

    def _workers_serving(self, deadline: float) -> bool:
        """Wait until every web worker has answered: gunicorn starts them one after the other, and a
        load that begins while one still loads Django puts every keep-alive client on the others for
        the whole run. Probe connections stay open meanwhile, so each new one goes to a worker that
        holds fewer (memoryproject/connection_balance.py); `False` at the deadline."""
        probes, answered = [], set()
        try:
            while time.monotonic() < deadline:
                workers = _gunicorn_workers(self.process.pid)
                if workers and workers <= answered:
                    return True
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                probes.append(conn)
                local = conn.sock.getsockname()[1]
                answered |= {pid for pid in workers if _holds_peer(pid, self.port, local)}
                if len(probes) > 4 * max(1, len(workers)):  # a worker still loading: start over
                    for probe in probes:
                        probe.close()
                    probes = []
                    time.sleep(0.2)
            return False
        finally:
            for probe in probes:
                probe.close()

    def __exit__(self, *exc):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _client(port: int, token: str, requests: list[tuple[str, dict, int]], result: PhaseResult, lock) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    latencies, statuses, acknowledged = [], Counter(), []
    for path, body, _items in requests:
        started = time.perf_counter()
        try:
            conn.request("POST", path, body=json.dumps(body), headers=headers)
            response = conn.getresponse()
            payload = response.read()
            status = response.status
        except OSError:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            status, payload = 0, b""
        latencies.append((time.perf_counter() - started) * 1000)
        statuses[status] += 1
        if status in (200, 201):
            acknowledged.append((body, json.loads(payload)))
    conn.close()
    with lock:
        result.latencies_ms += latencies
        result.statuses += statuses
        result.acknowledged += acknowledged
        result.requests += len(requests)


class SplitWatch:
    """In a thread, until stopped: how the phase's client connections are spread over the server's
    processes, read once every client is connected (keep-alive: each stays where it landed)."""

    def __init__(self, server_pid: int, port: int, clients: int):
        self.split: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(server_pid, port, clients), daemon=True)
        self._thread.start()

    def _run(self, server_pid: int, port: int, clients: int) -> None:
        while True:  # at least one look, however short the phase
            split = worker_connections(server_pid, port)
            if sum(split) >= clients:
                self.split = split
                return
            if self._stop.wait(0.02):
                return

    def line(self) -> str:
        self._stop.set()
        self._thread.join()
        if not self.split:
            return ""
        return "\n          connections per web worker: " + ", ".join(map(str, self.split))


def run_phase(
    name: str,
    port: int,
    plans: list[tuple[str, list]],
    items_per_request: int,
    server_pid: int | None = None,
    waits: bool = False,
) -> PhaseResult:
    """Run one phase; with the server's pid, also measure the CPU the server, PostgreSQL and this client
    used during it; with `waits`, sample what the database's sessions do meanwhile (benchmarks/db_waits.py:
    the sampling's own statements then count in the database's and the client's CPU) and, with the
    server's pid too, how the clients' connections are spread over its web workers."""
    result = PhaseResult(name=name)
    before = proc_table() if server_pid else {}
    postmaster = database_pid()
    lock = threading.Lock()
    threads = [
        threading.Thread(target=_client, args=(port, token, requests, result, lock))
        for token, requests in plans
    ]
    sampler = WaitSampler().start() if waits else None
    split = SplitWatch(server_pid, port, len(plans)) if waits and server_pid and plans else None
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.seconds = time.perf_counter() - started
    result.waits = (sampler.stop().line() if sampler else "") + (split.line() if split else "")
    result.items = sum(items_per_request for _ in range(result.statuses[200] + result.statuses[201]))
    if before:
        result.cpu = cpu_since(before, server_pid, postmaster)
    return result


def cpu_since(before: dict, server_pid: int, postmaster: int | None) -> dict[str, float]:
    """CPU seconds each role (cpu_by_role) used since the process table `before` (proc_table()). A
    process started since counts from zero (with its parent as it is now); one that ended since cannot
    be read and is left out (a caller that needs it adds its parent's reaped CPU)."""
    after = proc_table()
    start = {
        pid: (parent, before.get(pid, (0, 0.0, ""))[1], command)
        for pid, (parent, _, command) in after.items()
    }
    begin = cpu_by_role(start, server_pid, os.getpid(), postmaster)
    end = cpu_by_role(after, server_pid, os.getpid(), postmaster)
    return {role: end[role] - begin[role] for role in end}


def note_exchanges_missing(agents: list, bodies: list[dict]) -> int:
    """Acknowledged agent replies that the agents' daily notes do not log, once the exchanges queued
    for the notes are written (as any read of a note writes them). Each reply of the load is unique and
    follows a user message and starts with its own "load message <m> of batch <b> from client <c>:", so
    each must appear as an "**Agent:** <text>" line (compared on its first 200 characters: the note
    clips long replies and a reply may run over several lines)."""
    logged = set()
    for agent in agents:
        services.daily_notes_flush(agent=agent)
        for content in WorkspaceFile.objects.filter(
            agent=agent, path__startswith="memory/", deleted_at__isnull=True
        ).values_list("content", flat=True):
            logged.update(
                line[len("**Agent:** ") :][:200]
                for line in content.splitlines()
                if line.startswith("**Agent:** ")
            )
    replies = [m["text"] for body in bodies for m in body["messages"] if m["role"] == "assistant"]
    return sum(1 for text in replies if text.split("\n", 1)[0][:200] not in logged)


def _plans(tokens: list, *, writes: int, batches: int, batch_size: int) -> tuple[list, list]:
    """Each client's requests: `writes` entries, then `batches` batches of `batch_size` messages."""
    texts = [item["content"] for item in corpus_generate(len(tokens) * writes, agents=50, seed=314)]
    entry_plans = []
    for i, (agent, token) in enumerate(tokens):
        requests = [
            (
                f"/api/v1/agents/{agent.slug}/entries",
                {"category": "lessons", "content": f"{texts[i * writes + j]} (client {i}, write {j})"},
                1,
            )
            for j in range(writes)
        ]
        entry_plans.append((token, requests))
    message_plans = []
    for i, (agent, token) in enumerate(tokens):
        requests = []
        for b in range(batches):
            messages = [
                {
                    "id": f"c{i}-b{b}-m{m}",
                    "role": "user" if m % 2 == 0 else "assistant",
                    "text": f"load message {m} of batch {b} from client {i}: "
                    + texts[(i * batches + b + m) % len(texts)],
                }
                for m in range(batch_size)
            ]
            requests.append(
                (
                    f"/api/v1/agents/{agent.slug}/messages",
                    {"session": f"load-{i}", "messages": messages},
                    batch_size,
                )
            )
        message_plans.append((token, requests))
    return entry_plans, message_plans


def load_run(
    *,
    clients: int,
    writes: int,
    batches: int,
    batch_size: int,
    port: int,
    project_slug: str,
    out,
    server_pid: int | None = None,
    waits: bool = False,
) -> dict:
    """Create a fresh project with one agent and token per client, run both phases against a live server,
    check that every acknowledged write is stored, and return the figures."""
    Project.objects.filter(slug=project_slug).delete()
    project = services.project_create(slug=project_slug, name="HTTP write load")
    tokens = []
    for i in range(clients):
        agent = services.agent_ensure(project=project, slug=f"client-{i:02d}")
        tokens.append((agent, services.token_create(project=project, agent=agent, scope=TokenScope.WRITE)[1]))

    entry_plans, message_plans = _plans(tokens, writes=writes, batches=batches, batch_size=batch_size)

    entries = run_phase("entries", port, entry_plans, 1, server_pid, waits)
    out(entries.line())
    messages = run_phase("messages", port, message_plans, batch_size, server_pid, waits)
    out(messages.line())

    acknowledged_ids = {reply["id"] for _, reply in entries.acknowledged}
    stored_ids = set(VaultEntry.objects.filter(pk__in=acknowledged_ids).values_list("pk", flat=True))
    acknowledged_messages = {m["id"] for body, _ in messages.acknowledged for m in body["messages"]}
    stored_messages = set(
        Message.objects.filter(
            session__agent__project=project, client_id__in=acknowledged_messages
        ).values_list("client_id", flat=True)
    )
    lost_entries = len(acknowledged_ids - stored_ids)
    lost_messages = len(acknowledged_messages - stored_messages)
    server_errors = sum(
        n for status, n in (entries.statuses + messages.statuses).items() if status >= 500 or status == 0
    )
    missing_exchanges = note_exchanges_missing(
        [agent for agent, _ in tokens], [body for body, _ in messages.acknowledged]
    )
    out(
        f"lost: {lost_entries} entries, {lost_messages} messages, {missing_exchanges} daily-note exchanges; "
        f"5xx or connection errors: {server_errors}"
    )
    return {
        "entries_per_second": entries.items_per_second,
        "messages_per_second": messages.items_per_second,
        "entry_p50_ms": percentile(entries.latencies_ms, 50),
        "lost_entries": lost_entries,
        "lost_messages": lost_messages,
        "missing_exchanges": missing_exchanges,
        "server_errors": server_errors,
        "project": project,
        "agents": [agent for agent, _ in tokens],
    }
