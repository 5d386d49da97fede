"""Is a memory server already running? Answered before anything is installed or migrated.

`serve` records itself in MEMORY_DATA_DIR/serve.json (pid, URL) while it runs. A second `serve` on the
same data folder, or on a port something already listens on, says where the running one is and exits.
Standard library only: `bin/serve` runs this with the system Python before the virtualenv is ready
(`python3 -m memoryproject.serve_state [serve arguments]`; exit status 3 when one is running, 2 for
a port that is not one).
"""

import argparse
import json
import os
import socket
import sys
from pathlib import Path

from memoryproject.processes import process_exists

BASE_DIR = Path(__file__).resolve().parent.parent
RECORD_NAME = "serve.json"
ALREADY_RUNNING = 3
BAD_ARGUMENT = 2
DEFAULT_PORT = 8000
PORT_MIN, PORT_MAX = 1, 65535


def data_dir_from_env() -> Path:
    """MEMORY_DATA_DIR as settings.py resolves it (relative paths from the repository root)."""
    path = Path(os.environ.get("MEMORY_DATA_DIR", "").strip() or "./.data").expanduser()
    return (path if path.is_absolute() else BASE_DIR / path).resolve()


def display_url(host: str, port: int) -> str:
    host = host if host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    return f"http://{host}:{port}/"


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def allowed_hosts_warning(host: str, allowed: list[str]) -> str | None:
    """What to tell an operator who binds the server beyond this machine while ALLOWED_HOSTS names none
    of the addresses others will use: Django answers every such request 400 (the health check included).
    None when the bind is local or ALLOWED_HOSTS already names more than this machine's loopback."""
    if host in LOOPBACK_HOSTS or "*" in allowed:
        return None
    if host not in ("0.0.0.0", "::", "") and host in allowed:
        return None
    if any(name not in (*LOOPBACK_HOSTS, "testserver") for name in allowed):
        return None
    return (
        f"Listening on {host}, but ALLOWED_HOSTS names only this machine ({','.join(allowed)}): a request "
        "that reaches it by another name or address gets 400. Set ALLOWED_HOSTS to the names clients use, "
        "e.g. ALLOWED_HOSTS=memory.example.com,10.0.0.5"
    )


def _alive(pid: int) -> bool:
    if not process_exists(pid):
        return False
    try:
        return "serve" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return True  # no /proc: trust the pid


def running_record(data_dir: Path) -> dict | None:
    """The record of a `serve` still running on this data folder, or None (a stale record is removed)."""
    path = data_dir / RECORD_NAME
    try:
        record = json.loads(path.read_text())
        pid = int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid != os.getpid() and _alive(pid):
        return record
    path.unlink(missing_ok=True)
    return None


def port_in_use(host: str, port: int) -> bool:
    target = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
    try:
        with socket.create_connection((target, port), timeout=1):
            return True
    except OSError:
        return False


def host_unusable_message(host: str, port: int) -> str | None:
    """Why this machine cannot listen on `host` (a name that does not resolve, an address not its own),
    else None: checked before gunicorn, which retried for five seconds after `serve` said it was running."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return (
            f"--host (or HOST) {host!r} cannot be listened on here ({reason}): give an address of this "
            "machine, such as 127.0.0.1, 0.0.0.0 (every interface) or ::"
        )
    return None


def already_running_message(data_dir: Path, host: str, port: int) -> str | None:
    """What to tell the user when a server is already running here, else None."""
    record = running_record(data_dir)
    if record:
        return (
            f"A memory server is already running at {record.get('url')} (pid {record['pid']}, data folder "
            f"{data_dir}). Use it, or stop it first (Ctrl-C in its terminal, or kill {record['pid']})."
        )
    if port_in_use(host, port):
        return (
            f"Port {port} on {host} is already in use (another server?): open {display_url(host, port)} "
            "to see what answers, or start on another port with --port."
        )
    return None


def write_record(data_dir: Path, url: str) -> None:
    path = data_dir / RECORD_NAME
    path.write_text(json.dumps({"pid": os.getpid(), "url": url}))


def remove_record(data_dir: Path) -> None:
    path = data_dir / RECORD_NAME
    try:
        if int(json.loads(path.read_text())["pid"]) == os.getpid():
            path.unlink()
    except (OSError, ValueError, KeyError, TypeError):
        pass


def port_parse(value: str, source: str) -> int:
    """A port number from --port or PORT; ValueError naming `source` when it is not one. The same rule
    as `serve`'s (the standard library only, for `bin/serve`)."""
    try:
        port = int(value.strip())
    except ValueError:
        raise ValueError(f"{source} must be an integer, got {value!r}") from None
    if not PORT_MIN <= port <= PORT_MAX:
        raise ValueError(f"{source} must be between {PORT_MIN} and {PORT_MAX}, got {port}")
    return port


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port")
    parser.add_argument("-h", "--help", action="store_true")
    options, unknown = parser.parse_known_args(argv)
    if options.help or unknown:
        # `bin/serve --help` starts nothing: `manage.py serve --help` prints the options. It answered
        # "already running" or "port in use" instead, whenever the default port was taken. Arguments
        # this early check does not know (a typo such as `--prot 8001`, or Django's own options) are
        # `manage.py serve`'s to refuse with its usage and a "did you mean" or to take; it checks the
        # port again before it starts anything.
        return 0
    try:
        if options.port is not None:
            port = port_parse(options.port, "--port")
        else:
            port = port_parse(os.environ.get("PORT", "").strip() or str(DEFAULT_PORT), "PORT")
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return BAD_ARGUMENT
    message = already_running_message(data_dir_from_env(), options.host, port)
    if message:
        print(message, file=sys.stderr)
        return ALREADY_RUNNING
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
