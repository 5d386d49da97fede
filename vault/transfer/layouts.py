"""Import memory from the layouts of the seeds into the vault, workspace files and sessions.

- `.memory/` vault: `_project.md`; `{agent}/{category}.md` with `<!-- id:... -->` markers and
  `## date · #tags` headers (an entry marked `format:2`, as our export writes them, is read exactly and
  unescaped: see `vault.transfer.export`); legacy flat `{agent}.md` files split on `## Title` sections;
  the `conversations/*.json` history and `.vault/checkpoints/*.json`; our own export (`{agent}/workspace/`).
- workspace: `MEMORY.md`, `SESSION-STATE.md` and the other upper-case files, `memory/*.md` daily
  notes, `memories/` (the memory tool's files).
- `.bmad/memory/`: `sessions/*/manifest.json` with `conversation`, `decisions`, `findings` and
  `preferences` JSONL files; `shared/*.json`.

Imports are idempotent: every entry gets a `legacy_id` (the source's id, or a hash of its content when it
has none) and an entry whose category + content + date is already stored, or whose id is already that of
the same entry (same date, or a content it has or had before an edit), is skipped, or takes the source's
edit of its content, tags or importance when nobody changed it here; an entry whose id another
source's entry already holds is stored, under that id plus a hash of its content, and reported; an entry
deleted or forgotten since (its delete version, its deletion audit) is not brought back; a file
whose content is already there (or was, before a later edit) is left alone. Source files are only read.
Each source kind has its own function; problems (corrupt JSON, malformed entries) are reported and the
rest goes on. Files are read as UTF-8; a byte order mark at the start of one is not part of its text.
Nothing outside the folder being imported is read: a symbolic link that leads out of it is skipped and
reported; one that stays inside it is followed.
"""

import re
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, OperationalError, transaction

from memoryproject.errors import Conflict, DomainError, InvalidInput
from vault import services
from vault.extraction import section_classify
from vault.models import (
    Agent,
    Category,
    EntryStatus,
    Project,
)
from vault.transfer.bmad import bmad_import, looks_like_bmad
from vault.transfer.common import (
    ATTR_RE,
    DAILY_NOTE_RE,
    IMPORT_ATTEMPTS,
    MARKER_RE,
    MEMORY_VAULT_SKIP_DIRS,
    SESSION_FILE_FORMAT,
    WORKSPACE_KNOWN,
    EntryItem,
    ImportReport,
    ParsedSessionFile,
    _concurrent_clash,
    _DryRunRollback,
    _hash,
    _import_lock,
    _mtime,
    _read_json,
    _read_text,
    _source_path,
    daily_note_name_check,
    date_parse,
    dates_logged,
    dates_where,
    then,
)
from vault.transfer.conversations import (
    checkpoint_file_import,
    conversation_file_import,
    sessions_pending_store,
    sessions_store,
)
from vault.transfer.entry_meta import entry_meta_fields
from vault.transfer.export import (
    ENTRY_FORMAT,
    EXPORT_MANIFEST,
    REVIEW_FILE,
    SESSIONS_DIR,
    WORKSPACE_DIR,
    WORKSPACE_MANIFEST,
    content_unescape,
)
from vault.transfer.folders import agent_entries_meta, agent_folder_check
from vault.transfer.histories import agent_versions_read, agent_versions_store, project_versions_import
from vault.transfer.markdown_entries import (
    _entry_block_parse,
    _exact_block_parse,
    _preamble_text,
    _section_content,
    _sections,
)
from vault.transfer.reviews import (
    agent_name_adopt,
    export_manifest_adopt,
    review_file_import,
    review_items_link,
)
from vault.transfer.writer import Importer


# --- The .memory/ vault -----------------------------------------------------------------------
def project_file_import(importer: Importer, path: Path) -> None:
    """`_project.md` becomes the project context: exactly as the file holds it when our export wrote it
    (`.export.json` beside it), else read as a text file (CRLF becomes LF)."""
    text = _read_text(path, importer.report, exact=(path.parent / EXPORT_MANIFEST).is_file())
    if text is not None:
        importer.project_context(text, where=path)


def _unmarked_file_import(
    importer: Importer, agent: Agent | None, category: str, text: str, mtime, path: Path
) -> None:
    """A category file without markers (written by hand): an entry for each `## Title` section, and
    one for the text before the first."""
    preamble, sections = _sections(text)
    loose = _preamble_text(preamble)
    if loose:
        sections.insert(0, ("", loose))
    for title, body in sections:
        content = _section_content(title, body) if title else body
        if content.strip():
            importer.entry_add(
                agent, EntryItem(category, content, mtime, "md:" + _hash(category, content)[:40]), where=path
            )


def vault_category_file_import(
    importer: Importer, agent: Agent | None, category: str, path: Path, meta: dict | None = None
) -> None:
    """`{agent}/{category}.md`: entries separated by `<!-- id:N -->` markers, each with a `## date · #tags`
    header, content and a `---` separator. Ids and dates are kept; `meta`: the folder's `.entries.json`
    records, by id. An entry marked `format:2` (our export)
    ends only at the next marker and its content is kept exactly, unescaped; other entries are stripped.
    A file without markers (written by hand) is split on `## Title` sections instead, so nothing in it is
    lost."""
    report = importer.report
    text = _read_text(path, report)
    if text is None:
        return
    markers = list(MARKER_RE.finditer(text))
    mtime = _mtime(path)
    if not markers:
        _unmarked_file_import(importer, agent, category, text, mtime, path)
        return
    loose = _preamble_text(text[: markers[0].start()])
    if loose:
        importer.entry_add(
            agent, EntryItem(category, loose, mtime, "md:" + _hash(category, loose)[:40]), where=path
        )
    for i, marker in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(text)
        marker_id = marker.group("id")
        attrs = dict(ATTR_RE.findall(marker.group("attrs")))
        block = text[marker.end() : end]
        where = f"{path} (id {marker_id})"
        dates_where(where)
        exact = _exact_block_parse(block) if attrs.get("format") == ENTRY_FORMAT else None
        if exact is not None:
            created_at, tags, content = exact
            header_ok = True
        else:
            created_at, tags, content, header_ok = _entry_block_parse(block, marker_id)
            if attrs.get("format") == ENTRY_FORMAT:
                content = content_unescape(content)
                report.problem(
                    where, "not in the form the export writes; whitespace around the content not kept"
                )
        if not header_ok:
            report.problem(where, "no '## date · #tags' header line; content kept, date from the id or file")
        if created_at is None:
            created_at = date_parse(marker_id, logged=False) or mtime
            if header_ok:
                report.problem(where, "unreadable date; used the id's timestamp or the file's date")
        if not content.strip():
            report.problem(where, "empty entry; skipped")
            continue
        try:
            importance = float(attrs["importance"]) if "importance" in attrs else None
        except ValueError:
            importance = None
        importer.entry_add(
            agent,
            EntryItem(
                category,
                content,
                created_at,
                marker_id,
                tags=tags,
                importance=importance,
                status=attrs.get("status", EntryStatus.ACTIVE),
                verbatim=exact is not None,
                supersedes=attrs.get("supersedes"),
                **entry_meta_fields(report, where, (meta or {}).get(marker_id), path.parent.name),
            ),
            where=where,
        )


def flat_agent_file_import(importer: Importer, path: Path) -> None:
    """Legacy flat `{agent}.md`: each `## Title` section becomes an entry whose category comes from the
    seed's section map (PT + EN, fuzzy; unknown titles are lessons). The file itself is left as it is."""
    text = _read_text(path, importer.report)
    if text is None:
        return
    agent = importer.agent(path.stem, where=path)
    mtime = _mtime(path)
    preamble, sections = _sections(text)
    loose = _preamble_text(preamble)
    if loose:
        sections.insert(0, ("", loose))
    for title, body in sections:
        category = section_classify(title) if title else "lessons"
        content = _section_content(title, body) if title else body
        if not content.strip():
            continue
        importer.entry_add(
            agent,
            EntryItem(category, content, mtime, "flat:" + _hash(path.stem, title, body)[:40]),
            where=f"{path} (## {title})" if title else path,
        )
    importer.report.counts["legacy flat files split"] += 1


def agent_dir_import(importer: Importer, directory: Path) -> None:
    agent = importer.agent(directory.name, where=directory)
    agent_name_adopt(importer, agent, directory)
    agent_folder_check(importer.report, directory)
    meta = agent_entries_meta(importer.report, directory)
    file_versions = agent_versions_read(importer, agent, directory)
    for category in Category.values:
        path = directory / f"{category}.md"
        if path.is_file() and meta is not None:
            importer.report.say(f"{path}")
            vault_category_file_import(importer, agent, category, path, meta)
    workspace = directory / WORKSPACE_DIR
    if workspace.is_dir() and _source_path(workspace, importer.report) is not None:
        workspace_import(importer, workspace, agent=agent)
    importer.flush()
    agent_versions_store(importer, agent, file_versions)
    if agent is not None and (directory / REVIEW_FILE).is_file():
        review_file_import(importer, agent, directory / REVIEW_FILE)
    sessions = directory / SESSIONS_DIR
    if agent is not None and sessions.is_dir() and _source_path(sessions, importer.report) is not None:
        for path in sorted(sessions.glob("*.json")):
            session_file_import(importer, agent, path)


def session_file_import(importer: Importer, agent: Agent, path: Path) -> None:
    """`{agent}/sessions/{id}.json` of our export: one session whole, for the sessions writer (which
    knows the source agent, its folder's name, to keep apart sessions of agents mapped onto one)."""
    data = _read_json(path, importer.report)
    if data is None:
        return
    if not isinstance(data, dict) or data.get("format") != SESSION_FILE_FORMAT:
        importer.report.problem(path, f"is not a session file of format {SESSION_FILE_FORMAT}; skipped")
        return
    sessions_store(
        importer,
        ParsedSessionFile(
            source=str(path),
            agent=agent.slug,
            data=data,
            saved_at=_mtime(path),
            source_agent=path.parent.parent.name,
            key=path.stem,
        ),
    )


def _is_agent_dir(directory: Path, *, exported: bool = False) -> bool:
    """Whether a folder of a `.memory/` vault is an agent's: it holds category files, a workspace or
    sessions. In our export (`exported`) that is all, whatever the folder's name (a slug may start with
    "." or "_", or be "memories"); elsewhere hidden folders and other layouts' folders are not agents."""
    if not exported and (directory.name.startswith((".", "_")) or directory.name in MEMORY_VAULT_SKIP_DIRS):
        return False
    return (
        any((directory / f"{c}.md").is_file() for c in Category.values)
        or (directory / WORKSPACE_DIR).is_dir()
        or (directory / SESSIONS_DIR).is_dir()
    )


def looks_like_memory_vault(root: Path) -> bool:
    return (
        (root / "_project.md").is_file()
        or (root / "conversations").is_dir()
        or (root / ".vault").is_dir()
        or any(_is_agent_dir(child) for child in root.iterdir() if child.is_dir())
        or (not looks_like_workspace(root) and any(_is_flat_agent_file(child) for child in root.iterdir()))
    )


def _is_flat_agent_file(path: Path) -> bool:
    return (
        path.is_file()
        and path.suffix == ".md"
        and re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", path.stem) is not None
    )


def memory_vault_import(importer: Importer, root: Path) -> None:
    report = importer.report
    report.say(f".memory/ vault: {root}")
    if (root / EXPORT_MANIFEST).is_file():
        export_manifest_adopt(
            importer, _read_json(root / EXPORT_MANIFEST, report), where=root / EXPORT_MANIFEST
        )
    project_versions_import(importer, root)  # first: the context's rewrite drops a version they hold
    if (root / "_project.md").is_file():
        project_file_import(importer, root / "_project.md")
    children = sorted(root.iterdir())
    exported = (root / EXPORT_MANIFEST).is_file()
    # Agents that keep their id first: when --agent-map sends another agent onto one of them, its sessions
    # are the ones that keep their chat ids (the other's are kept apart under a suffixed chat id).
    for child in sorted(
        children, key=lambda child: (importer.agent_slug(child.name) != child.name, child.name)
    ):
        if child.is_dir() and _is_agent_dir(child, exported=exported):
            agent_dir_import(importer, child)
    # In a folder that is also a workspace, lower-case .md files are the workspace's, not flat agent files.
    flat_files = (
        [] if looks_like_workspace(root) else [child for child in children if _is_flat_agent_file(child)]
    )
    for child in flat_files:
        if (root / child.stem).is_dir():
            report.counts["legacy flat files skipped (already migrated to a folder)"] += 1
            report.say(f"  {child.name}: skipped, {child.stem}/ already holds the migrated vault")
            continue
        report.say(f"{child} (legacy flat file)")
        flat_agent_file_import(importer, child)
    importer.flush()
    for path in sorted((root / "conversations").glob("*.json")) if (root / "conversations").is_dir() else []:
        conversation_file_import(importer, path)
    checkpoints = root / ".vault" / "checkpoints"
    for path in sorted(checkpoints.glob("*.json")) if checkpoints.is_dir() else []:
        checkpoint_file_import(importer, path)


# --- A workspace ---------------------------------------------------------------------------------
def looks_like_workspace(root: Path) -> bool:
    return (
        any((root / name).is_file() for name in WORKSPACE_KNOWN)
        or (root / "memories").is_dir()
        or (
            (root / "memory").is_dir()
            and any(DAILY_NOTE_RE.match(p.name) for p in (root / "memory").iterdir())
        )
    )


def workspace_import(importer: Importer, root: Path, *, agent: Agent | None = None) -> None:
    """A workspace folder: upper-case markdown files at the top (MEMORY.md, SESSION-STATE.md, SOUL.md...),
    daily notes under memory/ (disabled: searched, not injected), the memory tool's memories/ (any text
    file; dot files and folders left out), and our export's `.workspace.json` (enabled flags and sort
    order).

    A folder our export wrote has a `.workspace.json` listing every file: each listed file is imported
    whatever its path, read exactly (its bytes are the stored content: CRLF, a lone CR, a leading U+FEFF
    kept), a listed file that is missing is reported, and so is any other file of the folder that the rules
    above do not take. A folder without it (written by hand or by another tool) is read as text files
    (CRLF becomes LF, a byte order mark is dropped), and what the rules do not take is not imported."""
    report = importer.report
    if agent is None:
        agent = importer.agent(None, where=root)
    report.say(f"workspace: {root} -> agent {agent.slug if agent else '?'}")
    manifest_path = root / WORKSPACE_MANIFEST
    manifest = {}
    if manifest_path.is_file():
        data = _read_json(manifest_path, report)
        manifest = data if isinstance(data, dict) else {}
    files: dict[str, tuple[Path, bool]] = {}  # relative path -> (file, read exactly)
    for relative in sorted(manifest):
        try:
            services.file_path_check(relative, markdown_only=False, dateless_notes=True)
        except DomainError as exc:
            report.problem(manifest_path, then(exc.detail, "Not imported"))
            continue
        if not (root / relative).is_file():
            report.problem(root / relative, f"listed in {WORKSPACE_MANIFEST} but missing; skipped")
            continue
        files[relative] = (root / relative, True)
    for child in sorted(root.iterdir()):
        if (
            child.is_file()
            and child.suffix == ".md"
            and (child.name in WORKSPACE_KNOWN or child.stem.isupper())
        ):
            files.setdefault(child.name, (child, False))
    for folder in ("memory", "memories"):
        base = root / folder
        # A folder linked to outside the import is skipped whole, not walked (a link to `/` listed it all).
        if base.is_dir() and _source_path(base, report) is not None:
            for child in sorted(base.rglob("*")):
                if child.is_file() and not any(
                    part.startswith(".") for part in child.relative_to(root).parts
                ):
                    if folder == "memory" and child.suffix != ".md":
                        continue
                    files.setdefault(child.relative_to(root).as_posix(), (child, False))
    if manifest_path.is_file():
        for child in sorted(root.rglob("*")):
            relative = child.relative_to(root).as_posix()
            if child.is_file() and child != manifest_path and relative not in files:
                report.problem(
                    child, f"not listed in {WORKSPACE_MANIFEST} nor a workspace file by its name; skipped"
                )
    for relative, (path, exact) in sorted(files.items()):
        if _too_large(path, exact, report):
            continue
        text = _read_text(path, report, exact=exact)
        if text is None:
            continue
        daily_note_name_check(relative)
        settings_for = manifest.get(relative) if isinstance(manifest.get(relative), dict) else {}
        enabled, sort_order = WORKSPACE_KNOWN.get(relative, (False, None))
        if "enabled" in settings_for:
            enabled = bool(settings_for["enabled"])
        if isinstance(settings_for.get("sort_order"), int):
            sort_order = settings_for["sort_order"]
        importer.file_put(
            agent, relative, text, enabled=enabled, sort_order=sort_order, exported=exact, where=path
        )


def _too_large(path: Path, exact: bool, report: ImportReport) -> bool:
    """Whether a workspace file is over the size an import takes (reported; the file is not read)."""
    name = "MEMORY_IMPORT_MAX_FILE_BYTES" if exact else "MEMORY_MAX_ENTRY_BYTES"
    limit = getattr(settings, name)
    try:
        size = path.stat().st_size
    except OSError:
        return False  # _read_text says why it cannot be read
    if size > limit:
        report.problem(path, f"is {size} bytes; the limit is {limit} bytes ({name}). File skipped")
    return size > limit


# --- Entry points ---------------------------------------------------------------------------------


def _run(
    project: Project,
    dry_run: bool,
    progress,
    body: Callable[[Importer], None],
    *,
    source: Path,
    **options,
) -> ImportReport:
    """Run an import's `body` (its vault part) in one transaction, reading files from inside the folder
    `source` only; the sessions it found are then stored by the sessions writer in transactions of their
    own (sessions_pending_store), and entries' provenance pointed at them. A dry run does the same inside
    one transaction rolled back at the end, each of the sessions' transactions a savepoint rolled back at
    once, so that it holds the locks of the live write path no longer than a real run does.

    Safe against concurrent writers: imports into one project run one at a time (the second waits for the
    first to commit, then finds what it stored), and the sessions writer takes the locks the live write
    path takes. A clash those locks do not prevent (a unique key taken by a writer that takes no lock, a
    deadlock) rolls the body's transaction (or the session's) back; it is run again, up to
    IMPORT_ATTEMPTS times, and then fails with a Conflict saying so: never a traceback, and what is
    written is skipped by the next run."""
    for attempt in range(1, IMPORT_ATTEMPTS + 1):
        report = ImportReport(dry_run=dry_run, progress=progress, source_root=Path(source).resolve())
        importer = Importer(project=project, report=report, **options)
        try:
            with dates_logged(report.dates), transaction.atomic():
                _import_lock(project, report)
                body(importer)
                importer.chains_link()
                review_items_link(importer)
                if dry_run:  # the sessions as a real run stores them, each rolled back at once
                    sessions_pending_store(importer, attempts=IMPORT_ATTEMPTS)
                    importer.provenance_link()
                    raise _DryRunRollback
        except _DryRunRollback:
            return report
        except (IntegrityError, OperationalError) as exc:
            clash = _concurrent_clash(exc)
            if clash is None:
                raise
            if attempt == IMPORT_ATTEMPTS:
                raise Conflict(
                    f"Another writer changed the same memory while this import ran ({clash}); the import "
                    f"was rolled back (tried {attempt} time(s)) and nothing of it was written. Run it again "
                    "when the other writer is done."
                ) from exc
            report.say(
                f"  ! a concurrent write clashed with this import ({clash}); rolled back, importing again"
            )
            continue
        try:
            with dates_logged(report.dates):
                sessions_pending_store(importer, attempts=IMPORT_ATTEMPTS)
        finally:
            # Entries' provenance points at the sessions as stored here, known only now (those stored
            # before a session that failed included).
            with transaction.atomic():
                importer.provenance_link()
        return report
    raise AssertionError("unreachable")


def import_memory_dir(
    *,
    path: Path,
    project: Project,
    agent_map: dict[str, str] | None = None,
    default_agent: str = "main",
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
    sessions_writer=None,
) -> ImportReport:
    """Import every layout found at `path`: the folder itself, or `.memory/`, `.bmad/memory/` and
    `workspace/` inside it. `default_agent` receives what names no agent (a bare workspace, shared files).
    With `dry_run` everything runs and is counted, then rolled back. InvalidInput when the folder holds
    none of the layouts."""
    path = Path(path)
    if not path.is_dir():
        raise InvalidInput(f"{path} is not a folder")

    def body(importer: Importer) -> None:
        if (path / EXPORT_MANIFEST).is_file():
            # Our export: read as one, never as another layout (an agent named "memories" or "shared"
            # made it look like a workspace or a .bmad/memory/ folder).
            memory_vault_import(importer, path)
            return
        found = False
        # A project folder holding the layouts in their usual places; only when none is there is the folder
        # itself the layout (so a project's own notes.md is never mistaken for an agent's memory file).
        for candidates in (
            (
                (path / ".memory", looks_like_memory_vault, memory_vault_import),
                (path / ".bmad" / "memory", looks_like_bmad, bmad_import),
                (path / "workspace", looks_like_workspace, workspace_import),
            ),
            (
                (path, looks_like_bmad, bmad_import),
                (path, looks_like_workspace, workspace_import),
                (path, looks_like_memory_vault, memory_vault_import),
            ),
        ):
            for candidate, looks, run in candidates:
                if candidate.is_dir() and looks(candidate):
                    found = True
                    run(importer, candidate)
                    importer.flush()
            if found:
                break
        if not found:  # a failure, not a problem among others: a script must not go on as if it worked
            raise InvalidInput(
                f"{path}: no .memory/ vault, workspace or .bmad/memory/ layout found; nothing imported"
            )

    return _run(
        project,
        dry_run,
        progress,
        body,
        source=path,
        agent_map=agent_map,
        default_agent=default_agent,
        sessions_writer=sessions_writer,
    )
