"""Sessions in an export, and back: `{agent}/sessions/{id}.json` holds one session whole (its chat id,
model id, status and dates, every message of its tree with its parent, tool calls, state and dates, its
branches), and `.vault/checkpoints/{agent}.json` the agent's checkpoint in seed 000's form. The import
(`session_file_store`) gives the session back as it was, tree and branches included, without replaying
what an append triggers (the write-ahead scan, daily notes, the working buffer): their results are in
the export already (the scan's state rows, the buffer and the status transitions in the session's own
file: sessions_app.session_history). Messages keep their client ids; one that had none gets `export:{its id there}`, so a
second import of the same file adds nothing."""

import json
from collections.abc import Iterator
from datetime import datetime

from django.db import transaction
from django.db.models import Q

from memoryproject.copy_rows import ids_allocate, rows_copy
from memoryproject.errors import DomainError
from sessions_app import recovery, selectors, session_history
from sessions_app import services as session_services
from sessions_app.models import Branch, Checkpoint, Message, Role, Session, SessionStatus
from sessions_app.services.common import _LOCK_SESSION_CREATE, MAIN_BRANCH, _advisory_lock, reply_context
from vault.models import Agent
from vault.redaction import project_redaction_enabled, redact
from vault.text import text_prefix_chars
from vault.transfer.common import SESSION_FILE_FORMAT as SESSION_FORMAT
from vault.transfer.common import ImportReport, ParsedSessionFile, date_parse
from vault.transfer.export import CHECKPOINTS_DIR, SESSIONS_DIR, marker_ids

_MESSAGE_FIELDS = (
    "id", "parent_id", "client_id", "role", "text", "internal", "tool_calls", "tool_call_id", "state",
    "archived", "created_at",
)  # fmt: skip


def _iso(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else value.isoformat()


def session_data(session: Session, entry_ids: dict[int, str] | None = None) -> dict:
    """One session as its export file holds it. An archived session's messages come from its archive.
    `entry_ids`: the agent's entries' ids in the export, which its state rows name (session_history)."""
    branches = list(Branch.objects.filter(session=session).order_by("id"))
    heads = {b.pk: (b.head_id, b.from_message_id) for b in branches}
    payload = {}
    if session.status == SessionStatus.ARCHIVED:
        payload = selectors.archive_payload(session)
        rows = sorted(payload.get("messages", []), key=lambda row: row["id"])
        heads |= {int(pk): tuple(pair) for pk, pair in payload.get("branches", {}).items()}
    else:
        rows = list(Message.objects.filter(session=session).order_by("id").values(*_MESSAGE_FIELDS))
    active = next((b.name for b in branches if b.pk == session.active_branch_id), None)
    return {
        "format": SESSION_FORMAT,
        "chat_id": session.external_id,
        "model_id": session.model_id,
        "status": session.status,
        "created_at": _iso(session.created_at),
        "last_activity_at": _iso(session.last_activity_at),
        "closed_at": _iso(session.closed_at),
        "max_input_tokens": session.max_input_tokens,
        "buffer_started_at": _iso(session.buffer_started_at),
        "status_changed_at": _iso(session.status_changed_at),
        "restored_at": _iso(session.restored_at),
        "active_branch": active,
        "branches": [
            {"name": b.name, "head": _key(heads[b.pk][0]), "from": _key(heads[b.pk][1])} for b in branches
        ],
        "messages": [
            {
                "key": _key(row["id"]),
                "parent": _key(row["parent_id"]),
                "client_id": row["client_id"],
                "role": row["role"],
                "text": row["text"],
                "internal": row["internal"],
                "tool_calls": row["tool_calls"],
                "tool_call_id": row["tool_call_id"],
                "state": row["state"],
                "archived": row["archived"],
                "created_at": _iso(row["created_at"]),
            }
            for row in rows
        ],
        **session_history.session_rows(session, entry_ids or {}, payload.get("state", {})),
    }


def _text(value, limit: int) -> str:
    """A string field of an untrusted file, cut to `limit` characters between characters a reader sees
    (text_prefix_chars): anything else is empty."""
    return text_prefix_chars(value, limit) if isinstance(value, str) else ""


def _key(pk: int | None) -> str | None:
    return None if pk is None else str(pk)


def agent_session_files(agent: Agent, folder: str) -> Iterator[tuple[str, str]]:
    """The agent's sessions and checkpoint as export files (vault.transfer.export's `extra`)."""
    entry_ids = marker_ids(agent)
    for session in Session.objects.filter(agent=agent).order_by("id"):
        text = json.dumps(session_data(session, entry_ids), ensure_ascii=False, indent=1)
        yield f"{folder}/{SESSIONS_DIR}/{session.pk}.json", text + "\n"
    checkpoint = Checkpoint.objects.filter(agent=agent).first()
    if checkpoint is not None:
        data = {
            "agentId": agent.slug,
            "savedAt": int(checkpoint.saved_at.timestamp() * 1000),
            "messages": checkpoint.messages,
            "chatId": checkpoint.chat_id,
            "modelId": checkpoint.model_id,
        }
        yield f"{CHECKPOINTS_DIR}/{folder}.json", json.dumps(data, ensure_ascii=False, indent=1) + "\n"


# --- The import -------------------------------------------------------------------------------------


def _messages_read(report: ImportReport, source: str, raws) -> list[dict] | None:
    """The file's messages that can be stored, each checked as an append checks it; the others reported.
    A message whose parent is not an earlier message of the file hangs from the root, reported."""
    if not isinstance(raws, list):
        report.problem(source, "has no 'messages' list; skipped")
        return None
    messages, keys, client_ids = [], set(), set()
    for index, raw in enumerate(raws):
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("text"), str)
            or raw.get("role") not in Role.values
        ):
            report.problem(source, f"message {index} has no text or an unknown role; skipped")
            continue
        key = str(raw.get("key") or index)
        client_id = str(raw.get("client_id") or f"export:{key}")
        if key in keys or client_id in client_ids:
            report.problem(source, f"message {index}: its key or client id is an earlier message's; skipped")
            continue
        try:
            session_services.message_input_check(
                {"role": raw["role"], "text": raw["text"], "client_id": client_id}, 0
            )
        except DomainError as exc:
            report.problem(
                source, f"message {key}: {exc.detail.removeprefix('messages[0]: ').rstrip('.')}; skipped"
            )
            continue
        parent = raw.get("parent")
        if parent is not None and str(parent) not in keys:
            report.problem(
                source, f"message {key}: its parent {parent} is not an earlier message; hung from the root"
            )
            parent = None
        keys.add(key)
        client_ids.add(client_id)
        tool_calls = raw.get("tool_calls") if isinstance(raw.get("tool_calls"), list) else []
        state = raw.get("state") if isinstance(raw.get("state"), dict) else {}
        messages.append(
            {
                "key": key,
                "parent": None if parent is None else str(parent),
                "client_id": client_id,
                "role": raw["role"],
                "text": raw["text"],
                "internal": bool(raw.get("internal", False)),
                "tool_calls": tool_calls,
                "tool_call_id": _text(raw.get("tool_call_id"), 200),
                "state": state,
                "archived": bool(raw.get("archived", False)),
                "created_at": date_parse(raw.get("created_at")),
            }
        )
    return messages


def _session_holds_any(session: Session, texts: dict[str, str]) -> bool:
    """Whether the session holds one of these messages (client id -> text): the same client id with the
    same text (as stored, redacted or not). A client id alone is not enough: "m1" is anyone's."""
    if session.status == SessionStatus.ARCHIVED:
        rows = [row for row in selectors.archive_messages(session) if row["client_id"] in texts]
    else:
        rows = Message.objects.filter(session=session, client_id__in=list(texts)).values("client_id", "text")
    return any(row["text"] in (texts[row["client_id"]], redact(texts[row["client_id"]])) for row in rows)


def chat_id_apart(
    importer, agent: Agent, source_agent: str, chat_id: str, texts: dict[str, str], where
) -> str:
    """The chat id an imported session of `source_agent` takes in `agent` (its target, after --agent-map).
    Two source agents mapped onto one may each have a session with the same chat id: stored as one, the
    second's messages went into the first's conversation (one whose client id the first had used was
    skipped as already imported). The first (an agent that keeps its id goes first) keeps the chat id;
    a session of another source agent, or of a renamed agent whose chat id a stored session holding none
    of its messages has (the target's own chat, another source's from an earlier run), is kept apart as
    `{chat id}@{source agent}`, reported the first time; the next run finds it there. `texts`: the
    session's messages, client id -> text."""
    source_agent = source_agent or agent.slug
    if not chat_id:
        return chat_id
    suffix = f"@{source_agent}"
    apart = text_prefix_chars(chat_id, 200 - len(suffix)) + suffix
    claims = importer.chat_claims
    claimer = claims.get((agent.pk, chat_id))
    taken = None
    if claimer is not None and claimer != source_agent:
        taken = f"that of agent {claimer}'s session in {agent.slug} (both mapped onto it)"
    elif claimer is None and source_agent != agent.slug:
        if Session.objects.filter(agent=agent, external_id=apart).exists():  # kept apart by an earlier run
            claims[(agent.pk, apart)] = source_agent
            return apart
        stored = Session.objects.filter(agent=agent, external_id=chat_id).first()
        if stored is not None and texts and not _session_holds_any(stored, texts):
            taken = f"that of another session of {agent.slug}, holding none of its messages"
    if taken is None:
        claims[(agent.pk, chat_id)] = source_agent
        return chat_id
    if not Session.objects.filter(agent=agent, external_id=apart).exists():
        importer.report.problem(
            where, f"chat id {chat_id!r} of agent {source_agent} is already {taken}; kept apart as {apart!r}"
        )
    claims[(agent.pk, apart)] = source_agent
    return apart


def _session_find(agent: Agent, chat_id: str, client_ids: set[str]) -> Session | None:
    """The stored session this file is: by chat id, else the one holding one of its messages (an
    archived one's messages are in its archive)."""
    if chat_id:
        return Session.objects.filter(agent=agent, external_id=chat_id).first()
    found = Message.objects.filter(agent=agent, client_id__in=client_ids).values_list("session_id", flat=True)
    if found.first() is not None:
        return Session.objects.get(pk=found.first())
    for session in Session.objects.filter(agent=agent, external_id="", status=SessionStatus.ARCHIVED):
        if any(row["client_id"] in client_ids for row in selectors.archive_messages(session)):
            return session
    return None


def _rows_build(
    agent: Agent, session: Session, messages: list[dict], every: list[dict], known: dict[str, int], fallback
):
    """Message rows for `messages` (parents first), parents mapped to this server's ids: `every` is all the
    file's messages, `known` the ids of the stored ones by client id; returns the rows and the file's key
    -> new id."""
    ids = dict(zip((m["key"] for m in messages), ids_allocate(Message, len(messages)), strict=True))
    by_key = {m["key"]: m for m in every}
    redacting = project_redaction_enabled(agent.project_id)
    rows = []
    for message in messages:
        parent = by_key.get(message["parent"]) if message["parent"] else None
        parent_id = None
        if parent is not None:
            parent_id = known.get(parent["client_id"]) or ids.get(parent["key"])
        text = redact(message["text"]) if redacting else message["text"]
        rows.append(
            Message(
                pk=ids[message["key"]],
                project_id=agent.project_id,
                agent=agent,
                session=session,
                parent_id=parent_id,
                client_id=message["client_id"],
                role=message["role"],
                text=text,
                internal=message["internal"],
                tool_calls=message["tool_calls"],
                tool_call_id=message["tool_call_id"],
                state=message["state"],
                archived=message["archived"],
                created_at=message["created_at"] or fallback,
                reply_to_text=reply_context(parent["text"] if parent else ""),
            )
        )
    return rows, ids


def _session_create(
    agent: Agent, chat_id: str, data: dict, messages: list[dict], fallback: datetime
) -> tuple[Session, dict[str, int]]:
    """A new session holding the file's tree, branches, status and dates; with its messages' ids here by
    their keys in the file."""
    session = Session.objects.create(
        project_id=agent.project_id,
        agent=agent,
        external_id=chat_id,
        model_id=_text(data.get("model_id"), 200),
    )
    rows, ids = _rows_build(agent, session, messages, messages, {}, fallback)
    rows_copy(rows)
    branches = {}
    for raw in data.get("branches") if isinstance(data.get("branches"), list) else []:
        name = _text(raw.get("name"), 100) if isinstance(raw, dict) else ""
        if name and name not in branches:
            branches[name] = Branch.objects.create(
                session=session,
                name=name,
                head_id=ids.get(str(raw.get("head"))),
                from_message_id=ids.get(str(raw.get("from"))),
            )
    if not branches:
        branches[MAIN_BRANCH] = Branch.objects.create(
            session=session, name=MAIN_BRANCH, head_id=rows[-1].pk if rows else None
        )
    active = branches.get(_text(data.get("active_branch"), 100)) or next(iter(branches.values()))
    dates = [row.created_at for row in rows] or [fallback]
    status = data.get("status") if data.get("status") in SessionStatus.values else SessionStatus.IDLE
    limit = data.get("max_input_tokens")
    Session.objects.filter(pk=session.pk).update(
        active_branch=active,
        status=SessionStatus.CLOSED if status == SessionStatus.ARCHIVED else status,
        created_at=date_parse(data.get("created_at")) or min(dates),
        last_activity_at=date_parse(data.get("last_activity_at")) or max(dates),
        closed_at=date_parse(data.get("closed_at")),
        max_input_tokens=limit if type(limit) is int and 0 < limit < 2**31 else None,
        buffer_started_at=date_parse(data.get("buffer_started_at")),
        status_changed_at=date_parse(data.get("status_changed_at")),
        restored_at=date_parse(data.get("restored_at")),
    )
    session.refresh_from_db()
    return session, ids


def _archive_as_exported(session: Session, data: dict) -> None:
    """A session archived in the export is archived again, once its rows are stored (the archive keeps
    its state rows' links to its messages), keeping the date its status changed there."""
    if data.get("status") != SessionStatus.ARCHIVED:
        return
    session_services.session_archive(session=session, reason="imported archived", by="import")
    if (changed := date_parse(data.get("status_changed_at"))) is not None:
        Session.objects.filter(pk=session.pk).update(status_changed_at=changed)


def _found(
    importer, item: ParsedSessionFile, session: Session, messages: list[dict], *, by_key=None, by_client=None
) -> None:
    """Tell the import which session and messages here the file's are (entries' provenance names them by
    their keys in the export): message ids here by their keys in the file (`by_key`, the new ones) or
    by client id (`by_client`, those stored before)."""
    by_key, by_client = by_key or {}, by_client or {}
    keys = {}
    for message in messages:
        pk = by_key.get(message["key"]) or by_client.get(message["client_id"])
        if pk is not None:
            keys[message["key"]] = pk
    importer.sessions_found[(item.source_agent or item.agent, item.key)] = (session.pk, keys)


def _branches_follow(
    report, source: str, session: Session, data: dict, messages: list[dict], pks: dict
) -> None:
    """After new messages were added to a stored session: each branch of the file whose stored namesake
    points at a message on the file branch's way back (the session went on since the last import) moves
    to the file's head; a branch the session does not have is created; one that went its own way here
    is left and reported. `pks`: the file's message keys -> ids here."""
    parents = {m["key"]: m["parent"] for m in messages}
    for raw in data.get("branches") if isinstance(data.get("branches"), list) else []:
        name = _text(raw.get("name"), 100) if isinstance(raw, dict) else ""
        head = pks.get(str(raw.get("head"))) if name else None
        if head is None:
            continue
        stored = Branch.objects.filter(session=session, name=name).first()
        if stored is None:
            Branch.objects.create(
                session=session, name=name, head_id=head, from_message_id=pks.get(str(raw.get("from")))
            )
            continue
        way_back, key = set(), str(raw.get("head"))
        while key is not None and key not in way_back:
            way_back.add(key)
            key = parents.get(key)
        if stored.head_id is None or stored.head_id in {pks.get(k) for k in way_back}:
            Branch.objects.filter(pk=stored.pk).update(head_id=head)
        else:
            report.problem(source, f"branch {name!r} went its own way here since; left as it is")
    last = date_parse(data.get("last_activity_at"))
    if last is not None:
        Session.objects.filter(pk=session.pk, last_activity_at__lt=last).update(last_activity_at=last)


def _restore_follow(session: Session, data: dict) -> None:
    """A stored session restored from an archive at the source since: it takes that later restored_at
    (the lifecycle counts its quiet days from it), new messages or not; an earlier one changes nothing."""
    restored = date_parse(data.get("restored_at"))
    if restored is not None and session.status != SessionStatus.ARCHIVED:
        Session.objects.filter(pk=session.pk).filter(
            Q(restored_at__isnull=True) | Q(restored_at__lt=restored)
        ).update(restored_at=restored)


def _rows_store(importer, item: ParsedSessionFile, session: Session, agent: Agent) -> None:
    """The file's state rows, working buffer and transitions, on the session and messages stored here."""
    _, messages = importer.sessions_found[(item.source_agent or item.agent, item.key)]
    session_history.session_rows_store(
        importer, item.source, session, agent, item.data, messages, folder=item.source_agent or item.agent
    )


def session_file_store(importer, item: ParsedSessionFile, agent: Agent) -> None:
    """Store one session file of an export: a new session as it was, or the messages a stored session
    (the same chat id, or holding its messages) lacks, hung from their parents. Idempotent."""
    report = importer.report
    data = item.data
    messages = _messages_read(report, item.source, data.get("messages"))
    if messages is None:
        return
    if data["messages"] and not messages:
        report.problem(item.source, "none of its messages can be stored; session skipped")
        return
    fallback = date_parse(data.get("last_activity_at")) or item.saved_at
    try:
        with transaction.atomic():
            # The locks of the live write path (session_ensure, an append): an agent creating this chat,
            # or writing to it, meanwhile waits for the import to commit instead of failing on the unique
            # chat id or client id; the session is looked up once they are held.
            _advisory_lock(_LOCK_SESSION_CREATE, agent.pk)
            client_ids = {m["client_id"] for m in messages}
            chat_id = chat_id_apart(
                importer,
                agent,
                item.source_agent,
                _text(data.get("chat_id"), 200),
                {m["client_id"]: m["text"] for m in messages},
                item.source,
            )
            session = _session_find(agent, chat_id, client_ids)
            if session is not None:
                session = Session.objects.select_for_update(of=("self",)).get(pk=session.pk)
            if session is None:
                session, ids = _session_create(agent, chat_id, data, messages, fallback)
                _found(importer, item, session, messages, by_key=ids)
                _rows_store(importer, item, session, agent)
                _archive_as_exported(session, data)
                report.counts["sessions created"] += 1
                report.counts["messages stored"] += len(messages)
                return
            if session.status == SessionStatus.ARCHIVED:
                stored = {row["client_id"]: row["id"] for row in selectors.archive_messages(session)}
            else:
                stored = dict(Message.objects.filter(session=session).values_list("client_id", "pk"))
            _found(importer, item, session, messages, by_client=stored)
            _restore_follow(session, data)
            new = [m for m in messages if m["client_id"] not in stored]
            report.counts["messages already imported (skipped)"] += len(messages) - len(new)
            if not new or session.status == SessionStatus.ARCHIVED:
                _rows_store(importer, item, session, agent)
            if not new:
                report.counts["sessions already imported (skipped)"] += 1
                return
            if session.status == SessionStatus.ARCHIVED:
                report.problem(
                    item.source,
                    f"session {session.pk} is archived here: restore it, then import again to add {len(new)} message(s)",
                )
                return
            known = dict(
                Message.objects.filter(
                    session=session, client_id__in={m["client_id"] for m in messages}
                ).values_list("client_id", "pk")
            )
            rows, ids = _rows_build(agent, session, new, messages, known, fallback)
            rows_copy(rows)
            recovery.context_bound_clear([session.pk])  # grown other than by an append
            _found(importer, item, session, messages, by_key=ids, by_client=stored)
            _rows_store(importer, item, session, agent)
            _branches_follow(
                report,
                item.source,
                session,
                data,
                messages,
                {**{m["key"]: known.get(m["client_id"]) for m in messages}, **ids},
            )
            report.counts["sessions updated"] += 1
            report.counts["messages stored"] += len(rows)
    except DomainError as exc:
        report.problem(item.source, f"session not stored: {exc.detail}")
