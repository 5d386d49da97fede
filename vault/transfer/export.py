r"""Export memory as .memory/ layout: a readable, Obsidian-friendly markdown vault.

```
.export.json                      {"format": 2, "redaction_enabled": ..., "agents": {folder: {"name"}},
                                  "review_policies": [...]}: written by this export (hidden)
_project.md                       the project context
{agent}/{category}.md             entries, newest first (below)
{agent}/.entries.json             each entry's author, source, provenance, updated_at and access count
{agent}/.review.json              why entries wait for review (their review items, by the entries' ids here)
{agent}/.versions.json            the edit history of its entries (by their ids here), of its deleted entries
                                  and of its workspace files (by path); `.project-versions.json` the project
                                  context's (vault.transfer.histories)
{agent}/workspace/{path}          the agent's workspace files (AGENTS.md, memory/..., memories/..., any path)
{agent}/workspace/.workspace.json every file's enabled flag and sort order (hidden from Obsidian)
{agent}/sessions/{id}.json        with sessions_app's `extra`: each session whole, its state rows, working buffer
                                  and transitions included (sessions_app.session_files, session_history)
.vault/checkpoints/{agent}.json   with sessions_app's `extra`: the agent's checkpoint
```

`_project.md` and the workspace files hold the stored text exactly, as UTF-8 bytes: line endings (CRLF, a
lone CR) and a leading U+FEFF included. The import reads them back that way: `_project.md` when
`.export.json` is beside it, a workspace file when `.workspace.json` lists it. Files without those
(written by hand or another tool) are read as text files: CRLF becomes LF, a byte order mark is dropped.

An entry of a category file is written as

```
<!-- id:42 format:2 status:pending importance:0.8 -->
## 2026-03-16T16:51:00 · #tag1 #tag2
the content, as stored, escaped (below)
---
```

followed by a blank line before the next marker. `status:` and `importance:` appear when they differ from
active and 0.5 (importance written exactly), `supersedes:` (the id of the entry it replaced) when the entry
supersedes another, so that the import links its supersede chains again. The content sits exactly between the header line's newline and the `\n---` that closes the
entry: nothing is stripped or added, so whitespace at either end survives. `format:2` says the content was
escaped, so that nothing in it can be read as structure:

- a line of the content that starts with `<!-- id:` (spaces allowed after `<!--`), after any backslashes
  already there, gets one more backslash in front (`\<!-- id:5 -->`). Only a line starting with such a
  comment is an entry's marker, so a content line never is; outside code, markdown shows the escaped
  line as the comment's text rather than hiding it;
- a carriage return is written `&#13;` (outside code, markdown reads it as the carriage return it is),
  and a `&#13;` already in the content gets one more `amp;` (`&amp;#13;`): reading a file as text turns
  CR and CRLF into LF, which would change the content.

The import removes one backslash from such lines and reads the entities back; a `---` line, a `## date`
line, a code fence or anything else inside the content needs no escaping, because an entry ends only
at the next marker. Entries without `format:2` (earlier exports, files written by hand) are read as
before: content stripped, nothing unescaped.

`.entries.json` holds, by the entries' ids in the export, one entry a line, what the markdown does not
show: `{"format": 1, "entries": {"42": {"author": "token:dev", "source": "extraction", "updated_at": ...,
"access_count": 3, "last_accessed_at": ..., "confidence": 0.8, "source_session": "17", "source_messages":
["301", "302"]}}}` (`source_session` names `sessions/17.json`, `source_messages` the keys of messages in
it; the import points them at the session and messages it stores from that file). An export without it
(an earlier one, a folder written by hand) imports as before: author "import", source import, never read.

`vault.transfer.layouts.import_memory_dir` reads this layout back: exporting and importing into an empty
project gives the same entries (category, content byte for byte, tags, dates, status, importance, author,
source, confidence, provenance, access counts), files
(every path, content byte for byte, enabled flag, sort order) and project context (byte for byte), and
importing an unchanged export into the project it came from changes nothing. A file of a workspace folder
that `.workspace.json` does not list and the workspace rules do not take is reported, as is a listed file
that is missing.
"""

import json
import re
import tempfile
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from django.db import connection, transaction
from django.db.models import Exists, OuterRef

from memoryproject.errors import InvalidInput
from vault import selectors, services
from vault.models import (
    Agent,
    Category,
    EntryVersion,
    Project,
    ProjectContextVersion,
    ReviewItem,
    ReviewPolicy,
    VaultEntry,
    WorkspaceFileVersion,
)

CATEGORY_TITLES = {
    "decisions": "Decisions",
    "lessons": "Lessons",
    "tasks": "Tasks",
    "projects": "Projects",
    "handoffs": "Handoffs",
}
WORKSPACE_DIR = "workspace"
WORKSPACE_MANIFEST = ".workspace.json"
SESSIONS_DIR = "sessions"  # an agent's sessions, one JSON file each (written by sessions_app's `extra`)
CHECKPOINTS_DIR = ".vault/checkpoints"  # agents' checkpoints, seed 000's place for them
EXPORT_MANIFEST = ".export.json"
REVIEW_FILE = ".review.json"  # an agent's review items: {"format": 1, "items": [...]}
ENTRIES_FILE = ".entries.json"  # what an agent's entries carry besides their markdown (below)
ENTRIES_FILE_FORMAT = 1
VERSIONS_FILE = ".versions.json"  # an agent's entries' and workspace files' versions (below)
PROJECT_VERSIONS_FILE = ".project-versions.json"  # the project context's earlier texts
VERSIONS_FILE_FORMAT = 1
# A delete version's restore_state keys holding this server's ids (they would name other rows elsewhere).
_RESTORE_STATE_IDS = {"source_session_id", "source_message_ids", "supersedes_id", "reactivated_id"}
DEFAULT_IMPORTANCE = 0.5
ZIP_SPOOL_BYTES = 8 * 1024 * 1024  # a zip export larger than this is written to a temporary file
ENTRY_FORMAT = "2"
# The start of a content line that an import could read as a marker, after backslashes already there.
_MARKER_LINE_RE = re.compile(r"^(?=\\*<!--\s*id:)", re.MULTILINE)
_ESCAPED_MARKER_LINE_RE = re.compile(r"^\\(?=\\*<!--\s*id:)", re.MULTILINE)
_CR_ENTITY_RE = re.compile(r"&((?:amp;)*)#13;")


def date_format(value: datetime) -> str:
    """UTC, like the seed's `toISOString().slice(0, 16)` but with seconds (and microseconds when set) so
    that a round trip keeps the exact time."""
    value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds" if value.microsecond else "seconds")


def content_escape(content: str) -> str:
    """An entry's content as a category file holds it (format 2): no line of it reads as a marker, no
    carriage return in it. `content_unescape` gives the content back exactly."""
    content = _MARKER_LINE_RE.sub("\\\\", content)
    content = _CR_ENTITY_RE.sub(lambda match: f"&amp;{match.group(1)}#13;", content)
    return content.replace("\r", "&#13;")


def content_unescape(text: str) -> str:
    """The inverse of `content_escape`."""
    text = _CR_ENTITY_RE.sub(lambda match: f"&{match.group(1)[4:]}#13;" if match.group(1) else "\r", text)
    return _ESCAPED_MARKER_LINE_RE.sub("", text)


def _marker_id_clean(value: str) -> str:
    return "".join(c for c in value if not c.isspace() and c not in "<>")


def marker_ids(agent: Agent) -> dict[int, str]:
    """Each entry's id in the export (entry pk -> id), unique within the agent: its legacy id (the id in the
    system it was imported from) or else its pk. An import takes an id it already holds for the same
    entry, so two entries of one agent must never share one; but a legacy id from an earlier export is a
    small number like this server's pks. Legacy ids are given first, in pk order; an id already given
    gets `-{pk}` added until it is free. The same data gives the same ids on every export."""
    rows = VaultEntry.objects.filter(agent=agent).values_list("pk", "legacy_id")
    ids: dict[int, str] = {}
    used: set[str] = set()
    for pk, legacy_id in sorted(rows, key=lambda row: (not row[1], row[0])):
        candidate = _marker_id_clean(legacy_id) or str(pk)
        while candidate in used:
            candidate = f"{candidate}-{pk}"
        used.add(candidate)
        ids[pk] = candidate
    return ids


def entry_marker(entry: VaultEntry, ids: dict[int, str]) -> str:
    attributes = [f"id:{ids[entry.pk]}", f"format:{ENTRY_FORMAT}"]
    if entry.status != "active":
        attributes.append(f"status:{entry.status}")
    if entry.importance != DEFAULT_IMPORTANCE:
        attributes.append(f"importance:{entry.importance!r}")  # exactly: float() reads it back
    if entry.supersedes_id in ids:
        attributes.append(f"supersedes:{ids[entry.supersedes_id]}")
    return f"<!-- {' '.join(attributes)} -->"


def entry_render(entry: VaultEntry, ids: dict[int, str]) -> str:
    header = f"## {date_format(entry.created_at)}"
    if entry.tags:
        header += " · " + " ".join(f"#{tag}" for tag in entry.tags)
    return f"{entry_marker(entry, ids)}\n{header}\n{content_escape(entry.content)}\n---\n"


def category_render(agent: Agent, category: str, entries: Iterable[VaultEntry], ids: dict[int, str]) -> str:
    blocks = [entry_render(entry, ids) for entry in entries]
    return f"# {CATEGORY_TITLES[category]} · {agent.slug}\n\n" + "\n".join(blocks)


def agent_folder(agent: Agent) -> str:
    """The agent's folder in an export. A slug of dots stored before such slugs were refused gets its
    dots percent-encoded: a folder of its own, which an import refuses rather than misreads."""
    slug = agent.slug
    return slug.replace(".", "%2E") if slug.strip(".") == "" else slug


# What another app adds to an agent's part of an export (sessions_app: its sessions and checkpoint): given
# the agent and its folder, (relative path, text) pairs, read inside the export's snapshot.
AgentFiles = Callable[[Agent, str], Iterable[tuple[str, str]]]


def _review_file(
    agent: Agent, ids: dict[int, str], other_ids: Callable[[Agent], dict[int, str]]
) -> str | None:
    """The agent's review items (why its entries wait, and what curators decided), each naming its entry
    and the other entry it concerns by their ids in the export, so that an import links them to the
    entries it stores; None when the agent has none."""
    items = []
    for item in (
        ReviewItem.objects.filter(entry__agent=agent).select_related("other_entry__agent").order_by("id")
    ):
        other = item.other_entry
        items.append(
            {
                "entry": ids[item.entry_id],
                "kind": item.kind,
                "other": None
                if other is None
                else {"agent": agent_folder(other.agent), "id": other_ids(other.agent)[other.pk]},
                "detail": item.detail,
                "created_at": item.created_at.isoformat(),
                "resolved_at": item.resolved_at.isoformat() if item.resolved_at else None,
                "resolution": item.resolution,
                "resolved_by": item.resolved_by,
            }
        )
    return json.dumps({"format": 1, "items": items}, ensure_ascii=False, indent=1) + "\n" if items else None


def _entries_file(agent: Agent, ids: dict[int, str]) -> str | None:
    """What the agent's entries carry besides their markdown, by their ids in the export, one entry a
    line: who wrote each (`author`), how (`source`), when it was last changed (`updated_at`), how often
    it was read (`access_count`, `last_accessed_at`), how sure its extractor was (`confidence`) and
    where it came from (`source_session`: its session's file in `sessions/`, `source_messages`: the
    keys of its messages in that file). None when the agent has no entries."""
    lines = []
    rows = VaultEntry.objects.filter(agent=agent).order_by("id")
    for row in rows.values(*_ENTRY_META_FIELDS).iterator(chunk_size=2000):
        about = {"author": row["created_by"], "source": row["source"], "updated_at": _iso(row["updated_at"])}
        if row["access_count"]:
            about["access_count"] = row["access_count"]
        if row["last_accessed_at"] is not None:
            about["last_accessed_at"] = _iso(row["last_accessed_at"])
        if row["confidence"] is not None:
            about["confidence"] = row["confidence"]
        if row["source_session_id"] is not None:
            about["source_session"] = str(row["source_session_id"])
        if row["source_message_ids"]:
            about["source_messages"] = [str(pk) for pk in row["source_message_ids"]]
        lines.append(f"{json.dumps(ids[row['id']])}: {json.dumps(about, ensure_ascii=False)}")
    if not lines:
        return None
    return f'{{"format": {ENTRIES_FILE_FORMAT}, "entries": {{\n' + ",\n".join(lines) + "\n}}\n"


def _entry_version(version: EntryVersion) -> dict:
    state = {k: v for k, v in version.restore_state.items() if k not in _RESTORE_STATE_IDS}
    return {
        "action": version.action,
        "category": version.category,
        "content": version.content,
        "tags": list(version.tags),
        "status": version.status,
        "importance": version.importance,
        "changed_by": version.changed_by,
        "changed_at": _iso(version.changed_at),
    } | ({"restore_state": state} if state else {})


def _versions_file(agent: Agent, ids: dict[int, str]) -> str | None:
    """The edit history of the agent's entries (by their ids in the export) and of its live workspace
    files (by path), oldest first, each version as stored: action, content, author (`changed_by`) and
    date, and for an entry its category, tags, status and importance too; and the history of its deleted
    entries (`deleted`, by their ids here), which a curator sees on a deleted entry's page and restores
    it from. None when there is none. Deleted workspace files' versions are not exported: nothing shows
    them or brings such a file back."""
    entries: dict[str, list[dict]] = {}
    rows = EntryVersion.objects.filter(agent=agent, entry_id__in=list(ids)).order_by("changed_at", "id")
    for version in rows.iterator(chunk_size=2000):
        entries.setdefault(ids[version.entry_id], []).append(_entry_version(version))
    deleted: dict[str, list[dict]] = {}
    rows = EntryVersion.objects.filter(agent=agent).exclude(
        Exists(VaultEntry.objects.filter(pk=OuterRef("entry_id")))
    )
    for version in rows.order_by("entry_id", "changed_at", "id").iterator(chunk_size=2000):
        deleted.setdefault(str(version.entry_id), []).append(_entry_version(version))
    files: dict[str, list[dict]] = {}
    rows = WorkspaceFileVersion.objects.filter(file__agent=agent, file__deleted_at__isnull=True)
    for row in rows.order_by("file__path", "changed_at", "id").values(
        "file__path", "action", "content", "changed_by", "changed_at"
    ):
        files.setdefault(row.pop("file__path"), []).append(row | {"changed_at": _iso(row["changed_at"])})
    if not entries and not files and not deleted:
        return None
    data = {"format": VERSIONS_FILE_FORMAT, "entries": entries, "files": files}
    if deleted:
        data["deleted"] = deleted
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def _project_versions_file(project: Project) -> str | None:
    """The project context's earlier texts, oldest first (content, author, date); None when none."""
    rows = ProjectContextVersion.objects.filter(project=project).order_by("changed_at", "id")
    versions = [
        row | {"changed_at": _iso(row["changed_at"])}
        for row in rows.values("content", "changed_by", "changed_at")
    ]
    if not versions:
        return None
    return (
        json.dumps({"format": VERSIONS_FILE_FORMAT, "versions": versions}, ensure_ascii=False, indent=1)
        + "\n"
    )


_ENTRY_META_FIELDS = (
    "id", "created_by", "source", "updated_at", "access_count", "last_accessed_at", "confidence",
    "source_session_id", "source_message_ids",
)  # fmt: skip


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _files_read(project: Project, agents: list[Agent], extra: AgentFiles | None) -> Iterator[tuple[str, str]]:
    project = Project.objects.get(pk=project.pk)
    manifest = {
        "format": int(ENTRY_FORMAT),
        "redaction_enabled": project.redaction_enabled,
        "agents": {agent_folder(agent): {"name": agent.name} for agent in agents},
        "review_policies": [
            {
                "category": p.category,
                "hold_agent_writes": p.hold_agent_writes,
                "hold_extracted": p.hold_extracted,
            }
            for p in ReviewPolicy.objects.filter(project=project).order_by("category")
        ],
    }
    yield EXPORT_MANIFEST, json.dumps(manifest, ensure_ascii=False) + "\n"
    yield "_project.md", project.context
    history = _project_versions_file(project)
    if history is not None:
        yield PROJECT_VERSIONS_FILE, history
    known_ids: dict[int, dict[int, str]] = {}

    def ids_of(agent: Agent) -> dict[int, str]:
        if agent.pk not in known_ids:
            known_ids[agent.pk] = marker_ids(agent)
        return known_ids[agent.pk]

    for agent in agents:
        folder = agent_folder(agent)
        entries = selectors.entry_list(agent=agent, status=None)
        ids = ids_of(agent)
        for category in Category.values:
            chosen = entries.filter(category=category)
            if chosen.exists():
                yield (
                    f"{folder}/{category}.md",
                    category_render(agent, category, chosen.iterator(chunk_size=2000), ids),
                )
        about = _entries_file(agent, ids)
        if about is not None:
            yield f"{folder}/{ENTRIES_FILE}", about
        review = _review_file(agent, ids, ids_of)
        if review is not None:
            yield f"{folder}/{REVIEW_FILE}", review
        versions = _versions_file(agent, ids)
        if versions is not None:
            yield f"{folder}/{VERSIONS_FILE}", versions
        manifest = {}
        for file in selectors.files_list(agent=agent).order_by("path"):
            manifest[file.path] = {"enabled": file.enabled, "sort_order": file.sort_order}
            yield f"{folder}/{WORKSPACE_DIR}/{file.path}", file.content
        if manifest:
            yield (
                f"{folder}/{WORKSPACE_DIR}/{WORKSPACE_MANIFEST}",
                json.dumps(manifest, indent=2, sort_keys=True) + "\n",
            )
        if extra is not None:
            yield from extra(agent, folder)


@contextmanager
def _snapshot(agents: list[Agent]) -> Iterator[None]:
    """One snapshot of the database (a repeatable-read, read-only transaction) to read an export from:
    agents writing meanwhile cannot make an entry that moved between two categories, or a file renamed,
    appear twice or not at all, nor an entry name a session the export does not hold. Inside a caller's
    transaction (a test's), that transaction's view is used. The daily notes' queued exchanges are written
    into their notes first, so that the export holds them."""
    for agent in agents:
        services.daily_notes_flush(agent=agent)
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def export_files(
    *, project: Project, agents: Iterable[Agent], extra: AgentFiles | None = None
) -> tuple[list[tuple[str, str]], int]:
    """(relative path, text) of every file of the export, in a stable order, and how many entries they
    hold, all read from one snapshot (`_snapshot`). `extra` adds each agent's files of another app (vault
    knows no sessions)."""
    agents = list(agents)
    with _snapshot(agents):
        files = list(_files_read(project, agents, extra))
        entries = VaultEntry.objects.filter(agent__in=agents).count()
    return files, entries


@dataclass
class ExportSummary:
    path: Path
    files: int = 0
    entries: int = 0
    agents: list[str] = field(default_factory=list)


def export_memory_dir(
    *,
    path: Path,
    project: Project,
    agents: Iterable[Agent] | None = None,
    progress=None,
    extra: AgentFiles | None = None,
) -> ExportSummary:
    """Write the export under `path` (created if missing). Existing files at the same paths are replaced.
    When `path` holds an earlier export, the files it wrote for these agents that this export does not
    write (a category emptied since, a session or a workspace file deleted since) are removed, so that
    importing the folder does not bring them back; nothing else in the folder is touched. InvalidInput
    naming the path when it cannot be written: the whole export is read, and the folder created, before
    the first file is written."""
    agents = list(agents if agents is not None else project.agents.order_by("slug"))
    files, entries = export_files(project=project, agents=agents, extra=extra)
    summary = ExportSummary(path=path, agents=[agent.slug for agent in agents], entries=entries)
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"Cannot export to {path}: it exists and is not a folder.")
    try:
        earlier = _earlier_files(path, [agent_folder(agent) for agent in agents])
        path.mkdir(parents=True, exist_ok=True)
        root = path.resolve()
        targets = [((path / relative).resolve(), relative, text) for relative, text in files]
        for target, relative, _ in targets:
            # A symbolic link in the folder (an agent's folder linked elsewhere) would take the file out of
            # it: refused before the first file is written, so no export is left half written.
            if not target.is_relative_to(root):
                raise InvalidInput(
                    f"Cannot export to {path}: {relative} would be written outside it ({target}), through a "
                    "symbolic link; nothing was written. Export to another folder, or remove the link."
                )
        for target, relative, text in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")  # "\n" stays "\n" on every platform
            summary.files += 1
            if progress:
                progress(f"wrote {relative}")
        written = {_name_fold(relative): target for target, relative, _ in targets}
        for relative in sorted(earlier - {relative for relative, _ in files}):
            stale = path / relative
            twin = written.get(_name_fold(relative))
            if twin is not None and stale.exists() and stale.samefile(twin):
                continue  # a file system that does not tell the names apart: it is the file just written
            if stale.parent.resolve().is_relative_to(root) and (stale.is_file() or stale.is_symlink()):
                stale.unlink()
                if progress:
                    progress(f"removed {relative} (the earlier export's; not in this one)")
        _names_apart_check(path, targets)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise InvalidInput(f"Cannot export to {path}: {exc.strerror or exc}{where}.") from exc
    return summary


def _name_fold(relative: str) -> str:
    """A path as a file system that ignores case and Unicode normalisation sees it (macOS's and Windows'
    by default): `notes/Guide.md` and `notes/guide.md`, `café` in one code point or two, are one file."""
    return unicodedata.normalize("NFC", relative).casefold()


def _names_apart_check(path: Path, targets: list[tuple[Path, str, str]]) -> None:
    """Files whose names only such a file system confuses (a workspace's `Guide.md` and `guide.md`) are
    read back: there the later overwrote the earlier, and a backup missing a file must not say it is
    whole. InvalidInput naming them."""
    groups: dict[str, list[tuple[Path, str, str]]] = {}
    for target, relative, text in targets:
        groups.setdefault(_name_fold(relative), []).append((target, relative, text))
    for group in groups.values():
        if len(group) < 2:
            continue
        for target, _, text in group:
            with target.open(encoding="utf-8", newline="") as written:
                if written.read() != text:
                    names = " and ".join(relative for _, relative, _ in group)
                    raise InvalidInput(
                        f"Cannot export to {path}: its file system does not tell {names} apart (their names "
                        "differ only in case or in how an accent is encoded), so one overwrote the other. "
                        "Export to a folder on a case-sensitive file system."
                    )


def _earlier_files(path: Path, folders: list[str]) -> set[str]:
    """The files an earlier export in `path` wrote for these agents' folders (relative paths): category
    files, the entries and review files, session files, the checkpoint, the workspace files its
    `.workspace.json` lists and that manifest, and the project context's history (written only when
    the context has one: an export of a project without it must not leave another's). Empty when
    `path` holds no export (`.export.json`)."""
    if not (path / EXPORT_MANIFEST).is_file():
        return set()
    found = {PROJECT_VERSIONS_FILE} if (path / PROJECT_VERSIONS_FILE).is_file() else set()
    for folder in folders:
        base = path / folder
        found |= {
            f"{folder}/{category}.md" for category in Category.values if (base / f"{category}.md").exists()
        }
        found |= {
            f"{folder}/{name}"
            for name in (REVIEW_FILE, ENTRIES_FILE, VERSIONS_FILE)
            if (base / name).exists()
        }
        if (base / SESSIONS_DIR).is_dir():
            found |= {f"{folder}/{SESSIONS_DIR}/{p.name}" for p in (base / SESSIONS_DIR).glob("*.json")}
        if (path / CHECKPOINTS_DIR / f"{folder}.json").exists():
            found.add(f"{CHECKPOINTS_DIR}/{folder}.json")
        manifest = base / WORKSPACE_DIR / WORKSPACE_MANIFEST
        try:
            listed = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
        except (OSError, ValueError):
            listed = {}
        if manifest.is_file():
            found.add(f"{folder}/{WORKSPACE_DIR}/{WORKSPACE_MANIFEST}")
        if isinstance(listed, dict):
            found |= {
                f"{folder}/{WORKSPACE_DIR}/{relative}"
                for relative in listed
                if isinstance(relative, str)
                and ".." not in relative.split("/")
                and not relative.startswith("/")
            }
    return found


def export_zip(*, project: Project, agents: Iterable[Agent], extra: AgentFiles | None = None) -> BinaryIO:
    """The same export as a zip archive (GET /agents/{agent}/export), read from one snapshot like
    `export_files`, in a temporary file positioned at its start (the caller closes it). Each file is
    compressed into the archive as soon as it is read, and the archive stays in memory only up to
    ZIP_SPOOL_BYTES, then goes to disk: a large agent costs a few times the memory of its largest file
    (a category file, a session, `.entries.json`: its text, its bytes, their compression) plus that spool,
    not the whole archive, let alone twice."""
    agents = list(agents)
    # The caller closes it (a FileResponse does once the zip is sent).
    spool = tempfile.SpooledTemporaryFile(max_size=ZIP_SPOOL_BYTES)  # noqa: SIM115
    try:
        with _snapshot(agents), zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for relative, text in _files_read(project, agents, extra):
                archive.writestr(relative, text)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool
