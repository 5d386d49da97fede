"""Workspace file tools and Anthropic's memory tool over /memories (as the REST API does)."""

from typing import Annotated, Literal

from pydantic import Field

from memoryproject.booleans import Boolean
from memoryproject.mcp.annotations import DESTRUCTIVE, DESTRUCTIVE_IDEMPOTENT, READ_ONLY, dump
from memoryproject.mcp.caller import agent_for_read, agent_for_write, current_caller, nul_refuse, tool_adapter
from memoryproject.mcp.tools_vault import AgentArg, EntryText
from memoryproject.numbers import Integer
from vault import memory_tool as memory_tool_backend
from vault import selectors, services
from vault.files_schemas import FileEditOut, FileOut, FileWriteOut, MemoryToolIn
from vault.models import TokenScope
from vault.services.files import WORKSPACE_PATH_MAX

PathArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=WORKSPACE_PATH_MAX,
        description="Workspace path, e.g. MEMORY.md or memory/2026-01-31.md",
    ),
]


@tool_adapter
def workspace_read(path: PathArg, agent: AgentArg = None) -> dict:
    nul_refuse("path", path)
    target = agent_for_read(current_caller(), agent)
    services.daily_notes_flush(agent=target)
    return dump(FileOut, selectors.file_get(agent=target, path=path))


@tool_adapter
def workspace_write(
    path: PathArg,
    content: Annotated[EntryText, Field(description="The file's whole new content, in markdown")],
    agent: AgentArg = None,
) -> dict:
    nul_refuse("path", path)
    caller = current_caller()
    target = agent_for_write(caller, agent)
    file, created = services.file_write(
        agent=target,
        path=path,
        content=content,
        changed_by=caller.principal.label,
        markdown_only=not path.startswith("memories/"),
    )
    file.created = created
    file.overwritten = not created
    return dump(FileWriteOut, file)


@tool_adapter
def workspace_edit(
    path: PathArg,
    old_text: Annotated[str, Field(min_length=1, description="Exact text to replace; must occur once")],
    new_text: Annotated[EntryText, Field(description="The text to put in its place")],
    replace_all: Annotated[Boolean, Field(description="Replace every occurrence of old_text")] = False,
    agent: AgentArg = None,
) -> dict:
    nul_refuse("path", path)
    caller = current_caller()
    target = agent_for_write(caller, agent)
    file, count = services.file_edit(
        agent=target,
        path=path,
        old_text=old_text,
        new_text=new_text,
        replace_all=replace_all,
        changed_by=caller.principal.label,
    )
    file.replacements = count
    file.replace_all = replace_all
    return dump(FileEditOut, file)


@tool_adapter
def memory(
    command: Annotated[
        Literal["view", "create", "str_replace", "insert", "delete", "rename"],
        Field(description="What to do; each command takes the arguments said for it below"),
    ],
    path: Annotated[
        str | None,
        Field(
            description="view, create, str_replace, insert, delete: a path under /memories, e.g. /memories/notes.md"
        ),
    ] = None,
    view_range: Annotated[
        list[Integer] | None,
        Field(description="view of a file: [first line, last line], 1-based; -1 for the end"),
    ] = None,
    file_text: Annotated[EntryText | None, Field(description="create: the new file's content")] = None,
    old_str: Annotated[
        str | None, Field(description="str_replace: the exact text to replace, found once")
    ] = None,
    new_str: Annotated[str | None, Field(description="str_replace: the text to put in its place")] = None,
    insert_line: Annotated[
        Integer | None,
        Field(
            description="insert: the line after which to insert (0: at the top)",
            json_schema_extra={"minimum": 0},
        ),
    ] = None,
    insert_text: Annotated[str | None, Field(description="insert: the text to insert")] = None,
    old_path: Annotated[str | None, Field(description="rename: the path under /memories to move")] = None,
    new_path: Annotated[str | None, Field(description="rename: its new path under /memories")] = None,
    agent: AgentArg = None,
) -> str:
    arguments = {
        "command": command,
        "path": path,
        "view_range": view_range,
        "file_text": file_text,
        "old_str": old_str,
        "new_str": new_str,
        "insert_line": insert_line,
        "insert_text": insert_text,
        "old_path": old_path,
        "new_path": new_path,
    }
    payload = MemoryToolIn(**{k: v for k, v in arguments.items() if v is not None})
    caller = current_caller()
    if payload.command == "view":
        caller.principal.require(TokenScope.READ)
        target = agent_for_read(caller, agent)
    else:
        target = agent_for_write(caller, agent)
    return memory_tool_backend.memory_tool_execute(
        agent=target, command=payload.dict(exclude_none=True), changed_by=caller.principal.label
    )


def register(server) -> None:
    server.add_tool(
        workspace_read,
        annotations=READ_ONLY,
        description=(
            "Read one of your workspace files (MEMORY.md, PROFILE.md, AGENTS.md, SOUL.md, daily notes "
            "memory/YYYY-MM-DD.md) in full. Returns its content and settings."
        ),
    )
    server.add_tool(
        workspace_write,
        annotations=DESTRUCTIVE_IDEMPOTENT,
        description=(
            "Create or overwrite a whole workspace file, e.g. today's daily note; the previous content is "
            "kept in its history. Prefer workspace_edit for small changes. Needs a write token."
        ),
    )
    server.add_tool(
        workspace_edit,
        annotations=DESTRUCTIVE,
        description=(
            "Change a workspace file by exact find-and-replace: old_text must occur exactly once (or set "
            "replace_all). Returns the new content and the number of replacements. Needs a write token."
        ),
    )
    server.add_tool(
        memory,
        annotations=DESTRUCTIVE,
        description=(
            "Anthropic's memory tool over the /memories directory: view (a directory or file), create, "
            "str_replace, insert, delete, rename. Check /memories at the start of a task and record "
            "progress there as you work. Returns the command's text result. Writing commands need a "
            "write token."
        ),
    )
