"""The size rule of docs/architecture.md: no module over 600 lines outside migrations and benchmark
data, no function over 80 lines (its signature, docstring and body). Modules hold one job each; one
grown past this has taken a second job, and is cut by purpose. These tests need no database."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("memoryproject", "vault", "sessions_app", "search", "benchmarks")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _sources() -> list[Path]:
    return sorted(
        path for app in APPS for path in (ROOT / app).rglob("*.py") if "migrations" not in path.parts
    )


def test_no_module_is_over_600_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _sources()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_80_lines():
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert long == {}


def test_it_reads_the_code_it_guards():
    """A guard that reads nothing passes everything."""
    sources = _sources()
    assert len(sources) > 100
    assert ROOT / "vault" / "services" / "entries.py" in sources
