"""Every environment variable the server or its scripts read is in the README's configuration table
with its default, and every variable the table names is read somewhere.

The reads are found in the source, not by importing settings: a variable read by a command
(MEMORY_TOKEN), by the ASGI app (WEB_THREADS), by `serve` through a table of its options, or by a
script under bin/ would not show at import time.
"""

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memoryproject", "vault", "sessions_app", "search", "benchmarks")
ENV_READERS = {"env_str", "env_bool", "env_int", "env_float", "env_list", "env_cron", "_raw"}
NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
# Read by a library, not by this code: the OpenMP runtime of the local embedding model (the app only
# sets GOMP_SPINCOUNT's default for it).
READ_BY_LIBRARIES = {"OMP_NUM_THREADS", "GOMP_SPINCOUNT"}


def python_files() -> list[Path]:
    files = [ROOT / "manage.py"]
    for package in PACKAGES:
        files += sorted((ROOT / package).rglob("*.py"))
    return files


def _name_of(node: ast.AST, constants: set[str]) -> set[str]:
    """The variable names a read's first argument can be: a literal, an f-string (as a pattern with
    `*`), or, for a variable, every name-like constant of the module (e.g. serve's option table)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.JoinedStr):
        return {"".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values)}
    return set(constants)


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _read_names(node: ast.AST, in_env_module: bool, constants: set[str]) -> set[str]:
    """The variables `node` reads from the environment, if it is such a read."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        reader = called in ENV_READERS and not in_env_module  # env.py's readers take the name given
        if reader or called == "getenv" or (called == "get" and _is_environ(func.value)):
            return _name_of(node.args[0], constants)
    elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
        return _name_of(node.slice, constants)
    elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
        return _name_of(node.left, constants)
    return set()


# The scan parses every module of the project (over a second of CPU); the tests read its result only,
# so it runs once a process, not once a test and per-kind pattern.
@functools.cache
def python_reads() -> dict[str, set[str]]:
    """{variable name or pattern: {file:line, ...}} for every read of the environment in the code."""
    reads: dict[str, set[str]] = {}
    for path in python_files():
        tree = ast.parse(path.read_text(), str(path))
        constants = {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and ((NAME.match(n.value) and "_" in n.value) or n.value in ("HOST", "PORT", "DEBUG"))
        }
        for node in ast.walk(tree):
            for name in _read_names(node, path.name == "env.py", constants):
                reads.setdefault(name, set()).add(f"{path.relative_to(ROOT)}:{node.lineno}")
    return reads


def script_reads() -> dict[str, set[str]]:
    """Upper-case variables the scripts under bin/ read (${NAME...} or $NAME)."""
    reads: dict[str, set[str]] = {}
    for path in sorted((ROOT / "bin").iterdir()):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            for name in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", line):
                reads.setdefault(name, set()).add(f"bin/{path.name}:{number}")
    return reads


def documented() -> dict[str, str]:
    """{variable name (a <KIND> part as `*`): its default} from the README's configuration table."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    table: dict[str, str] = {}
    for row in section.splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
        if len(cells) != 3 or cells[0] in ("variable", "---"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            table[re.sub(r"<[A-Z]+>", "*", name)] = cells[1]
    return table


def matches(name: str, pattern: str) -> bool:
    return re.fullmatch(re.escape(pattern).replace(r"\*", "[A-Z0-9_]+"), name) is not None


def test_it_finds_reads_outside_settings_and_through_variables():
    """The scan itself: reads the test must not miss, each made another way."""
    reads = {**python_reads(), **script_reads()}
    for name, where in {
        "MEMORY_TOKEN": "memoryproject/management/commands/mcp.py",  # os.environ.get in a command
        "WEB_THREADS": "memoryproject/asgi.py",  # env_int outside settings
        "WEB_WORKERS": "memoryproject/management/commands/serve.py",  # env_int(variable) from a table
        "OMP_WAIT_POLICY": "memoryproject/embeddings.py",  # `in os.environ`
        "PORT": "memoryproject/serve_state.py",
        "MEMORY_SEARCH_FUSION": "memoryproject/settings.py",
        "SKIP_BROWSER_INSTALL": "bin/test",
    }.items():
        assert any(place.startswith(where) for place in reads.get(name, ())), (name, reads.get(name))


def test_every_variable_read_is_in_the_readme_configuration_table_with_its_default():
    table = documented()
    missing = {
        name: sorted(where)
        for name, where in {**python_reads(), **script_reads()}.items()
        if not any(matches(name, pattern) or name == pattern for pattern in table)
    }
    assert missing == {}, f"add these to the README's Configuration table: {missing}"
    assert [name for name, default in table.items() if not default] == []


def test_every_variable_in_the_readme_configuration_table_is_read():
    names = set(python_reads()) | set(script_reads()) | READ_BY_LIBRARIES
    unread = [pattern for pattern in documented() if not any(matches(name, pattern) for name in names)]
    assert unread == [], f"the README documents variables nothing reads: {unread}"


def test_each_kind_of_a_per_kind_variable_has_its_default_documented():
    table = documented()
    for pattern, default in table.items():
        if "*" not in pattern:
            continue
        kinds = [name for name in python_reads() if matches(name, pattern)]
        prefix, suffix = pattern.split("*")
        for name in kinds:
            kind = name.removeprefix(prefix).removesuffix(suffix).lower()
            assert re.search(rf"\b{kind} \d", default), f"{name}: no default for {kind} in {default!r}"
