"""Memory as earlier versions stored it, written with their models (the migration state's historical
models, which know nothing of today's services): what an operator's database holds before an upgrade.

Two states. EARLY is the oldest from which every kind of memory can be written: entries, their versions,
workspace files, sessions with a branched message tree, checkpoints. HALFWAY is the last state before
search parsed identifiers and paths by their words (vault 0017, sessions_app 0010, search 0008): it adds
what EARLY's schema could not hold (supersede chains, review items and policies, session archives,
queued daily-note exchanges) and the rows those migrations' backfills must recompute.
"""

import json
import zlib
from datetime import UTC, datetime, timedelta

from sessions_app.services.common import reply_context
from vault.trust import content_hash, sketch, word_set

EARLY = [
    ("vault", "0002_workspace_files"),
    ("sessions_app", "0002_branches_checkpoints_state"),
    ("search", "0001_initial"),
]
HALFWAY = [
    ("vault", "0016_queued_note_appends"),
    ("sessions_app", "0009_message_session_index_dropped"),
    ("search", "0007_vocabulary_file_words_known"),
]

WRITTEN_AT = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)

# What each table held, by column, as the tests compare it before and after the upgrade.
EARLY_COLUMNS = {
    "vault_project": "slug, name, context",
    "vault_agent": "project_id, slug, name",
    "vault_projectcontextversion": "project_id, content, changed_by",
    "vault_vaultentry": (
        "agent_id, project_id, category, content, tags, status, source, importance, created_by, legacy_id,"
        " created_at, updated_at, access_count, last_accessed_at"
    ),
    "vault_entryversion": "entry_id, agent_id, action, category, content, tags, status, importance, changed_by",
    "vault_workspacefile": "agent_id, project_id, path, content, enabled, sort_order, size, deleted_at",
    "vault_workspacefileversion": "file_id, action, content, changed_by",
    "sessions_app_session": "agent_id, project_id, external_id, model_id, status, active_branch_id",
    "sessions_app_message": (
        "session_id, agent_id, parent_id, client_id, role, text, internal, tool_calls, tool_call_id, state,"
        " archived, created_at"
    ),
    "sessions_app_branch": "session_id, name, from_message_id, head_id",
    "sessions_app_checkpoint": "agent_id, session_id, messages, chat_id, model_id, saved_at",
    "sessions_app_sessionstateentry": "session_id, message_id, category, text, durable",
}
HALFWAY_COLUMNS = EARLY_COLUMNS | {
    "vault_vaultentry": EARLY_COLUMNS["vault_vaultentry"]
    + ", supersedes_id, confidence, content_hash, sketch",
    "vault_reviewitem": "entry_id, other_entry_id, kind, detail, resolution, resolved_at, resolved_by",
    "vault_reviewpolicy": "project_id, category, hold_agent_writes, hold_extracted",
    "sessions_app_sessionarchive": "session_id, agent_id, payload, message_count, text",
    "vault_queuednoteappend": "agent_id, path, parts",
}

# Whitespace that str.split() takes and a regular expression's \s may not (no-break, em and
# ideographic spaces), in the turn a reply answers: the reply's stored context is that turn's end with
# whitespace collapsed, and sessions_app 0006 derived it in SQL for the messages stored before.
LONG_QUESTION = (
    "Thanks.  And the retry budget for getUserById?\n\t"
    + "It is called by the checkout,\u00a0the invoice mailer\u2003and the nightly reconciliation; " * 5
    + "which of them retries\u3000first?"
)


def _at(minutes: int) -> datetime:
    return WRITTEN_AT + timedelta(minutes=minutes)


def early_memory_write(apps) -> dict:
    """Entries of every category with tags and an edit, workspace files (one deleted) with versions, a
    session whose messages form a tree with two branches, a checkpoint and a session-state entry."""
    Project = apps.get_model("vault", "Project")
    Agent = apps.get_model("vault", "Agent")
    project = Project.objects.create(
        slug="acme", name="Acme", context="# Acme\nPayments platform, wombat team."
    )
    apps.get_model("vault", "ProjectContextVersion").objects.create(
        project=project, content="# Acme\nPayments.", changed_by="curator"
    )
    dev = Agent.objects.create(project=project, slug="dev", name="Developer")
    entries = _early_entries(apps, project, dev)
    files = _early_files(apps, project, dev)
    session, messages = _early_session(apps, project, dev)
    return {"project": project.pk, "agent": dev.pk, "entries": entries, "files": files, "messages": messages}


def _early_entries(apps, project, dev) -> dict:
    VaultEntry = apps.get_model("vault", "VaultEntry")
    written = [
        (
            "decisions",
            "We decided to run the quokka billing worker from src/worker/queue_runner.py",
            ["billing"],
        ),
        (
            "lessons",
            "fetchInvoiceTotals timed out after 500ms on api.internal.example.com; v2.4.1 fixed it",
            ["performance", "invoices"],
        ),
        ("tasks", "Migrar o banco de dados até sexta-feira: a replicação está atrasada", []),
        # Chinese, stored before search cut CJK runs into their pairs (search 0012 recomputes it).
        (
            "projects",
            "Project narwhal: the ingestion pipeline for partner feeds（合作伙伴数据接入管道）",
            ["narwhal"],
        ),
        ("handoffs", "Next session: review the wombat deployment checklist", ["handoff"]),
    ]
    ids = {}
    for minute, (category, content, tags) in enumerate(written):
        entry = VaultEntry.objects.create(
            project=project,
            agent=dev,
            category=category,
            content=content,
            tags=tags,
            status="archived" if category == "handoffs" else "active",
            importance=0.8 if category == "decisions" else 0.5,
            created_by="token:dev",
            created_at=_at(minute),
            updated_at=_at(minute + 30),
            access_count=minute,
        )
        ids[category] = entry.pk
    apps.get_model("vault", "EntryVersion").objects.create(
        entry_id=ids["decisions"],
        agent=dev,
        action="edit",
        category="decisions",
        content="We decided to run the billing worker from cron",
        tags=["billing"],
        status="active",
        importance=0.5,
        changed_by="token:dev",
    )
    return ids


def _early_files(apps, project, dev) -> dict:
    WorkspaceFile = apps.get_model("vault", "WorkspaceFile")
    written = {
        "MEMORY.md": "# Memory\n\n- The quokka worker runs nightly.\n- Ledger lives in postgres.ledger.internal\n",
        "memory/2026-11-20.md": (
            "# 2026-11-20\n\n- user: where is the getUserById handler?\n"
            "- assistant: in services/users.py, next to loadUserProfile\n"
        ),
        "notes/old.md": "Scratch notes about the pangolin migration\n",
        "otters.md": "カワウソのエクスポーターは毎晩動く\n",
    }
    ids = {}
    for path, content in written.items():
        file = WorkspaceFile.objects.create(
            project=project,
            agent=dev,
            path=path,
            content=content,
            enabled=path == "MEMORY.md",
            size=len(content.encode()),
            deleted_at=_at(50) if path.startswith("notes/") else None,
        )
        ids[path] = file.pk
    apps.get_model("vault", "WorkspaceFileVersion").objects.create(
        file_id=ids["MEMORY.md"], action="edit", content="# Memory\n", changed_by="token:dev"
    )
    return ids


def _early_session(apps, project, dev):
    Session = apps.get_model("sessions_app", "Session")
    Message = apps.get_model("sessions_app", "Message")
    Branch = apps.get_model("sessions_app", "Branch")
    session = Session.objects.create(project=project, agent=dev, external_id="chat-early", model_id="model-1")
    turns = [
        ("m1", None, "user", "Where does the platypus exporter keep its cursor?"),
        (
            "m2",
            "m1",
            "assistant",
            "It keeps it in exporter_state.cursor_position, flushed every minute（每分钟刷新）.",
        ),
        ("m3", "m2", "user", LONG_QUESTION),
        ("m4", "m3", "assistant", "Three retries, then the checkout fails fast."),
        ("m5", "m3", "assistant", "Five retries with exponential backoff for the mailer."),
    ]
    rows = {}
    for minute, (client_id, parent, role, text) in enumerate(turns):
        rows[client_id] = Message.objects.create(
            project=project,
            agent=dev,
            session=session,
            parent=rows.get(parent),
            client_id=client_id,
            role=role,
            text=text,
            created_at=_at(minute),
        )
    main = Branch.objects.create(session=session, name="main", head=rows["m4"])
    Branch.objects.create(session=session, name="retry-alt", from_message=rows["m3"], head=rows["m5"])
    session.active_branch = main
    session.save()
    apps.get_model("sessions_app", "Checkpoint").objects.create(
        project=project,
        agent=dev,
        session=session,
        messages=[{"role": "user", "text": rows["m1"].text}, {"role": "assistant", "text": rows["m2"].text}],
        chat_id="chat-early",
        model_id="model-1",
        saved_at=_at(10),
    )
    apps.get_model("sessions_app", "SessionStateEntry").objects.create(
        project=project,
        agent=dev,
        session=session,
        message=rows["m1"],
        category="decision",
        text="platypus exporter cursor",
        created_at=_at(1),
    )
    return session, {key: row.pk for key, row in rows.items()}


def halfway_memory_write(apps, early: dict) -> dict:
    """A supersede chain, an entry held for review with its items and a policy, a conversation with its
    reply context, an archived session, a daily note holding identifiers and a queued exchange."""
    project = apps.get_model("vault", "Project").objects.get(pk=early["project"])
    dev = apps.get_model("vault", "Agent").objects.get(pk=early["agent"])
    entries = _halfway_entries(apps, project, dev)
    WorkspaceFile = apps.get_model("vault", "WorkspaceFile")
    note = (
        "# 2026-11-21\n\n- user: is loadUserProfile cached?\n- assistant: yes, in redis.cluster.local:6379\n"
    )
    file = WorkspaceFile.objects.create(
        project=project, agent=dev, path="memory/2026-11-21.md", content=note, size=len(note.encode())
    )
    apps.get_model("vault", "QueuedNoteAppend").objects.create(
        agent=dev, path="memory/2026-11-21.md", parts=[["- user: and the ocelot cache?\n", "ocelot cache"]]
    )
    messages = _halfway_conversation(apps, project, dev)
    archived = _halfway_archived_session(apps, project, dev)
    return {
        "entries": entries,
        "files": {"memory/2026-11-21.md": file.pk},
        "messages": messages,
        "archived_session": archived,
    }


def _entry(VaultEntry, project, dev, minute: int, **fields):
    content = fields["content"]
    return VaultEntry.objects.create(
        project=project,
        agent=dev,
        created_by="token:dev",
        created_at=_at(minute),
        updated_at=_at(minute),
        content_hash=content_hash(content),
        sketch=sketch(word_set(content)),
        **fields,
    )


def _halfway_entries(apps, project, dev) -> dict:
    VaultEntry = apps.get_model("vault", "VaultEntry")
    ReviewItem = apps.get_model("vault", "ReviewItem")
    old = _entry(
        VaultEntry,
        project,
        dev,
        100,
        category="decisions",
        content="We stream dashboard updates with SSE",
        tags=["frontend"],
        status="superseded",
    )
    new = _entry(
        VaultEntry,
        project,
        dev,
        101,
        category="decisions",
        tags=["frontend"],
        supersedes=old,
        content="We stream dashboard updates with WebTransport instead of SSE",
        confidence=0.9,
    )
    held = _entry(
        VaultEntry,
        project,
        dev,
        102,
        category="decisions",
        status="pending",
        tags=[],
        content="We stream dashboard updates with long polling",
    )
    ReviewItem.objects.create(entry=held, other_entry=new, kind="conflict", detail=f"Contradicts #{new.pk}")
    ReviewItem.objects.create(
        entry=new,
        kind="policy",
        detail="Held by policy",
        resolution="approved",
        resolved_by="curator",
        resolved_at=_at(103),
    )
    apps.get_model("vault", "ReviewPolicy").objects.create(
        project=project, category="decisions", hold_agent_writes=True
    )
    return {"superseded": old.pk, "superseding": new.pk, "pending": held.pk}


def _halfway_conversation(apps, project, dev) -> dict:
    Session = apps.get_model("sessions_app", "Session")
    Message = apps.get_model("sessions_app", "Message")
    session = Session.objects.create(project=project, agent=dev, external_id="chat-halfway")
    first = Message.objects.create(
        project=project,
        agent=dev,
        session=session,
        client_id="h1",
        role="user",
        created_at=_at(110),
        text="Deploy the ocelot cache next to redis.cluster.local:6379",
    )
    second = Message.objects.create(
        project=project,
        agent=dev,
        session=session,
        client_id="h2",
        role="assistant",
        parent=first,
        created_at=_at(111),
        text="Deployed the ocelot cache; its hitRatio is 0.93",
        reply_to_text=reply_context(first.text),
    )
    return {"h1": first.pk, "h2": second.pk}


ARCHIVED_TURNS = [
    ("user", "Which port does the axolotl tracer listen on?"),
    (
        "assistant",
        "The axolotl tracer listens on tracer.local:4317 (OTLP over gRPC), 포트는 추적기 설정에 있다",
    ),
]


def _halfway_archived_session(apps, project, dev) -> int:
    """A session archived as sessions_app's lifecycle did then: its messages in a compressed payload."""
    Session = apps.get_model("sessions_app", "Session")
    session = Session.objects.create(
        project=project, agent=dev, external_id="chat-archived", status="archived", status_changed_at=_at(130)
    )
    messages, parent = [], None
    for index, (role, text) in enumerate(ARCHIVED_TURNS):
        message_id = 900_000 + index
        messages.append(
            {
                "id": message_id, "parent_id": parent, "client_id": f"a{index}", "role": role, "text": text,
                "internal": False, "tool_calls": [], "tool_call_id": "", "state": {}, "archived": False,
                "created_at": _at(120 + index).isoformat(),
            }
        )  # fmt: skip
        parent = message_id
    raw = json.dumps(
        {"version": 1, "status": "closed", "messages": messages, "branches": {}, "state": {}},
        separators=(",", ":"),
    ).encode()
    payload = zlib.compress(raw, 9)
    apps.get_model("sessions_app", "SessionArchive").objects.create(
        project=project,
        agent=dev,
        session=session,
        payload=payload,
        message_count=len(messages),
        raw_bytes=len(raw),
        compressed_bytes=len(payload),
        text="\n".join(text for _, text in ARCHIVED_TURNS),
        archived_at=_at(130),
    )
    return session.pk
