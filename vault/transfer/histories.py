"""The vault's edit histories of an export read back: each entry's versions and each workspace file's
(`{agent}/.versions.json`), and the project context's (`.project-versions.json`), as
`vault.transfer.export` writes them:

```
{agent}/.versions.json     {"format": 1,
                            "entries": {"42": [{"action", "category", "content", "tags", "status",
                                                "importance", "changed_by", "changed_at", "restore_state"}]},
                            "files": {"MEMORY.md": [{"action", "content", "changed_by", "changed_at"}]},
                            "deleted": {"17": [... as entries' ...]}}
.project-versions.json     {"format": 1, "versions": [{"content", "changed_by", "changed_at"}]}
```

Entries are named by their ids in the export (the markers' ids), files by their paths. A delete version's
`restore_state` leaves out the ids it holds (session, messages, the entry superseded): they are this
server's and would name other rows elsewhere. Deleted entries' histories (`deleted`, by their ids at the
source) are exported, since a curator reads a deleted entry's history and restores it from there: the
import stores each under a new id, unless its delete version is here already or an entry of the agent
holds its id (the entry is live here). Deleted workspace files' versions are not exported: nothing
shows them or brings such a file back.

The import attaches each version to the entry it stored under that id (or the live file at that path,
or the project), keeping its action, content, author and date. A version already there (same action,
date and content) is not added again, so a second import adds nothing. The file is untrusted: a version
of the wrong kind is ignored and reported, a file that is not one is reported, and the import goes on."""

import math
from datetime import UTC, datetime
from pathlib import Path

from django.db import connection

from memoryproject.copy_rows import rows_create
from vault.models import (
    Agent,
    Category,
    EntryVersion,
    ProjectContextVersion,
    VaultEntry,
    VersionAction,
    WorkspaceFile,
    WorkspaceFileVersion,
)
from vault.redaction import project_redaction_enabled, redact
from vault.text import tag_valid
from vault.transfer.common import BATCH_SIZE, _read_json, date_parse, legacy_id_fit
from vault.transfer.export import PROJECT_VERSIONS_FILE, VERSIONS_FILE, VERSIONS_FILE_FORMAT

CHANGED_BY_MAX = 200
IMPORT_AUTHOR = "import"  # the author of the versions an import writes itself, applying a source's edit
STATUS_MAX = 16


# --- Import: reading ----------------------------------------------------------------------------------


def _text(value, limit: int | None = None) -> str | None:
    ok = isinstance(value, str) and "\x00" not in value and (limit is None or len(value) <= limit)
    return value if ok else None


def _importance(value) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok and 0.0 <= value <= 1.0 else None


def _tags(value) -> list[str] | None:
    ok = isinstance(value, list) and all(isinstance(tag, str) and tag_valid(tag) for tag in value)
    return value if ok else None


def _version_read(raw, *, entry: bool) -> dict | None:
    """One version record as model fields, or None when a field is missing or of the wrong kind."""
    if not isinstance(raw, dict):
        return None
    changed_at = raw.get("changed_at")
    fields = {
        "content": _text(raw.get("content")),
        "changed_by": _text(raw.get("changed_by", ""), CHANGED_BY_MAX),
        "changed_at": date_parse(changed_at) if isinstance(changed_at, str) else None,
    }
    if entry or "action" in raw:
        fields["action"] = raw.get("action") if raw.get("action") in VersionAction.values else None
    if entry:
        state = raw.get("restore_state", {})
        fields |= {
            "category": raw.get("category") if raw.get("category") in Category.values else None,
            "status": _text(raw.get("status"), STATUS_MAX),
            "tags": _tags(raw.get("tags", [])),
            "importance": _importance(raw.get("importance")),
            "restore_state": state if isinstance(state, dict) else None,
        }
    return None if any(value is None for value in fields.values()) else fields


def _versions_of(report, where, histories, *, entry: bool) -> dict[str, list[dict]]:
    """`{key: [record, ...]}` read: the records that can be stored, by key; the others reported."""
    found: dict[str, list[dict]] = {}
    if not isinstance(histories, dict):
        report.problem(where, "its versions are not an object by id or path; ignored")
        return found
    bad = 0
    for key, records in histories.items():
        read = [_version_read(raw, entry=entry) for raw in records] if isinstance(records, list) else [None]
        bad += sum(1 for fields in read if fields is None)
        found[str(key)] = [fields for fields in read if fields is not None]
    if bad:
        report.problem(where, f"{bad} version(s) not readable (a field of the wrong kind); ignored")
    return found


def agent_versions_read(importer, agent: Agent | None, directory: Path) -> dict[str, list[dict]]:
    """An agent folder's `.versions.json`, read before its entries: the entries' versions go to
    `importer.entry_versions` (an entry met again is "edited here" only by a version the source lacks),
    the files' versions are returned for `agent_versions_store`. Their texts are redacted when the
    project redacts, as the entries and files are. Empty when the folder has none (an earlier export)
    or the file is not one (reported)."""
    path = directory / VERSIONS_FILE
    if agent is None or not path.is_file():
        return {}
    report = importer.report
    data = _read_json(path, report)
    if data is None:
        return {}
    if not isinstance(data, dict) or data.get("format") != VERSIONS_FILE_FORMAT:
        report.problem(path, f"is not a versions file of format {VERSIONS_FILE_FORMAT}; no history imported")
        return {}
    entries = _versions_of(report, f"{path} (entries)", data.get("entries", {}), entry=True)
    files = _versions_of(report, f"{path} (files)", data.get("files", {}), entry=False)
    deleted = _versions_of(report, f"{path} (deleted entries)", data.get("deleted", {}), entry=True)
    if project_redaction_enabled(agent.project_id):  # as the entries and files themselves are stored
        for records in (*entries.values(), *files.values(), *deleted.values()):
            for fields in records:
                fields["content"] = redact(fields["content"])
    importer.entry_versions[(agent.pk, directory.name)] = entries
    importer.entry_versions_pending.append((agent, directory.name, entries))
    importer.file_versions[agent.pk] = files
    importer.deleted_versions_pending.append((agent, deleted))
    return files


def agent_versions_store(importer, agent: Agent | None, files: dict[str, list[dict]]) -> None:
    """Once the folder's entries and files are stored: attach the versions read by `agent_versions_read`."""
    if agent is None:
        return
    for owner, folder, entries in importer.entry_versions_pending:
        pks = importer.entry_pks(owner.pk, list(entries), folder)
        entry_versions_store(importer.report, owner.pk, entries, pks)
    importer.entry_versions_pending = []
    for owner, deleted in importer.deleted_versions_pending:
        deleted_versions_store(importer.report, owner, deleted)
    importer.deleted_versions_pending = []
    if files:
        file_versions_store(importer.report, agent, files)


def version_key(action: str, changed_at: datetime, content: str) -> tuple:
    """What makes two versions one: a version already stored with these is not added again."""
    return (action, changed_at.astimezone(UTC), content)


# --- Import: storing ----------------------------------------------------------------------------------


def entry_versions_store(
    report, agent_pk: int, by_export_id: dict[str, list[dict]], pks: dict[str, int]
) -> None:
    """Attach the versions to the entries stored under those ids (`pks`: export id -> entry here); the
    versions of an id with no entry here are counted, not stored."""
    missing = sum(len(records) for key, records in by_export_id.items() if key not in pks)
    if missing:
        report.counts["entry versions skipped (entry not stored under its id)"] += missing
    stored = {
        (entry_id, *version_key(action, at, content))
        for entry_id, action, at, content in EntryVersion.objects.filter(
            entry_id__in=list(pks.values())
        ).values_list("entry_id", "action", "changed_at", "content")
    }
    new = []
    for key, records in by_export_id.items():
        if key not in pks:
            continue
        for fields in records:
            if (pks[key], *version_key(fields["action"], fields["changed_at"], fields["content"])) in stored:
                report.counts["entry versions already imported (skipped)"] += 1
                continue
            stored.add((pks[key], *version_key(fields["action"], fields["changed_at"], fields["content"])))
            new.append(EntryVersion(entry_id=pks[key], agent_id=agent_pk, **fields))
    _dated_create(new)
    report.counts["entry versions imported"] += len(new)


def deleted_versions_store(report, agent: Agent, by_source_id: dict[str, list[dict]]) -> None:
    """Each deleted entry's history under a new entry id (from the entries' sequence, so that no entry
    ever takes it and a restore brings the entry back under it), its deletion's restore_state giving it
    its id at the source as its legacy id (as an import of the live entry would have). Skipped: one with
    no delete version, one whose delete version is here already (imported before), one whose id an entry
    of the agent holds (the entry is live here: imported before its deletion, or restored)."""
    deletions = {
        version_key(action, at, content)
        for action, at, content in EntryVersion.objects.filter(
            agent=agent, action=VersionAction.DELETE
        ).values_list("action", "changed_at", "content")
    }
    live = set(
        VaultEntry.objects.filter(agent=agent, legacy_id__in=list(by_source_id)).values_list(
            "legacy_id", flat=True
        )
    )
    new = []
    for source_id, records in by_source_id.items():
        last = next((f for f in reversed(records) if f["action"] == VersionAction.DELETE), None)
        if last is None or not last["restore_state"].get("created_at"):
            report.counts["deleted entries' histories skipped (no deletion to restore from)"] += 1
            continue
        legacy_id = legacy_id_fit(last["restore_state"].get("legacy_id") or source_id)
        if version_key(last["action"], last["changed_at"], last["content"]) in deletions:
            report.counts["deleted entries' histories already imported (skipped)"] += 1
            continue
        if legacy_id in live or source_id in live:
            report.counts["deleted entries' histories skipped (the entry is live here)"] += 1
            continue
        with connection.cursor() as cursor:
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [VaultEntry._meta.db_table])
            entry_id = cursor.fetchone()[0]
        for fields in records:
            if fields["action"] == VersionAction.DELETE:
                fields = fields | {"restore_state": fields["restore_state"] | {"legacy_id": legacy_id}}
            new.append(EntryVersion(entry_id=entry_id, agent_id=agent.pk, **fields))
        report.counts["deleted entries' histories imported"] += 1
    _dated_create(new)


def _dated_create(rows: list) -> None:
    """Store new version rows with their own `changed_at`, by COPY, 10,000 at a time (`bulk_create` sets
    auto_now_add's now on each; setting the dates back with `bulk_update` took longer than the insert)."""
    for start in range(0, len(rows), BATCH_SIZE * 10):
        rows_create(rows[start : start + BATCH_SIZE * 10])


def file_versions_store(report, agent: Agent, by_path: dict[str, list[dict]]) -> None:
    """Attach the versions to the agent's live files at those paths; those of a path with no live file
    here (skipped, deleted here since) are counted, not stored."""
    files = dict(
        WorkspaceFile.objects.filter(
            agent=agent, path__in=list(by_path), deleted_at__isnull=True
        ).values_list("path", "pk")
    )
    stored = {
        (file_id, *version_key(action, at, content))
        for file_id, action, at, content in WorkspaceFileVersion.objects.filter(
            file_id__in=list(files.values())
        ).values_list("file_id", "action", "changed_at", "content")
    }
    new = []
    for path, records in by_path.items():
        if path not in files:
            report.counts["file versions skipped (no such file here)"] += len(records)
            continue
        for fields in records:
            fields = {"action": VersionAction.EDIT, **fields}
            key = (files[path], *version_key(fields["action"], fields["changed_at"], fields["content"]))
            if key in stored:
                report.counts["file versions already imported (skipped)"] += 1
                continue
            stored.add(key)
            new.append(WorkspaceFileVersion(file_id=files[path], **fields))
    _dated_create(new)
    report.counts["file versions imported"] += len(new)


def project_versions_import(importer, root: Path) -> None:
    """`.project-versions.json` of an export: the project context's earlier texts, added unless already
    there. Nothing when the export has none (an earlier one)."""
    path, report, project = root / PROJECT_VERSIONS_FILE, importer.report, importer.project
    if not path.is_file():
        return
    data = _read_json(path, report)
    if data is None:
        return
    if not isinstance(data, dict) or data.get("format") != VERSIONS_FILE_FORMAT:
        report.problem(path, f"is not a versions file of format {VERSIONS_FILE_FORMAT}; no history imported")
        return
    records = _versions_of(report, path, {"": data.get("versions")}, entry=False)[""]
    importer.project_versions = records
    stored = {
        (at.astimezone(UTC), content)
        for at, content in ProjectContextVersion.objects.filter(project=project).values_list(
            "changed_at", "content"
        )
    }
    new = []
    for fields in records:
        fields.pop("action", None)
        if (fields["changed_at"].astimezone(UTC), fields["content"]) in stored:
            report.counts["project context versions already imported (skipped)"] += 1
            continue
        stored.add((fields["changed_at"].astimezone(UTC), fields["content"]))
        new.append(ProjectContextVersion(project=project, **fields))
    _dated_create(new)
    report.counts["project context versions imported"] += len(new)


def import_version_drop(versions, records: list[dict]) -> None:
    """Applying the source's edit, the import versioned the text it replaced (`versions`: the entry's,
    file's or project's versions): that version is deleted when the source's history (`records`, read
    from the export) holds the same text, whose record, with its author and date, is attached instead
    (`entry_versions_store`, `file_versions_store`, `project_versions_import`). Kept both, the history
    showed the text twice, once by "import" dated the import."""
    version = versions.filter(changed_by=IMPORT_AUTHOR).order_by("-id").first()
    if version is None:
        return
    action = getattr(version, "action", VersionAction.EDIT)
    if any(
        fields["content"] == version.content and fields.get("action", VersionAction.EDIT) == action
        for fields in records
    ):
        version.delete()


def entry_changed_here(entry_pk: int, incoming: list[dict]) -> bool:
    """Whether the stored entry was edited here: it has a version neither the import wrote (applying the
    source's edit) nor the source's own history holds (`incoming`, imported before)."""
    known = {version_key(f["action"], f["changed_at"], f["content"]) for f in incoming}
    versions = EntryVersion.objects.filter(entry_id=entry_pk).exclude(changed_by=IMPORT_AUTHOR)
    return any(
        version_key(action, at, content) not in known
        for action, at, content in versions.values_list("action", "changed_at", "content")
    )
