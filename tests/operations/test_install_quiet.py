"""bin/serve's first install (bin/_install.sh) prints no setuptools warning about editable installs."""

import os
import shutil
import subprocess
import sys

from tests.operations.running import ROOT

# What setuptools' editable_wheel printed on every first `bin/serve` and `bin/test` (nine lines of stars):
# "BuildBackendWarning: Editable installation.\n!!\n ... Please be careful with folders in your working
# directory with the same name as your package as they may take precedence during imports."
SETUPTOOLS_WARNING = "Editable installation.\n!!\n\n        Please be careful with folders ...\n!!"


def _install(tmp_path, extras: str, env: dict) -> list[str]:
    """Run ensure_installed in a copy of the project whose .venv python only records how it was called."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "bin").mkdir()
    shutil.copy(ROOT / "bin" / "_install.sh", tmp_path / "bin")
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    stub = venv_bin / "python"
    stub.write_text('#!/bin/sh\necho "$PYTHONWARNINGS|$*" >> "$(dirname "$0")/../calls.log"\n')
    stub.chmod(0o755)
    result = subprocess.run(
        ["bash", "-c", f"source bin/_install.sh && ensure_installed {extras}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".venv" / f".installed-{extras}").exists()
    return (tmp_path / ".venv" / "calls.log").read_text().splitlines()


def test_pip_runs_with_the_editable_install_warning_silenced(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    calls = _install(tmp_path, "base", env)
    installs = [call for call in calls if "-m pip install" in call]
    assert any(call.endswith("-e .") for call in installs), calls
    for call in installs:
        warnings, _, _ = call.partition("|")
        assert warnings == "ignore:Editable installation", call
    # The filter matches the warning as setuptools words it, and only it.
    check = subprocess.run(
        [sys.executable, "-c", f"import warnings; warnings.warn({SETUPTOOLS_WARNING!r}); "
         "warnings.warn('something else')"],
        env={**env, "PYTHONWARNINGS": "ignore:Editable installation"}, capture_output=True, text=True,
    )  # fmt: skip
    assert "Editable installation" not in check.stderr and "something else" in check.stderr


def test_an_operators_own_warning_filters_are_kept(tmp_path):
    calls = _install(tmp_path, "dev", {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning"})
    installs = [call for call in calls if "-m pip install" in call]
    assert any(call.endswith("-e .[dev]") for call in installs), calls
    for call in installs:
        assert call.partition("|")[0] == "ignore:Editable installation,error::DeprecationWarning", call
