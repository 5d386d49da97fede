"""Once installed, bin/serve and bin/test work with no network at all (nothing is reinstalled) and leave
no process behind; a benchmark on a fresh data folder migrates it instead of crashing."""

import hashlib
import shutil
import subprocess

import pytest

from tests.operations.running import PYTHON, ROOT, free_port, server_env, wait_no_processes


def _offline_or_skip():
    stamp = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    installed = ROOT / ".venv" / ".installed-dev"
    if not installed.exists() or installed.read_text().strip() != stamp:
        pytest.skip(".venv was not installed by bin/test from this pyproject.toml (no install stamp)")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("unshare or ip is missing: cannot cut the network off here")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10)
    if probe.returncode != 0:
        pytest.skip(f"unshare -n is not permitted here: {probe.stderr.decode().strip()}")


def _offline(script: str, data_dir, timeout: float):
    """Run a bash script in a new network namespace: only a loopback interface, nothing outside."""
    return subprocess.run(
        ["unshare", "-n", "bash", "-c", "ip link set lo up\n" + script],
        cwd=ROOT, env=server_env(data_dir), capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_bin_serve_and_bin_test_work_offline_and_leave_nothing_running(data_dir):
    _offline_or_skip()
    port = free_port()
    serve = _offline(
        f"""
        setsid bin/serve --port {port} --workers 1 > "$MEMORY_DATA_DIR/serve.log" 2>&1 &
        pid=$!
        for i in $(seq 1 240); do
          curl -sf http://127.0.0.1:{port}/healthz && break
          kill -0 $pid 2>/dev/null || break
          sleep 0.5
        done
        kill -INT -- -$pid
        wait $pid
        echo "serve exited with $?"
        """,
        data_dir,
        timeout=240,
    )
    log = (data_dir / "serve.log").read_text()
    assert '{"status": "ok", "database": "ok"' in serve.stdout, serve.stdout + serve.stderr + log
    assert "serve exited with 0" in serve.stdout, log
    assert "Installing" not in log
    assert wait_no_processes(data_dir) == []

    # Its temporary folders under the data folder: a pytest process starting on the default base makes
    # /tmp/pytest-of-root private again, under the feet of the outer suite's servers (tests/memoryproject/
    # test_serve.py's shared_data says how that failed).
    tests = _offline(
        'exec bin/test tests/memoryproject/test_settings.py --basetemp "$MEMORY_DATA_DIR/pytest"',
        data_dir,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "[100%]" in tests.stdout
    assert "Installing" not in tests.stdout + tests.stderr
    assert wait_no_processes(data_dir) == []


def test_a_benchmark_on_a_fresh_data_folder_migrates_it_first(initialised_data_dir):
    data_dir = initialised_data_dir
    result = subprocess.run(
        [PYTHON, "manage.py", "bench_write", "--entries", "500", "--writes", "2"],
        cwd=ROOT, env=server_env(data_dir), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "migrating it first" in result.stdout
    assert wait_no_processes(data_dir) == []


def test_an_operators_command_on_a_fresh_data_folder_says_to_migrate(initialised_data_dir, tmp_path):
    """Run before the first `serve` (or after an upgrade, before `migrate`), every command died with a
    traceback ending in `relation "vault_project" does not exist`."""
    data_dir = initialised_data_dir
    source = tmp_path / ".memory" / "dev"
    source.mkdir(parents=True)
    (source / "decisions.md").write_text("## 2026-03-01\nUse SSE.\n")
    for command in (["import_memory_dir", str(tmp_path), "--create-project"], ["compact"]):
        result = subprocess.run(
            [PYTHON, "manage.py", *command],
            cwd=ROOT, env=server_env(data_dir), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        assert (
            result.stderr.strip().splitlines()[-1].startswith("CommandError: The database is not migrated: ")
        ), result.stderr
        assert "Run `python manage.py migrate` (or start `serve`, which migrates)" in result.stderr
    assert wait_no_processes(data_dir) == []
