"""bin/manage runs from any folder, as the README says, and a relative path means that folder."""

import hashlib
import subprocess

import pytest

from tests.operations.running import ROOT


def _installed_or_skip():
    stamp = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    for extras in ("base", "dev"):
        installed = ROOT / ".venv" / f".installed-{extras}"
        if installed.exists() and installed.read_text().strip() == stamp:
            return
    pytest.skip(".venv was not installed by bin/ scripts from this pyproject.toml (no install stamp)")


def test_a_relative_path_is_read_from_the_folder_bin_manage_was_started_in(tmp_path):
    """`cd ~/backups && /path/to/repo/bin/manage export_memory_dir memory` wrote the export into the
    checkout (bin/manage ran manage.py from there), not into ~/backups/memory."""
    _installed_or_skip()
    result = subprocess.run(
        [str(ROOT / "bin" / "manage"), "shell", "-v", "0", "-c",
         "from pathlib import Path; print(Path('memory').resolve())"],
        cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str((tmp_path / "memory").resolve())
