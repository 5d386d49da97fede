"""The README's shell blocks, run top to bottom against a fresh server, do what the README says."""

import re
import signal
import subprocess

from tests.operations import readme
from tests.operations.running import ROOT, free_port, server_env, start, stop_group, wait_healthy

README = ROOT / "README.md"
SEGMENT = "@@readme segment {}@@"
# Every curl reports its status on stderr, so that a 4xx or 5xx cannot pass unnoticed.
PRELUDE = """set -e -o pipefail
curl() { command curl --write-out '%{stderr}@@http %{http_code} %{url_effective}\\n' "$@"; }
"""


def test_every_shell_block_says_whether_it_runs():
    unmarked = [
        f"README.md line {block.line}"
        for block in readme.blocks(README)
        if block.language in ("sh", "bash", "shell") and block.mode is None
    ]
    assert unmarked == [], (
        "put <!-- readme-test: run --> (or <!-- readme-test: skip REASON -->) on the line before each "
        f"shell block: {unmarked}"
    )


def test_readme_blocks_run_in_order_show_what_the_readme_says(migrated_data_dir, tmp_path):
    """Against a server on a migrated data folder (the state its first `serve` leaves): what the README's
    blocks do, not the first migrate, is the point here (test_serve_lifecycle's first run does that)."""
    data_dir = migrated_data_dir
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "serve.log"
    workdir = tmp_path / "work"
    workdir.mkdir()
    for name in (".venv", "bin", "manage.py"):
        (workdir / name).symlink_to(ROOT / name)

    segments = [
        (block, segment)
        for block in readme.blocks(README)
        if block.mode == "run"
        for segment in block.segments
    ]
    assert len(segments) >= 7
    script = [PRELUDE]
    for n, (_, segment) in enumerate(segments):
        script.append(segment.code.replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
        script.append(f'echo "{SEGMENT.format(n)}"; echo "{SEGMENT.format(n)}" >&2')

    server = start([str(ROOT / ".venv/bin/python"), "manage.py", "serve", "--port", str(port)], data_dir, log)
    try:
        wait_healthy(url, server, log)
        result = subprocess.run(
            ["bash", "-c", "\n".join(script)], cwd=workdir, env=server_env(data_dir),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        stop_group(server, signal.SIGTERM)

    outputs = re.split(r"@@readme segment \d+@@\n", result.stdout)
    errors = re.split(r"@@readme segment \d+@@\n", result.stderr)
    problems = []
    for n, (block, segment) in enumerate(segments):
        where = f"README.md block at line {block.line}, segment {n}:\n{segment.code.strip()}\n"
        if n >= len(outputs) - 1:
            problems.append(f"{where}did not finish (exit {result.returncode}):\n{errors[-1][-3000:]}")
            break
        statuses = re.findall(r"@@http (\d+) (\S+)", errors[n])
        failed = [f"{status} {target}" for status, target in statuses if int(status) >= 400]
        if failed:
            problems.append(f"{where}HTTP errors: {failed}\n{outputs[n][-2000:]}")
        if segment.expected and not readme.shown(segment.expected, outputs[n]):
            problems.append(f"{where}expected to show: {segment.expected}\nbut printed: {outputs[n][-2000:]}")
    assert not problems, "\n\n".join(problems)
