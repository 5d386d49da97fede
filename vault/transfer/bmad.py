"""The `.bmad/memory/` layout: `sessions/*/manifest.json` with `conversation`, `decisions`,
`findings` and `preferences` JSONL files; `shared/*.json`."""

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

from vault.transfer.common import (
    IMPORTANCE_BY_LEVEL,
    EntryItem,
    ImportReport,
    ParsedConversation,
    _hash,
    _mtime,
    _read_json,
    _read_text,
    date_parse,
    legacy_id_fit,
)
from vault.transfer.conversations import (
    _messages_parse,
    sessions_store,
)
from vault.transfer.writer import Importer


def looks_like_bmad(root: Path) -> bool:
    return (
        (root / "sessions").is_dir()
        and any((root / "sessions").glob("*/manifest.json"))
        or (root / "shared").is_dir()
    )


def _jsonl(path: Path, report: ImportReport) -> list[dict]:
    """The JSON objects of a JSONL file, one a line. Only "\n" ends a line (reading turns "\r\n" into
    it): JSON.stringify and json.dumps(ensure_ascii=False) write U+2028, U+0085, form feeds and the like
    raw inside strings, and `str.splitlines` would cut a record there."""
    text = _read_text(path, report)
    if text is None:
        return []
    records = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            report.problem(f"{path}:{number}", f"corrupt JSON line ({exc.msg}); skipped")
            continue
        if not isinstance(record, dict):
            report.problem(f"{path}:{number}", "not a JSON object; skipped")
            continue
        records.append(record)
    return records


def _level(value) -> float | None:
    return IMPORTANCE_BY_LEVEL.get(str(value).lower()) if value else None


def _str_list(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else ([str(value)] if value else [])


def decision_item(record: dict, *, prefix: str, fallback_date: datetime) -> EntryItem | None:
    text = record.get("decision") or record.get("content") or record.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    lines = [text.strip(), ""]
    if record.get("rationale"):
        lines.append(f"Rationale: {record['rationale']}")
    alternatives = record.get("alternatives_considered")
    if isinstance(alternatives, list) and alternatives:
        lines.append("Alternatives considered:")
        for alternative in alternatives:
            if isinstance(alternative, dict):
                reason = alternative.get("rejected_reason")
                lines.append(
                    f"- {alternative.get('option', '?')}" + (f" (rejected: {reason})" if reason else "")
                )
            else:
                lines.append(f"- {alternative}")
    if record.get("impact"):
        lines.append(f"Impact: {record['impact']}")
    people = []
    if record.get("made_by"):
        people.append(f"made by {record['made_by']}")
    if _str_list(record.get("approved_by")):
        people.append(f"approved by {', '.join(_str_list(record.get('approved_by')))}")
    if people:
        lines.append("Decision " + "; ".join(people) + ".")
    content = "\n".join(lines).strip()
    record_id = str(record.get("id") or _hash(content)[:24])
    return EntryItem(
        "decisions",
        content,
        date_parse(record.get("timestamp")) or fallback_date,
        legacy_id_fit(f"{prefix}{record_id}"),
        tags=_str_list(record.get("tags")),
        importance=_level(record.get("impact")),
    )


def finding_item(record: dict, *, prefix: str, fallback_date: datetime) -> EntryItem | None:
    """Findings become lessons, keeping severity, evidence and recommendation in the text."""
    text = record.get("description") or record.get("finding") or record.get("content")
    if not isinstance(text, str) or not text.strip():
        return None
    lines = [text.strip(), ""]
    for label, key in (
        ("Severity", "severity"),
        ("Category", "category"),
        ("Evidence", "evidence"),
        ("Recommendation", "recommendation"),
        ("Status", "status"),
        ("Discovered by", "discovered_by"),
    ):
        if record.get(key):
            lines.append(f"{label}: {record[key]}")
    content = "\n".join(lines).strip()
    record_id = str(record.get("id") or _hash(content)[:24])
    return EntryItem(
        "lessons",
        content,
        date_parse(record.get("timestamp")) or fallback_date,
        legacy_id_fit(f"{prefix}{record_id}"),
        tags=["finding", *_str_list(record.get("tags"))],
        importance=_level(record.get("severity")),
    )


def preference_item(record: dict, *, prefix: str, fallback_date: datetime) -> EntryItem | None:
    """Preferences are lessons learned about the user (tagged `preference`), so injection finds them."""
    key, value, context = record.get("key"), record.get("value"), record.get("context")
    if key is None and value is None and not context:
        return None
    category = f" ({record['category']})" if record.get("category") else ""
    lines = [f"Preference{category}: {key} = {json.dumps(value) if not isinstance(value, str) else value}"]
    if context:
        lines += ["", str(context)]
    details = []
    if record.get("confidence") is not None:
        details.append(f"Confidence: {record['confidence']}")
    if _str_list(record.get("learned_from")):
        details.append(f"Learned from: {', '.join(_str_list(record.get('learned_from')))}")
    if details:
        lines += ["", *details]
    content = "\n".join(lines).strip()
    confidence = record.get("confidence")
    record_id = str(record.get("id") or _hash(content)[:24])
    return EntryItem(
        "lessons",
        content,
        date_parse(record.get("timestamp")) or fallback_date,
        legacy_id_fit(f"{prefix}{record_id}"),
        tags=["preference", *_str_list(record.get("tags"))],
        importance=float(confidence)
        if isinstance(confidence, int | float) and not isinstance(confidence, bool)
        else None,
    )


BMAD_KINDS = (
    ("decisions", decision_item, "made_by"),
    ("findings", finding_item, "discovered_by"),
    ("preferences", preference_item, None),
)


def bmad_session_import(importer: Importer, directory: Path) -> None:
    """One `sessions/{id}/` folder: manifest, the three record files into the vault, the conversation
    into a session."""
    report = importer.report
    report.say(f"{directory}")
    manifest = {}
    if (directory / "manifest.json").is_file():
        data = _read_json(directory / "manifest.json", report)
        if isinstance(data, dict):
            manifest = data
        elif data is not None:
            report.problem(directory / "manifest.json", "is not an object; using the folder name")
    session_id = str(manifest.get("session_id") or directory.name)
    agent_ids = [a for a in _str_list(manifest.get("agent_ids")) if a]
    primary = agent_ids[0] if agent_ids else None
    fallback_date = date_parse(manifest.get("created_at")) or _mtime(directory)
    manifest_tags = (
        _str_list((manifest.get("metadata") or {}).get("tags"))
        if isinstance(manifest.get("metadata"), dict)
        else []
    )
    for kind, build, author_key in BMAD_KINDS:
        path = directory / f"{kind}.jsonl"
        if not path.is_file():
            continue
        for number, record in enumerate(_jsonl(path, report), 1):
            item = build(record, prefix=f"{session_id}/", fallback_date=fallback_date)
            if item is None:
                report.problem(f"{path}:{number}", f"a {kind[:-1]} record without text; skipped")
                continue
            author = record.get(author_key) if author_key else None
            source_agent = (
                author if isinstance(author, str) and (not agent_ids or author in agent_ids) else primary
            )
            item.tags = [*item.tags, *[t for t in manifest_tags if t not in item.tags]]
            importer.entry_add(importer.agent(source_agent, where=path), item, where=f"{path}:{number}")
    importer.flush()
    conversation = directory / "conversation.jsonl"
    if conversation.is_file():
        records = _jsonl(conversation, report)
        messages = _messages_parse(records, where=conversation, report=report) or []
        speakers = Counter(r.get("agent_id") for r in records if isinstance(r.get("agent_id"), str))
        agent = importer.agent(
            primary or (speakers.most_common(1)[0][0] if speakers else None), where=conversation
        )
        if agent is not None and messages:
            sessions_store(
                importer,
                ParsedConversation(
                    source=str(conversation),
                    agent=agent.slug,
                    external_id=session_id,
                    messages=messages,
                    saved_at=date_parse(manifest.get("updated_at")) or _mtime(conversation),
                    metadata={k: manifest[k] for k in ("user_id", "agent_ids", "metadata") if k in manifest},
                ),
            )


def _shared_records(data) -> list[dict]:
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    if isinstance(data, dict):
        for key in ("preferences", "knowledge", "learnings", "items", "entries", "records"):
            if isinstance(data.get(key), list):
                return [r for r in data[key] if isinstance(r, dict)]
        # A plain map of preference name -> value.
        return [
            {"key": key, "value": value} if not isinstance(value, dict) else {"key": key, **value}
            for key, value in data.items()
            if key not in ("version", "updated_at", "created_at")
        ]
    return []


def bmad_shared_file_import(importer: Importer, path: Path) -> None:
    """`shared/*.json` (user-preferences.json, agent-knowledge.json): cross-session preferences and
    learnings. Records that look like decisions or findings are imported as such; the rest as lessons."""
    report = importer.report
    data = _read_json(path, report)
    if data is None:
        return
    records = _shared_records(data)
    if not records:
        report.problem(path, "holds no records; skipped")
        return
    fallback_date = _mtime(path)
    for number, record in enumerate(records, 1):
        prefix = f"shared/{path.stem}/"
        if "decision" in record:
            item = decision_item(record, prefix=prefix, fallback_date=fallback_date)
        elif "description" in record or "finding" in record:
            item = finding_item(record, prefix=prefix, fallback_date=fallback_date)
        elif "key" in record or "value" in record:
            item = preference_item(record, prefix=prefix, fallback_date=fallback_date)
        else:
            text = next(
                (
                    record[k]
                    for k in ("content", "knowledge", "learning", "insight", "text")
                    if isinstance(record.get(k), str)
                ),
                None,
            )
            item = (
                EntryItem(
                    "lessons",
                    text,
                    date_parse(record.get("timestamp")) or fallback_date,
                    legacy_id_fit(prefix + str(record.get("id") or _hash(text)[:24])),
                    tags=_str_list(record.get("tags")),
                )
                if text
                else None
            )
        if item is None:
            report.problem(f"{path} record {number}", "no text to import; skipped")
            continue
        agent_id = record.get("agent_id") or record.get("made_by") or record.get("discovered_by")
        importer.entry_add(
            importer.agent(agent_id if isinstance(agent_id, str) else None, where=path),
            item,
            where=f"{path} record {number}",
        )
    importer.flush()


def bmad_import(importer: Importer, root: Path) -> None:
    importer.report.say(f".bmad/memory: {root}")
    for manifest in (
        sorted((root / "sessions").glob("*/manifest.json")) if (root / "sessions").is_dir() else []
    ):
        bmad_session_import(importer, manifest.parent)
    # Session folders whose manifest is missing still hold records worth importing.
    for directory in sorted((root / "sessions").iterdir()) if (root / "sessions").is_dir() else []:
        if directory.is_dir() and not (directory / "manifest.json").exists():
            importer.report.problem(
                directory, "has no manifest.json; imported with the folder name as session id"
            )
            bmad_session_import(importer, directory)
    for path in sorted((root / "shared").glob("*.json")) if (root / "shared").is_dir() else []:
        bmad_shared_file_import(importer, path)
