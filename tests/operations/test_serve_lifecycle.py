"""bin/serve as a newcomer and a supervisor use it: the first-run hint works as printed, a second
serve says where the first one is, Ctrl-C and SIGTERM stop everything it started, and the embedded
database comes back by itself when it dies."""

import os
import re
import shlex
import signal
import subprocess
import threading
import time

import pytest

from tests.operations.running import (
    ROOT,
    request,
    server_env,
    start,
    stop_group,
    token_create,
    wait_healthy,
    wait_no_processes,
)


def _said(output: str) -> list[str]:
    """What serve said, without the web server's access log (a request's line may come late)."""
    return [line for line in output.strip().splitlines() if not re.search(r'" \d{3} ', line)]


def _serve(data_dir, port, tmp_path, name="serve.log", script=True):
    log = tmp_path / name
    command = ["bin/serve"] if script else [str(ROOT / ".venv/bin/python"), "manage.py", "serve"]
    process = start([*command, "--port", str(port), "--workers", "1"], data_dir, log)
    return process, log


def test_first_run_hint_second_serve_and_ctrl_c(data_dir, tmp_path, unused_port):
    url = f"http://127.0.0.1:{unused_port}/"
    process, log = _serve(data_dir, unused_port, tmp_path)
    try:
        wait_healthy(url, process, log)
        output = log.read_text()
        hint = next(line for line in output.splitlines() if "To get an API token:" in line)
        command = hint.split(":", 1)[1].strip()
        assert command.startswith("bin/manage token_create"), hint
        token = subprocess.run(
            shlex.split(command), cwd=ROOT, env=server_env(data_dir), capture_output=True, text=True,
            timeout=60, check=True,
        ).stdout.strip()  # fmt: skip
        assert request(url + "api/v1/agents", token=token)[0] == 200

        second = subprocess.run(
            ["bin/serve", "--port", str(unused_port + 1)], cwd=ROOT, env=server_env(data_dir),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 1
        assert f"already running at {url}" in second.stderr
        assert "Database migrated" not in second.stdout + second.stderr
    finally:
        before = len(log.read_text())
        code = stop_group(process, signal.SIGINT)
    output = log.read_text()
    assert code == 0, output
    assert wait_no_processes(data_dir) == []
    said = _said(output[before:])
    assert len(said) == 1, said
    assert said[0].startswith("Stopped the web server, the job cluster and the embedded database in ")
    assert "SIGKILL" not in output and "Traceback" not in output


def test_sigterm_to_the_process_group_leaves_nothing_running(migrated_data_dir, tmp_path, unused_port):
    data_dir = migrated_data_dir
    url = f"http://127.0.0.1:{unused_port}/"
    process, log = _serve(data_dir, unused_port, tmp_path)
    try:
        wait_healthy(url, process, log)
    finally:
        before = len(log.read_text())
        code = stop_group(process, signal.SIGTERM)
    assert code == 0, log.read_text()
    assert wait_no_processes(data_dir) == []
    said = _said(log.read_text()[before:])
    assert len(said) == 1 and said[0].startswith(
        "Stopped the web server, the job cluster and the embedded database"
    ), said


def test_embedded_database_killed_under_serve_comes_back_and_nothing_acknowledged_is_lost(
    migrated_data_dir, tmp_path, unused_port
):
    data_dir = migrated_data_dir
    url = f"http://127.0.0.1:{unused_port}/"
    api = url + "api/v1/agents/dev/entries"
    process, log = _serve(data_dir, unused_port, tmp_path, script=False)
    try:
        wait_healthy(url, process, log)
        token = token_create(data_dir)
        acknowledged, answers = [], []
        stop = threading.Event()

        def write():
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    status, headers, body = request(
                        api, "POST", token, {"category": "lessons", "content": f"fault lesson number {n}"}, 5
                    )
                except OSError:
                    continue
                answers.append((status, headers.get("Retry-After")))
                if status == 201:
                    acknowledged.append(body["id"])
                time.sleep(0.05)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            while len(acknowledged) < 5:
                time.sleep(0.1)
            postmaster = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
            os.kill(postmaster, signal.SIGKILL)
            killed = time.monotonic()
            saw_outage = False
            while True:
                status, headers, _ = request(url + "healthz", timeout=5)
                if status == 503:
                    saw_outage = True
                    assert headers.get("Retry-After")
                elif status == 200 and saw_outage:
                    break
                assert time.monotonic() - killed < 10, f"database not back within 10 s:\n{log.read_text()}"
                time.sleep(0.1)
            back = len(acknowledged)
            while len(acknowledged) < back + 5:
                time.sleep(0.1)
        finally:
            stop.set()
            writer.join(timeout=30)
        assert not any(status >= 500 and status != 503 for status, _ in answers), answers
        assert all(retry for status, retry in answers if status == 503)
        stored, offset = set(), 0
        while True:
            status, _, listing = request(f"{api}?limit=100&offset={offset}", token=token)
            assert status == 200
            if not listing["items"]:
                break
            stored |= {item["id"] for item in listing["items"]}
            offset += len(listing["items"])
        assert set(acknowledged) <= stored
        assert "The embedded database is back" in log.read_text()
    finally:
        code = stop_group(process, signal.SIGTERM)
    assert code == 0, log.read_text()
    assert wait_no_processes(data_dir) == []


@pytest.fixture
def unused_port():
    from tests.operations.running import free_port

    return free_port()
