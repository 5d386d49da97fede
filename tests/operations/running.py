"""Helpers for tests that start the real server (bin/serve, manage.py serve) in a fresh data folder."""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = (
    str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_TEST_NAME")}
    env["MEMORY_DATA_DIR"] = str(data_dir)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start(command: list[str], data_dir: Path, log: Path) -> subprocess.Popen:
    """Start a command in its own process group (as a terminal would), its output into log."""
    with log.open("w") as out:
        return subprocess.Popen(
            command, cwd=ROOT, env=server_env(data_dir), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def request(url: str, method: str = "GET", token: str | None = None, body=None, timeout: float = 10):
    """(status, headers, JSON body or text) without raising on HTTP errors."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            status, headers, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        status, headers, raw = exc.code, exc.headers, exc.read()
    try:
        return status, headers, json.loads(raw or b"null")
    except ValueError:
        return status, headers, raw.decode(errors="replace")


def wait_healthy(url: str, process: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"exited early with {process.returncode}:\n{log.read_text()}")
        try:
            if request(url + "healthz", timeout=2)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"not healthy in time:\n{log.read_text()}")


def our_processes(data_dir: Path) -> list[str]:
    """Processes started for this data folder: anything with it in its command line or environment
    (serve, gunicorn, the job cluster, PostgreSQL)."""
    found = []
    needle = str(data_dir).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue
        if needle in cmdline or b"MEMORY_DATA_DIR=" + needle + b"\0" in environ:
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name}: {shown}")
    return found


def wait_no_processes(data_dir: Path, timeout: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        left = our_processes(data_dir)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def stop_group(process: subprocess.Popen, signum=signal.SIGINT, timeout: float = 30) -> int:
    """Send signum to the process group (Ctrl-C in a terminal, or a supervisor's SIGTERM); wait."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)
    return process.wait(timeout=timeout)


def kill_everything(data_dir: Path) -> None:
    """Last-resort cleanup after a failed test: nothing may outlive it."""
    for line in our_processes(data_dir):
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)


def fresh_data_dir():
    path = Path(tempfile.mkdtemp(prefix="memsrv-ops-"))
    os.chmod(path, 0o755)
    return path


def remove_data_dir(path: Path) -> None:
    kill_everything(path)
    wait_no_processes(path, timeout=5)
    shutil.rmtree(path, ignore_errors=True)


class DataDirTemplates:
    """Data folders made once per test run and copied for each test that needs one: "initialised"
    (the embedded PostgreSQL's initdb done, the server stopped) and "migrated" (that, then `migrate`).

    A copy is the state a fresh folder reaches after its first initdb (and migrate), without paying
    for them again: on a loaded 2-core machine a fresh `migrate` took 30-60 s, and each test that
    started a server on a fresh folder paid it. Tests about the first start itself (initdb, the first
    migrate, the first-run hint) keep an empty folder.

    registry: a folder the test processes of one run share (pytest-xdist's workers): the first process
    to need a template makes it, under a lock, and writes its path there; the others copy that one, and
    the controller removes them at the end (templates_remove). Without it, the templates are this
    process's own, removed by remove()."""

    def __init__(self, registry: Path | None = None):
        self.registry = registry
        self.made: dict[str, Path] = {}

    def _make(self, kind: str) -> Path:
        if kind == "initialised":
            path = fresh_data_dir()
            # Started, then stopped at this process's exit (it started the server).
            command = [PYTHON, "-c", "import sys, pathlib, memoryproject.embedded_db as e; "
                       "e.embedded_database_url(pathlib.Path(sys.argv[1]))", str(path)]  # fmt: skip
        elif kind == "migrated":
            path = self.copy("initialised")
            command = [PYTHON, "manage.py", "migrate", "--verbosity", "0"]
        else:
            raise ValueError(kind)
        result = subprocess.run(
            command, cwd=ROOT, env=server_env(path), capture_output=True, text=True, timeout=600
        )
        if result.returncode != 0:
            raise AssertionError(f"the {kind} template could not be made:\n{result.stdout}{result.stderr}")
        if wait_no_processes(path, timeout=30):
            raise AssertionError(f"the {kind} template's server did not stop: {our_processes(path)}")
        (path / "pg" / ".handle_pids.json").unlink(missing_ok=True)
        return path

    def _template(self, kind: str) -> Path:
        if kind in self.made:
            return self.made[kind]
        if self.registry is None:
            self.made[kind] = self._make(kind)
            return self.made[kind]
        self.registry.mkdir(parents=True, exist_ok=True)
        with (self.registry / f"{kind}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            recorded = self.registry / f"{kind}.path"
            if not recorded.exists():
                recorded.write_text(str(self._make(kind)))
            self.made[kind] = Path(recorded.read_text())
        return self.made[kind]

    def copy(self, kind: str) -> Path:
        """A new data folder holding a copy of the `kind` template (made on first use)."""
        template = self._template(kind)
        path = fresh_data_dir()
        # cp -a: the PostgreSQL folder belongs to the user the embedded server runs as.
        subprocess.run(["cp", "-a", f"{template}/.", str(path)], check=True, timeout=120)
        return path

    def remove(self) -> None:
        if self.registry is None:
            for path in self.made.values():
                remove_data_dir(path)


def templates_remove(registry: Path) -> None:
    """Remove the templates the test processes of a run recorded in registry (DataDirTemplates)."""
    for recorded in registry.glob("*.path"):
        remove_data_dir(Path(recorded.read_text()))
        recorded.unlink()


def token_create(data_dir: Path) -> str:
    return subprocess.run(
        [PYTHON, "manage.py", "token_create", "--project", "default", "--scope", "admin"],
        cwd=ROOT, env=server_env(data_dir), capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
