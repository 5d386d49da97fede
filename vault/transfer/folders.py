"""What an agent's folder of this server's export holds, checked before it is imported: a file the export
does not write there (a category file renamed by hand, `decisions (copy).md`) is reported rather than
passed over in silence, and a `.entries.json` that is not JSON keeps the folder's entries out, since
they would be stored without what it says of them (author, source, edit date, access counts,
provenance) and no later import gives that back."""

from pathlib import Path

from vault.models import Category
from vault.transfer.common import ImportReport
from vault.transfer.entry_meta import entries_meta_read
from vault.transfer.export import (
    ENTRIES_FILE,
    EXPORT_MANIFEST,
    REVIEW_FILE,
    SESSIONS_DIR,
    VERSIONS_FILE,
    WORKSPACE_DIR,
)

AGENT_FOLDER_NAMES = {
    *(f"{category}.md" for category in Category.values),
    ENTRIES_FILE,
    VERSIONS_FILE,
    REVIEW_FILE,
    WORKSPACE_DIR,
    SESSIONS_DIR,
}


def agent_folder_check(report: ImportReport, directory: Path) -> None:
    """Report each file of an exported agent folder (its project folder holds the export's manifest)
    that the export does not write there; nothing is reported for a folder written by hand or by
    another tool."""
    if not (directory.parent / EXPORT_MANIFEST).is_file():
        return
    for child in sorted(directory.iterdir()):
        if child.name not in AGENT_FOLDER_NAMES:
            report.problem(
                child,
                "not a file this export writes (entries are read from "
                + ", ".join(f"{category}.md" for category in Category.values)
                + "); skipped",
            )


def agent_entries_meta(report: ImportReport, directory: Path) -> dict[str, dict] | None:
    """The folder's `.entries.json` by entry id ({} when it has none, or one of another format,
    reported); None when it is there but not JSON (a truncated file, reported): the folder's entries
    are then not imported."""
    path = directory / ENTRIES_FILE
    if not path.is_file():
        return {}
    meta = entries_meta_read(report, path)
    if meta is None:
        report.problem(
            path,
            "this folder's entries are not imported: they would lose their author, source, edit date, "
            "access counts and provenance for good. Restore the file (or delete it to import them "
            "without) and import again",
        )
    return meta
