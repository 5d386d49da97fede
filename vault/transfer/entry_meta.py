"""An export's `{agent}/.entries.json` read back (its form: `vault.transfer.export`): each entry's author,
source, confidence, edit date, access count and provenance, by the entry's id in the export. The file is
untrusted: a value of the wrong kind is ignored and reported, and the entry imported with the default."""

import math
from pathlib import Path

from vault.models import EntrySource
from vault.transfer.common import ImportReport, _read_json, date_parse
from vault.transfer.export import ENTRIES_FILE_FORMAT

AUTHOR_MAX = 200  # VaultEntry.created_by
ACCESS_COUNT_MAX = 2**31 - 1


def entries_meta_read(report: ImportReport, path: Path) -> dict[str, dict] | None:
    """The records of `.entries.json` by entry id; empty, reported, when the file is not one of this
    format; None, reported, when it cannot be read or is not JSON."""
    data = _read_json(path, report)
    if data is None:
        return None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or data.get("format") != ENTRIES_FILE_FORMAT:
        report.problem(
            path,
            f"is not an entries file of format {ENTRIES_FILE_FORMAT}; its entries are imported without "
            "their author, source, provenance, edit date and access count",
        )
        return {}
    return {str(key): value for key, value in entries.items() if isinstance(value, dict)}


def _text(value) -> str | None:
    return value if isinstance(value, str) and "\x00" not in value and len(value) <= AUTHOR_MAX else None


def _count(value) -> int | None:
    return value if type(value) is int and 0 <= value <= ACCESS_COUNT_MAX else None


def _fraction(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None


def _key(value) -> str | None:
    return str(value) if (isinstance(value, str) and value) or type(value) is int else None


def entry_meta_fields(report: ImportReport, where, raw: dict | None, folder: str) -> dict:
    """EntryItem fields from one entry's record (`folder`: the agent's folder in the export, whose
    `sessions/` its provenance and its `session-{id}` tags name); only the folder without one."""
    if raw is None:
        return {"folder": folder}
    readers = {
        "author": _text,
        "source": lambda value: value if value in EntrySource.values else None,
        "updated_at": date_parse,
        "access_count": _count,
        "last_accessed_at": date_parse,
        "confidence": _fraction,
    }
    fields, bad = {"folder": folder}, []
    for name, read in readers.items():
        if raw.get(name) is None:
            continue
        value = read(raw[name])
        if value is None:
            bad.append(name)
        else:
            fields[name] = value
    session, messages = raw.get("source_session"), raw.get("source_messages") or []
    keys = [_key(value) for value in messages] if isinstance(messages, list) else [None]
    if session is not None and _key(session) is None:
        bad.append("source_session")
    elif session is not None:
        fields["provenance"] = (folder, _key(session), [key for key in keys if key is not None])
    if None in keys:
        bad.append("source_messages")
    if bad:
        report.problem(where, f"{', '.join(bad)} in .entries.json not readable; ignored")
    return fields
