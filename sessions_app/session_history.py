"""What a session keeps besides its messages, in its export file and back: the write-ahead scan's state rows
(`state`), the working buffer (`buffer`) and the lifecycle's status transitions (`transitions`).

```
"state":       [{"message": "301", "category", "text", "trigger", "durable", "entry": "42", "created_at"}]
"buffer":      [{"message": "301", "side": "human|agent", "text", "created_at"}]
"transitions": [{"from", "to", "reason", "by", "at"}]
```

`message` is the key of a message in the same file, `entry` the id in the export of the long-term entry a
durable fact wrote (`{agent}/{category}.md`). The import attaches each row to the session and messages it
stored from the file and to the entry it stored under that id (ids here differ). A row already there (the
same kind, text and date) is not added again; texts are redacted when the project redacts, as the
messages are. A session file without these lists (an earlier export) imports as before; a row of the
wrong kind is ignored and reported."""

from django.db import transaction

from sessions_app.models import Message, Session, SessionStateEntry, SessionTransition, WorkingBufferEntry
from vault.models import Agent
from vault.redaction import project_redaction_enabled, redact
from vault.transfer.common import date_parse

_TEXT_MAX = {"category": 32, "trigger": 300, "reason": 300, "by": 200, "status": 16}


def _iso(value) -> str | None:
    return None if value is None else value.isoformat()


def _key(pk) -> str | None:
    return None if pk is None else str(pk)


def session_rows(session: Session, entry_ids: dict[int, str], archived_links: dict[str, int]) -> dict:
    """The session's state rows, working buffer and transitions as its export file holds them.
    `entry_ids`: the agent's entries' ids in the export; `archived_links`: an archived session's state
    rows' messages (its archive keeps them: the rows' own links were cut when the messages left)."""
    state = [
        {
            "message": _key(row["message_id"] or archived_links.get(str(row["id"]))),
            "category": row["category"],
            "text": row["text"],
            "trigger": row["trigger"],
            "durable": row["durable"],
            "entry": entry_ids.get(row["vault_entry_id"]),
            "created_at": _iso(row["created_at"]),
        }
        for row in SessionStateEntry.objects.filter(session=session)
        .order_by("created_at", "id")
        .values("id", "message_id", "category", "text", "trigger", "durable", "vault_entry_id", "created_at")
    ]
    buffer = [
        {
            "message": _key(row["message_id"]),
            "side": row["side"],
            "text": row["text"],
            "created_at": _iso(row["created_at"]),
        }
        for row in WorkingBufferEntry.objects.filter(session=session)
        .order_by("created_at", "id")
        .values("message_id", "side", "text", "created_at")
    ]
    transitions = [
        {
            "from": row["from_status"],
            "to": row["to_status"],
            "reason": row["reason"],
            "by": row["by"],
            "at": _iso(row["at"]),
        }
        for row in SessionTransition.objects.filter(session=session)
        .order_by("at", "id")
        .values("from_status", "to_status", "reason", "by", "at")
    ]
    return {"state": state, "buffer": buffer, "transitions": transitions}


# --- The import -------------------------------------------------------------------------------------


def _text(raw: dict, name: str, limit: int | None = None):
    value = raw.get(name, "")
    ok = isinstance(value, str) and "\x00" not in value and (limit is None or len(value) <= limit)
    return value if ok else None


def _rows_read(raws, fields: dict) -> tuple[list[dict], int]:
    """(the readable rows, how many were not): `fields` maps a row's key to its reader."""
    if raws is None:
        return [], 0
    if not isinstance(raws, list):
        return [], 1
    rows, bad = [], 0
    for raw in raws:
        row = {name: read(raw) for name, read in fields.items()} if isinstance(raw, dict) else None
        if row is None or any(value is None for value in row.values()):
            bad += 1
        else:
            rows.append(row)
    return rows, bad


def _message(raw: dict):
    value = raw.get("message")
    return "" if value is None else str(value) if isinstance(value, str | int) else None


def _date(name: str):
    return lambda raw: date_parse(raw.get(name)) if isinstance(raw.get(name), str) else None


_STATE = {
    "message": _message,
    "category": lambda raw: _text(raw, "category", _TEXT_MAX["category"]),
    "text": lambda raw: _text(raw, "text"),
    "trigger": lambda raw: _text(raw, "trigger", _TEXT_MAX["trigger"]),
    "durable": lambda raw: raw.get("durable", False) if isinstance(raw.get("durable", False), bool) else None,
    "entry": lambda raw: (
        "" if raw.get("entry") is None else raw["entry"] if isinstance(raw["entry"], str) else None
    ),
    "created_at": _date("created_at"),
}
_BUFFER = {
    "message": _message,
    "side": lambda raw: raw.get("side") if raw.get("side") in WorkingBufferEntry.Side.values else None,
    "text": lambda raw: _text(raw, "text"),
    "created_at": _date("created_at"),
}
_TRANSITIONS = {
    "from": lambda raw: _text(raw, "from", _TEXT_MAX["status"]),
    "to": lambda raw: _text(raw, "to", _TEXT_MAX["status"]),
    "reason": lambda raw: _text(raw, "reason", _TEXT_MAX["reason"]),
    "by": lambda raw: _text(raw, "by", _TEXT_MAX["by"]),
    "at": _date("at"),
}


def session_rows_store(
    importer, source: str, session: Session, agent: Agent, data: dict, messages: dict, *, folder: str
) -> None:
    """Store the file's state rows, working buffer and transitions on `session` (stored from the file),
    each row's message mapped through `messages` (the file's message keys -> ids here), a state row's
    entry through the entries the import stored under their ids. Rows already there are skipped."""
    report = importer.report
    state, bad_state = _rows_read(data.get("state"), _STATE)
    buffer, bad_buffer = _rows_read(data.get("buffer"), _BUFFER)
    transitions, bad_transitions = _rows_read(data.get("transitions"), _TRANSITIONS)
    bad = bad_state + bad_buffer + bad_transitions
    if bad:
        report.problem(source, f"{bad} state, buffer or transition row(s) of the wrong kind; ignored")
    if project_redaction_enabled(session.project_id):  # as the session's messages are stored
        for row in (*state, *buffer):
            row["text"] = redact(row["text"])
    with transaction.atomic():
        _state_store(importer, session, agent, state, messages, folder)
        _buffer_store(report, session, buffer, messages)
        _transitions_store(report, session, agent, transitions)


def _state_store(
    importer, session: Session, agent: Agent, rows: list[dict], messages: dict, folder: str
) -> None:
    stored = set(
        SessionStateEntry.objects.filter(session=session).values_list("category", "text", "created_at")
    )
    rows = [row for row in rows if (row["category"], row["text"], row["created_at"]) not in stored]
    # Only messages in the hot table can be linked (an archived session's are in its archive).
    live = set(
        Message.objects.filter(
            session=session, pk__in=[messages.get(row["message"]) for row in rows]
        ).values_list("pk", flat=True)
    )
    entries = importer.entry_pks(agent.pk, [row["entry"] for row in rows if row["entry"]], folder)
    created = SessionStateEntry.objects.bulk_create(
        [
            SessionStateEntry(
                project_id=session.project_id,
                agent=agent,
                session=session,
                message_id=messages.get(row["message"]) if messages.get(row["message"]) in live else None,
                category=row["category"],
                text=row["text"],
                trigger=row["trigger"],
                durable=row["durable"],
                vault_entry_id=entries.get(row["entry"]),
                created_at=row["created_at"],
            )
            for row in rows
        ]
    )
    importer.report.counts["session state rows imported"] += len(created)


def _buffer_store(report, session: Session, rows: list[dict], messages: dict) -> None:
    stored = set(WorkingBufferEntry.objects.filter(session=session).values_list("side", "text", "created_at"))
    created = WorkingBufferEntry.objects.bulk_create(
        [
            WorkingBufferEntry(
                session=session,
                message_id=messages.get(row["message"]),
                side=row["side"],
                text=row["text"],
                created_at=row["created_at"],
            )
            for row in rows
            if (row["side"], row["text"], row["created_at"]) not in stored
        ]
    )
    report.counts["working buffer rows imported"] += len(created)


def _transitions_store(report, session: Session, agent: Agent, rows: list[dict]) -> None:
    stored = set(
        SessionTransition.objects.filter(session=session).values_list(
            "from_status", "to_status", "reason", "by", "at"
        )
    )
    created = SessionTransition.objects.bulk_create(
        [
            SessionTransition(
                project_id=session.project_id,
                agent=agent,
                session=session,
                session_pk=session.pk,
                from_status=row["from"],
                to_status=row["to"],
                reason=row["reason"],
                by=row["by"],
                at=row["at"],
            )
            for row in rows
            if (row["from"], row["to"], row["reason"], row["by"], row["at"]) not in stored
        ]
    )
    report.counts["session transitions imported"] += len(created)
