"""The import rules of docs/architecture.md, checked on the code's own imports.

Every module of the product is parsed with `ast`; imports at the top and inside functions both count.
Data flows one way: sessions_app distils into vault, search reads both, nothing flows back. These tests
need no database.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("memoryproject", "vault", "sessions_app", "search", "benchmarks")
PRODUCT_APPS = ("memoryproject", "vault", "sessions_app", "search")
FORBIDDEN = {
    "vault": {"sessions_app", "search", "benchmarks"},
    "sessions_app": {"search", "benchmarks"},
    "search": {"benchmarks"},
    "memoryproject": {"benchmarks"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The product module an imported name lives in (longest known prefix), or None for libraries."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported product module, line) for every import statement anywhere in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names] if base else []
            names.append(base)
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target and target != module:
                found.append((target, node.lineno))
    return found


GRAPH: dict[str, set[str]] = defaultdict(set)
LINES: dict[tuple[str, str], int] = {}
for _module, _path in MODULES.items():
    for _target, _line in _imports(_module, _path):
        GRAPH[_module].add(_target)
        LINES.setdefault((_module, _target), _line)


def _app(module: str) -> str:
    return module.split(".")[0]


def _where(module: str, target: str) -> str:
    return f"{MODULES[module].relative_to(ROOT)}:{LINES[(module, target)]} imports {target}"


@pytest.mark.parametrize("app", sorted(FORBIDDEN))
def test_it_keeps_the_arrows_between_apps_one_way(app):
    wrong = [
        _where(module, target)
        for module, targets in GRAPH.items()
        if _app(module) == app
        for target in targets
        if _app(target) in FORBIDDEN[app]
    ]
    assert wrong == []


def test_it_finds_no_import_cycle_between_modules():
    """Tarjan's strongly connected components: any component of two or more modules is a cycle."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(GRAPH.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert cycles == []


def _is_layer(module: str, layer: str) -> bool:
    parts = module.split(".")
    return layer in parts


def test_it_keeps_selectors_from_importing_services():
    wrong = [
        _where(module, target)
        for module, targets in GRAPH.items()
        if _is_layer(module, "selectors")
        for target in targets
        if _is_layer(target, "services")
    ]
    assert wrong == []


def test_it_keeps_the_product_free_of_benchmarks():
    wrong = [
        _where(module, target)
        for module, targets in GRAPH.items()
        if _app(module) in PRODUCT_APPS
        for target in targets
        if _app(target) == "benchmarks"
    ]
    assert wrong == []


def test_it_reads_the_modules_it_guards():
    """A guard that parses nothing passes everything: make sure the graph is real."""
    assert "vault.models" in MODULES and "sessions_app.models" in MODULES
    assert any("vault.models" in targets for targets in GRAPH.values())
