"""Backend of Anthropic's memory tool (memory_20250818) over an agent's `memories/` files.

The tool asks its client to run one of six commands on a `/memories` directory: view, create,
str_replace, insert, delete, rename. Here the directory is the agent's workspace files whose path starts
with `memories/`; directories are implied by the paths of the files in them. Results and error messages
follow the texts the tool's reference implementation returns, so a model trained on the tool reads them
as it expects. Errors are domain errors whose detail is the tool's error text: an agent's handler passes
`result` (200) or `detail` (4xx) back to the model as the tool result.

Writes go through the workspace-file services, so every change is versioned like any other file edit.
"""

from dataclasses import dataclass

from django.db import transaction

from memoryproject.errors import Conflict, InvalidInput, NotFound
from vault import services
from vault.models import Agent, WorkspaceFile
from vault.text import clipped

ROOT = "/memories"
ROOT_PREFIX = "memories"
LINE_NUMBER_WIDTH = 6
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")


@dataclass(frozen=True)
class ToolPath:
    shown: str  # as the model wrote it, without a trailing slash: /memories/notes.md
    stored: str  # the workspace path: memories/notes.md

    @property
    def is_root(self) -> bool:
        return self.stored == ROOT_PREFIX


# _path's rules as JSON Schema patterns, so that the OpenAPI document states them (_path stays the
# authority): /memories, or /memories/ and segments that are neither empty, "." nor "..", with no "/", "\"
# or NUL; trailing slashes are dropped. No look-ahead, so that every validator can use them. The stored
# path's limit (255 characters) is left out: the trailing slashes a value may carry do not count.
_SEGMENT = r"(?:[^/\\\x00.][^/\\\x00]*|\.[^/\\\x00.][^/\\\x00]*|\.\.[^/\\\x00]+)"
PATH_PATTERN = rf"^{ROOT}(?:/{_SEGMENT})*/*$"
FILE_PATH_PATTERN = rf"^{ROOT}(?:/{_SEGMENT})+/*$"  # not the directory itself


def _path(value, *, field: str = "path") -> ToolPath:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"Missing `{field}` parameter.", [{"loc": [field], "msg": "required"}])
    shown = value.rstrip("/") or value
    if shown != ROOT and not shown.startswith(ROOT + "/"):
        raise InvalidInput(
            f"Path must start with {ROOT}, got: {clipped(value)}",
            [{"loc": [field], "msg": "outside /memories"}],
        )
    stored = shown[1:]
    if stored != ROOT_PREFIX:
        try:
            services.file_path_check(stored, markdown_only=False)
        except InvalidInput as exc:
            reasons = "; ".join(error["msg"] for error in exc.errors) or exc.detail
            raise InvalidInput(
                f"Invalid path {clipped(value)}: {reasons}.", [{"loc": [field], "msg": reasons}]
            ) from None
    return ToolPath(shown=shown, stored=stored)


def _live(agent: Agent):
    return WorkspaceFile.objects.filter(agent=agent, deleted_at__isnull=True)


def _file(agent: Agent, path: ToolPath, *, lock: bool = False) -> WorkspaceFile | None:
    if path.is_root:
        return None
    files = _live(agent).filter(path=path.stored)
    if lock:
        files = files.select_for_update(of=("self",))
    return files.first()


def _under(agent: Agent, path: ToolPath):
    return _live(agent).filter(path__startswith=path.stored + "/")


def _is_dir(agent: Agent, path: ToolPath) -> bool:
    return path.is_root or _under(agent, path).exists()


def _size(n: int) -> str:
    """Human size like `ls -h`: 0B, 512B, 1.5K, 2M."""
    units = ("B", "K", "M", "G")
    value = float(n)
    unit = 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    return f"{int(value)}{units[unit]}" if value == int(value) else f"{value:.1f}{units[unit]}"


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(
        f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}" for number, line in enumerate(lines, start)
    )


def _missing(path: ToolPath) -> NotFound:
    return NotFound(f"The path {path.shown} does not exist. Please provide a valid path.")


def _view_directory(agent: Agent, path: ToolPath) -> str:
    """Files and directories up to two levels deep, hidden ones (a segment starting with '.') left out."""
    sizes: dict[str, int] = {}
    total = 0
    for stored, size in _under(agent, path).values_list("path", "size"):
        parts = stored[len(path.stored) + 1 :].split("/")
        if any(part.startswith(".") for part in parts):
            continue
        total += size
        for depth in range(1, min(len(parts), 2) + 1):
            is_file = depth == len(parts)
            key = "/".join(parts[:depth]) + ("" if is_file else "/")
            sizes[key] = sizes.get(key, 0) + size
    lines = [f"{_size(total)}\t{path.shown}"]
    lines += [f"{_size(sizes[key])}\t{path.shown}/{key}" for key in sorted(sizes, key=lambda k: k.split("/"))]
    return (
        f"Here're the files and directories up to 2 levels deep in {path.shown}, excluding hidden items:\n"
        + "\n".join(lines)
    )


def _view_range(view_range, n_lines: int) -> tuple[int, int]:
    if (
        not isinstance(view_range, list | tuple)
        or len(view_range) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in view_range)
    ):
        raise InvalidInput(
            "Invalid `view_range`: it should be a list of two integers [start_line, end_line].",
            [{"loc": ["view_range"], "msg": "two integers"}],
        )
    start, end = view_range
    if start < 1 or start > max(n_lines, 1):
        raise InvalidInput(
            f"Invalid `view_range`: {list(view_range)}. Its first element `{start}` should be within the "
            f"range of lines of the file: [1, {n_lines}].",
            [{"loc": ["view_range"], "msg": "start out of range"}],
        )
    if end != -1 and (end < start or end > n_lines):
        raise InvalidInput(
            f"Invalid `view_range`: {list(view_range)}. Its second element `{end}` should be -1 (to the "
            f"end) or within [{start}, {n_lines}].",
            [{"loc": ["view_range"], "msg": "end out of range"}],
        )
    return start, n_lines if end == -1 else end


def memory_view(*, agent: Agent, path: str, view_range=None) -> str:
    target = _path(path)
    file = _file(agent, target)
    if file is None:
        if _is_dir(agent, target):
            if view_range is not None:
                raise InvalidInput(
                    f"The path {target.shown} is a directory; `view_range` applies to files only.",
                    [{"loc": ["view_range"], "msg": "directory"}],
                )
            return _view_directory(agent, target)
        raise _missing(target)
    lines = file.content.split("\n")
    start, end = (1, len(lines)) if view_range is None else _view_range(view_range, len(lines))
    return f"Here's the content of {target.shown} with line numbers:\n" + _numbered(
        lines[start - 1 : end], start
    )


def memory_create(*, agent: Agent, path: str, file_text, changed_by: str) -> str:
    target = _path(path)
    if not isinstance(file_text, str):
        raise InvalidInput("Missing `file_text` parameter.", [{"loc": ["file_text"], "msg": "required"}])
    if _is_dir(agent, target):
        raise Conflict(f"The path {target.shown} is a directory; choose a file name inside it.")
    parts = target.stored.split("/")
    for depth in range(2, len(parts)):
        parent = "/".join(parts[:depth])
        if _live(agent).filter(path=parent).exists():
            raise Conflict(f"Cannot create {target.shown}: /{parent} is a file, not a directory.")
    try:
        services.file_create(
            agent=agent, path=target.stored, content=file_text, changed_by=changed_by, markdown_only=False
        )
    except Conflict:
        raise Conflict(f"File {target.shown} already exists") from None
    return f"File created successfully at: {target.shown}"


def _file_for_edit(agent: Agent, target: ToolPath) -> WorkspaceFile:
    file = _file(agent, target, lock=True)
    if file is None:
        if _is_dir(agent, target):
            raise InvalidInput(f"The path {target.shown} is not a file.")
        raise _missing(target)
    return file


def memory_str_replace(*, agent: Agent, path: str, old_str, new_str, changed_by: str) -> str:
    target = _path(path)
    for name, value in (("old_str", old_str), ("new_str", new_str)):
        if not isinstance(value, str):
            raise InvalidInput(f"Missing `{name}` parameter.", [{"loc": [name], "msg": "required"}])
    if old_str == "":
        raise InvalidInput("`old_str` must not be empty.", [{"loc": ["old_str"], "msg": "empty"}])
    with transaction.atomic():
        file = _file_for_edit(agent, target)
        content = file.content
        count = content.count(old_str)
        if count == 0:
            raise InvalidInput(
                f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {target.shown}."
            )
        if count > 1:
            lines, start = [], 0
            while (position := content.find(old_str, start)) != -1:
                lines.append(content.count("\n", 0, position) + 1)
                start = position + 1
            raise InvalidInput(
                f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                f"{', '.join(map(str, lines))}. Please ensure it is unique"
            )
        changed_line = content.count("\n", 0, content.find(old_str))
        new_content = content.replace(old_str, new_str)
        services.file_write(
            agent=agent, path=target.stored, content=new_content, changed_by=changed_by, markdown_only=False
        )
    new_lines = new_content.split("\n")
    first = max(0, changed_line - 2)
    snippet = new_lines[first : min(len(new_lines), changed_line + 3)]
    return (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        + _numbered(snippet, first + 1)
    )


def memory_insert(*, agent: Agent, path: str, insert_line, insert_text, changed_by: str) -> str:
    target = _path(path)
    if not isinstance(insert_line, int) or isinstance(insert_line, bool):
        raise InvalidInput("Missing `insert_line` parameter.", [{"loc": ["insert_line"], "msg": "required"}])
    if not isinstance(insert_text, str):
        raise InvalidInput("Missing `insert_text` parameter.", [{"loc": ["insert_text"], "msg": "required"}])
    with transaction.atomic():
        file = _file_for_edit(agent, target)
        lines = file.content.splitlines()
        if insert_line < 0 or insert_line > len(lines):
            raise InvalidInput(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range "
                f"[0, {len(lines)}]."
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        services.file_write(
            agent=agent,
            path=target.stored,
            content="\n".join(lines) + "\n",
            changed_by=changed_by,
            markdown_only=False,
        )
    return f"The file {target.shown} has been edited."


def memory_delete(*, agent: Agent, path: str, changed_by: str) -> str:
    target = _path(path)
    if target.is_root:
        raise InvalidInput(f"Cannot delete the {ROOT} directory itself")
    with transaction.atomic():
        file = _file(agent, target, lock=True)
        paths = (
            [file.path]
            if file
            else list(_under(agent, target).select_for_update(of=("self",)).values_list("path", flat=True))
        )
        if not paths:
            raise NotFound(f"The path {target.shown} does not exist")
        for stored in paths:
            services.file_delete(agent=agent, path=stored, deleted_by=changed_by)
    return f"Successfully deleted {target.shown}"


def memory_rename(*, agent: Agent, old_path: str, new_path: str) -> str:
    source = _path(old_path, field="old_path")
    destination = _path(new_path, field="new_path")
    if source.is_root or destination.is_root:
        raise InvalidInput(f"Cannot rename the {ROOT} directory itself")
    if destination.stored.startswith(source.stored + "/"):
        raise InvalidInput(f"Cannot move {source.shown} into itself ({destination.shown})")
    with transaction.atomic():
        file = _file(agent, source, lock=True)
        moves = (
            [(file.path, destination.stored)]
            if file
            else [
                (stored, destination.stored + stored[len(source.stored) :])
                for stored in _under(agent, source)
                .select_for_update(of=("self",))
                .values_list("path", flat=True)
            ]
        )
        if not moves:
            raise NotFound(f"The path {source.shown} does not exist")
        if _file(agent, destination) is not None or _is_dir(agent, destination):
            raise Conflict(f"The destination {destination.shown} already exists")
        parts = destination.stored.split("/")
        for depth in range(2, len(parts)):
            if _live(agent).filter(path="/".join(parts[:depth])).exists():
                raise Conflict(f"Cannot move to {destination.shown}: /{'/'.join(parts[:depth])} is a file.")
        for old, new in moves:
            services.file_rename(agent=agent, old_path=old, new_path=new, markdown_only=False)
    return f"Successfully renamed {source.shown} to {destination.shown}"


def memory_tool_execute(*, agent: Agent, command: dict, changed_by: str) -> str:
    """Run one memory-tool command (a dict as the model sent it) and return the tool's result text."""
    name = command.get("command")
    if name == "view":
        return memory_view(agent=agent, path=command.get("path"), view_range=command.get("view_range"))
    if name == "create":
        return memory_create(
            agent=agent, path=command.get("path"), file_text=command.get("file_text"), changed_by=changed_by
        )
    if name == "str_replace":
        return memory_str_replace(
            agent=agent,
            path=command.get("path"),
            old_str=command.get("old_str"),
            new_str=command.get("new_str"),
            changed_by=changed_by,
        )
    if name == "insert":
        return memory_insert(
            agent=agent,
            path=command.get("path"),
            insert_line=command.get("insert_line"),
            insert_text=command.get("insert_text"),
            changed_by=changed_by,
        )
    if name == "delete":
        return memory_delete(agent=agent, path=command.get("path"), changed_by=changed_by)
    if name == "rename":
        return memory_rename(agent=agent, old_path=command.get("old_path"), new_path=command.get("new_path"))
    raise InvalidInput(
        f"Unknown command {name!r}; use one of: {', '.join(COMMANDS)}.",
        [{"loc": ["command"], "msg": "unknown command"}],
    )
