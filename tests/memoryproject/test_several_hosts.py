"""Two web processes and one job worker against one database (README "Running on several hosts"):
writes acknowledged by either web process are all readable from both, and the worker runs the jobs
either one queued."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _call(url, method="GET", token=None, body=None):
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read() or b"null")


def _wait_healthy(url: str, process: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"web process exited early with {process.returncode}")
        try:
            with urllib.request.urlopen(url + "healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("web process did not become healthy in time")


def _manage(env, *args, timeout=120) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=timeout, check=True,
    ).stdout.strip()  # fmt: skip


@pytest.fixture
def shared_database(data_dir_templates):
    """A throwaway embedded PostgreSQL, reached by every process through one DATABASE_URL, as a managed
    database would be: a migrated template's copy (what sharing it is about, not its first migrate)."""
    data = Path(tempfile.mkdtemp(prefix="memsrv-hosts-"))
    os.chmod(data, 0o755)
    shutil.move(data_dir_templates.copy("migrated"), data / "db")
    env = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_TEST_NAME", "REDIS_URL")
    }
    env["MEMORY_DATA_DIR"] = str(data / "db")
    url = subprocess.run(
        # The starting process would stop the server on exit; this one hands it over to the test instead.
        [sys.executable, "-c", "import sys, pathlib; import memoryproject.embedded_db as e; "
         "print(e.embedded_database_url(pathlib.Path(sys.argv[1]))); e.started_here = False", str(data / "db")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout.strip()  # fmt: skip
    yield {"url": url, "data": data, "env": env}
    subprocess.run(
        [sys.executable, "-c", "from memoryproject.embedded_db import embedded_database_stop as s; import sys, "
         "pathlib; s(pathlib.Path(sys.argv[1]))", str(data / "db")],
        cwd=ROOT, env=env, timeout=60, check=False,
    )  # fmt: skip
    shutil.rmtree(data, ignore_errors=True)


def test_two_web_processes_and_a_worker_on_one_database_lose_nothing(shared_database):
    processes = []

    def host_env(name: str) -> dict:
        # Each "host" has its own data folder; what they share is the database and the secret key.
        env = dict(shared_database["env"], DATABASE_URL=shared_database["url"], SECRET_KEY="k" * 64)
        env["MEMORY_DATA_DIR"] = str(shared_database["data"] / name)
        return env

    _manage(host_env("setup"), "migrate", "--verbosity", "0")
    token = _manage(
        host_env("setup"), "token_create", "--project", "hosts", "--create-project", "--scope", "admin"
    )
    urls = []
    try:
        for name in ("web-a", "web-b"):
            port = _free_port()
            process = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--no-cluster", "--port", str(port), "--workers", "1"],
                cwd=ROOT, env=host_env(name), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            processes.append(process)
            urls.append(f"http://127.0.0.1:{port}/")
            _wait_healthy(urls[-1], process)
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=host_env("worker"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        processes.append(worker)

        acknowledged_entries, acknowledged_messages, errors = [], [], []

        def client(number: int) -> None:
            url = urls[number % 2]  # the load balancer alternates
            try:
                for i in range(10):
                    status, entry = _call(
                        url + "api/v1/agents/shared/entries", "POST", token,
                        {"category": "lessons", "content": f"Client {number} lesson {i}"},
                    )  # fmt: skip
                    assert status == 201
                    acknowledged_entries.append(entry["id"])
                    message = {
                        "id": f"c{number}-m{i}",
                        "role": "user",
                        "text": f"message {i} of client {number}",
                    }
                    status, _ = _call(
                        url + "api/v1/agents/shared/messages", "POST", token,
                        {"session": "one-chat", "messages": [message]},
                    )  # fmt: skip
                    assert status == 200
                    acknowledged_messages.append(message["id"])
            except Exception as exc:  # reported below, with the rest
                errors.append(repr(exc))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors

        for url in urls:
            status, listing = _call(url + "api/v1/agents/shared/entries?limit=100", token=token)
            assert status == 200
            assert sorted(item["id"] for item in listing["items"]) == sorted(acknowledged_entries)
            status, page = _call(
                url + "api/v1/agents/shared/messages?session=one-chat&limit=200", token=token
            )
            assert sorted(m["client_id"] for m in page["items"]) == sorted(acknowledged_messages)

        # Closing the session through one web process queues the extraction job; the worker runs it.
        status, _ = _call(urls[1] + "api/v1/agents/shared/sleep", "POST", token, {"session": "one-chat"})
        assert status == 200
        # Read from the shared database directly, every 0.2 s: a Django process per look cost seconds
        # of CPU on a loaded machine, with a second's sleep between looks.
        deadline = time.monotonic() + 60
        done = 0
        with psycopg.connect(shared_database["url"], autocommit=True) as database:
            while time.monotonic() < deadline and not done:
                time.sleep(0.2)
                query = "SELECT count(*) FROM django_q_task WHERE \"group\" = 'extraction'"
                done = database.execute(query).fetchone()[0]
        assert done, "the job worker did not run the extraction queued by a web process"
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
