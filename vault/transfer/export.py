"""Export memory as .memory/ layout: a readable, Obsidian-friendly markdown vault.

```
_project.md                       the project context
{agent}/{category}.md             entries, newest first: <!-- id:N -->, ## date · #tags, content, ---
{agent}/workspace/{path}          the agent's workspace files (AGENTS.md, memory/..., memories/...)
{agent}/workspace/.workspace.json enabled flag and sort order of each file (hidden from Obsidian)
```

`vault.transfer.layouts.import_memory_dir` reads this layout back: exporting and importing into an empty project
gives the same entries (category, content, tags, dates, status, importance), files and project context.
"""

import io
import json
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from vault import selectors, services
from vault.models import Agent, Category, Project, VaultEntry

CATEGORY_TITLES = {
    "decisions": "Decisions",
    "lessons": "Lessons",
    "tasks": "Tasks",
    "projects": "Projects",
    "handoffs": "Handoffs",
}
WORKSPACE_DIR = "workspace"
WORKSPACE_MANIFEST = ".workspace.json"
DEFAULT_IMPORTANCE = 0.5


def date_format(value: datetime) -> str:
    """UTC, like the seed's `toISOString().slice(0, 16)` but with seconds (and microseconds when set) so
    that a round trip keeps the exact time."""
    value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds" if value.microsecond else "seconds")


def entry_marker(entry: VaultEntry) -> str:
    marker_id = entry.legacy_id or str(entry.pk)
    marker_id = "".join(c for c in marker_id if not c.isspace() and c not in "<>") or str(entry.pk)
    attributes = [f"id:{marker_id}"]
    if entry.status != "active":
        attributes.append(f"status:{entry.status}")
    if entry.importance != DEFAULT_IMPORTANCE:
        attributes.append(f"importance:{entry.importance:g}")
    return f"<!-- {' '.join(attributes)} -->"


def entry_render(entry: VaultEntry) -> str:
    header = f"## {date_format(entry.created_at)}"
    if entry.tags:
        header += " · " + " ".join(f"#{tag}" for tag in entry.tags)
    return f"{entry_marker(entry)}\n{header}\n{entry.content.strip()}\n---\n"


def category_render(agent: Agent, category: str, entries: Iterable[VaultEntry]) -> str:
    blocks = [entry_render(entry) for entry in entries]
    return f"# {CATEGORY_TITLES[category]} · {agent.slug}\n\n" + "\n".join(blocks)


def agent_folder(agent: Agent) -> str:
    """The agent's folder in an export. A slug of dots stored before such slugs were refused gets its
    dots percent-encoded: a folder of its own, which an import refuses rather than misreads."""
    slug = agent.slug
    return slug.replace(".", "%2E") if slug.strip(".") == "" else slug


def export_files(*, project: Project, agents: Iterable[Agent]) -> Iterator[tuple[str, str]]:
    """(relative path, text) of every file of the export, in a stable order."""
    yield "_project.md", project.context
    for agent in agents:
        folder = agent_folder(agent)
        entries = selectors.entry_list(agent=agent, status=None)
        for category in Category.values:
            chosen = entries.filter(category=category)
            if chosen.exists():
                yield (
                    f"{folder}/{category}.md",
                    category_render(agent, category, chosen.iterator(chunk_size=2000)),
                )
        manifest = {}
        services.daily_notes_flush(agent=agent)
        for file in selectors.files_list(agent=agent).order_by("path"):
            manifest[file.path] = {"enabled": file.enabled, "sort_order": file.sort_order}
            yield f"{folder}/{WORKSPACE_DIR}/{file.path}", file.content
        if manifest:
            yield (
                f"{folder}/{WORKSPACE_DIR}/{WORKSPACE_MANIFEST}",
                json.dumps(manifest, indent=2, sort_keys=True) + "\n",
            )


@dataclass
class ExportSummary:
    path: Path
    files: int = 0
    entries: int = 0
    agents: list[str] = field(default_factory=list)


def export_memory_dir(
    *, path: Path, project: Project, agents: Iterable[Agent] | None = None, progress=None
) -> ExportSummary:
    """Write the export under `path` (created if missing). Existing files at the same paths are replaced;
    nothing else in the folder is touched."""
    agents = list(agents if agents is not None else project.agents.order_by("slug"))
    summary = ExportSummary(
        path=path,
        agents=[agent.slug for agent in agents],
        entries=VaultEntry.objects.filter(agent__in=agents).count(),
    )
    path.mkdir(parents=True, exist_ok=True)
    root = path.resolve()
    for relative, text in export_files(project=project, agents=agents):
        target = (path / relative).resolve()
        if not target.is_relative_to(root):  # paths are checked on write; never trust them on export
            raise ValueError(f"refusing to write outside the export folder: {relative}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        summary.files += 1
        if progress:
            progress(f"wrote {relative}")
    return summary


def export_zip(*, project: Project, agents: Iterable[Agent]) -> bytes:
    """The same export as a zip archive (for GET /agents/{agent}/export)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for relative, text in export_files(project=project, agents=agents):
            archive.writestr(relative, text)
    return buffer.getvalue()
