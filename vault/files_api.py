"""Workspace files and the memory-tool backend. (The export, which holds sessions too, is served by
sessions_app.api.)"""

from ninja import Query, Router, Status

from vault import memory_tool, selectors, services
from vault.api import agent_for_write
from vault.files_schemas import (
    FileEditIn,
    FileEditOut,
    FileIn,
    FileList,
    FileOut,
    FilePatch,
    FileVersionOut,
    FileWriteOut,
    MemoryToolIn,
    MemoryToolOut,
)
from vault.models import TokenScope

router = Router(tags=["files"])


# Routes ending in /edit and /history come first: `{path:path}` would otherwise swallow them. Workspace
# paths end in `.md` (or live under memories/), so no file is called `.../edit`.
@router.post(
    "/agents/{agent}/files/{path:path}/edit",
    response=FileEditOut,
    summary="Edit a file by exact find-and-replace (versioned)",
)
def file_edit(request, agent: str, path: str, payload: FileEditIn):
    target = agent_for_write(request, agent)
    file, count = services.file_edit(
        agent=target,
        path=path,
        old_text=payload.old_text,
        new_text=payload.new_text,
        replace_all=payload.replace_all,
        changed_by=request.auth.label,
    )
    file.replacements = count
    file.replace_all = payload.replace_all
    return file


@router.get(
    "/agents/{agent}/files/{path:path}/history",
    response=list[FileVersionOut],
    summary="Earlier contents of a file, newest first",
)
def file_history(request, agent: str, path: str):
    target = selectors.agent_get_for_principal(request.auth, agent)
    services.daily_notes_flush(agent=target)
    return list(selectors.file_history(selectors.file_get(agent=target, path=path)))


@router.get("/agents/{agent}/files", response=FileList, summary="List workspace files in prompt order")
def file_list(request, agent: str, prefix: str = Query("", max_length=255)):
    target = selectors.agent_get_for_principal(request.auth, agent)
    services.daily_notes_flush(agent=target)
    files = list(selectors.files_list(agent=target, prefix=prefix))
    return {"agent": target.slug, "prefix": prefix, "count": len(files), "items": files}


@router.get("/agents/{agent}/files/{path:path}", response=FileOut, summary="Read a workspace file")
def file_get(request, agent: str, path: str):
    target = selectors.agent_get_for_principal(request.auth, agent)
    services.daily_notes_flush(agent=target)
    return selectors.file_get(agent=target, path=path)


@router.put(
    "/agents/{agent}/files/{path:path}",
    response={200: FileWriteOut, 201: FileWriteOut},
    summary="Create or overwrite a file (the previous content is versioned)",
)
def file_put(request, agent: str, path: str, payload: FileIn):
    target = agent_for_write(request, agent)
    file, created = services.file_write(
        agent=target,
        path=path,
        content=payload.content,
        changed_by=request.auth.label,
        enabled=payload.enabled,
        sort_order=payload.sort_order,
        markdown_only=not path.startswith("memories/"),
    )
    file.created = created
    file.overwritten = not created
    return Status(201 if created else 200, file)


@router.patch(
    "/agents/{agent}/files/{path:path}",
    response=FileOut,
    summary="Change whether a file is injected (enabled) and its sort order",
)
def file_patch(request, agent: str, path: str, payload: FilePatch):
    target = agent_for_write(request, agent)
    return services.file_settings_set(
        agent=target, path=path, enabled=payload.enabled, sort_order=payload.sort_order
    )


@router.delete(
    "/agents/{agent}/files/{path:path}",
    response={204: None},
    summary="Delete a file (soft: its last content is kept in its history)",
)
def file_delete(request, agent: str, path: str):
    target = agent_for_write(request, agent)
    services.file_delete(agent=target, path=path, deleted_by=request.auth.label)
    return Status(204, None)


@router.post(
    "/agents/{agent}/memory-tool",
    response=MemoryToolOut,
    summary="Run one command of Anthropic's memory tool over the agent's memories/ files",
)
def memory_tool_run(request, agent: str, payload: MemoryToolIn):
    if payload.command == "view":
        request.auth.require(TokenScope.READ)
        target = selectors.agent_get_for_principal(request.auth, agent)
    else:
        target = agent_for_write(request, agent)
    result = memory_tool.memory_tool_execute(
        agent=target, command=payload.dict(exclude_none=True), changed_by=request.auth.label
    )
    return {"result": result}
