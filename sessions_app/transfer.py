"""Conversations into sessions: the sessions writer of an import (conversations become sessions with their
messages, checkpoints become the agent's checkpoint), the whole-folder import with it, and the mining of
conversation files into handoffs, decisions and lessons."""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Least
from django.utils import timezone

from memoryproject.errors import DomainError, InvalidInput
from sessions_app import services as session_services
from sessions_app import session_files
from sessions_app.models import Checkpoint, Message, Session, SessionStatus
from vault.extraction import insights_extract
from vault.models import (
    Agent,
    Project,
)
from vault.text import text_clip, text_prefix_chars
from vault.transfer import layouts
from vault.transfer.common import (
    EntryItem,
    ImportReport,
    ParsedCheckpoint,
    ParsedConversation,
    ParsedMessage,
    ParsedSessionFile,
    _hash,
    _mtime,
    _read_json,
    date_parse,
)
from vault.transfer.conversations import _messages_parse, sessions_step
from vault.transfer.export import EXPORT_MANIFEST
from vault.transfer.layouts import _run, project_file_import
from vault.transfer.writer import Importer

# --- Sessions: conversations and checkpoints ------------------------------------------------------


def _session_agent(importer: Importer, slug: str) -> Agent | None:
    # `slug` is already mapped (--agent-map) and the agent already ensured by the parser.
    return importer.agent_known(slug)


def _message_storable(report: ImportReport, source: str, label, message: dict) -> bool:
    """Whether one message meets the rules of every stored message (the sessions services'); one that
    does not (over MEMORY_MAX_MESSAGE_BYTES, say) is reported, so that it is skipped alone: given to the
    service with the others, it failed the whole conversation or checkpoint. Nothing of it is kept: the
    API refuses such a message too (413), and there is no rule to cut one."""
    try:
        session_services.message_input_check(dict(message), 0)
    except DomainError as exc:
        detail = exc.detail.removeprefix("messages[0]: ").rstrip(".")
        report.problem(source, f"message {label}: {detail}; skipped")
        return False
    return True


def _messages_new(report: ImportReport, item: ParsedConversation, session: Session | None) -> list:
    """The conversation's messages not stored yet (by client id; a client id twice in the file is stored
    once, as an append stores it); empty user/system messages and messages the sessions services would
    refuse are reported and skipped."""
    messages, client_ids = [], set()
    for message in item.messages:
        if message.role in ("user", "system") and not message.text.strip():
            report.problem(item.source, f"message {message.client_id} has empty text; skipped")
            continue
        if not _message_storable(
            report,
            item.source,
            message.client_id,
            {"role": message.role, "text": message.text, "client_id": message.client_id},
        ):
            continue
        if message.client_id in client_ids:
            continue
        client_ids.add(message.client_id)
        messages.append(message)
    known = _client_ids_stored(session, client_ids) if session is not None else set()
    new = [m for m in messages if m.client_id not in known]
    report.counts["messages already imported (skipped)"] += len(messages) - len(new)
    return new


def _client_ids_stored(session: Session, client_ids) -> set[str]:
    return set(
        Message.objects.filter(session=session, client_id__in=list(client_ids)).values_list(
            "client_id", flat=True
        )
    )


# The messages of a conversation stored in one transaction: a live agent writing meanwhile waits for one
# part at most (a second at most, measured on a loaded machine), never for a conversation of thousands of
# messages. Smaller parts make the import slower (each part rewrites the day's note it logs to): 5,000
# messages took 21 s in parts of 100, 11 s in parts of 500, 7 s in one transaction.
CONVERSATION_PART_MESSAGES = 100


@dataclass
class _ConversationPlan:
    agent: Agent
    external_id: str
    new: list[ParsedMessage]  # the messages to store, in order
    created: bool  # no session has the chat id: the first part creates it
    # The import's own session (created by it, or holding none but this conversation's messages: an
    # import stopped midway): it takes the dates of the conversation's messages.
    own: bool


def _conversation_plan(
    importer: Importer, item: ParsedConversation, agent: Agent
) -> _ConversationPlan | None:
    """What storing the conversation does (read only): its chat id here, the messages it adds, whether it
    creates the session. None, counted or reported, when it stores nothing."""
    report = importer.report
    external_id = session_files.chat_id_apart(
        importer,
        agent,
        item.source_agent,
        text_prefix_chars(item.external_id, 200),
        {m.client_id: m.text for m in item.messages},
        item.source,
    )
    session = Session.objects.filter(agent=agent, external_id=external_id).first()
    new = _messages_new(report, item, session)
    if not new:
        report.counts["conversations already imported (skipped)"] += 1
        return None
    if session is not None and session.status == SessionStatus.ARCHIVED:
        report.problem(
            item.source,
            f"conversation not stored: session {session.pk} is archived here: restore it, then import again "
            f"to add {len(new)} message(s)",
        )
        return None
    own = session is None or not (
        Message.objects.filter(session=session)
        .exclude(client_id__in=[m.client_id for m in item.messages])
        .exists()
    )
    return _ConversationPlan(agent, external_id, new, session is None, own)


def _conversation_part_store(
    importer: Importer, item: ParsedConversation, plan: _ConversationPlan, part: list[ParsedMessage]
) -> int:
    """Store one part of a conversation (its messages not stored yet: a part run again after a clash
    adds nothing twice) through `messages_append`; returns how many messages it stored."""
    session = Session.objects.filter(agent=plan.agent, external_id=plan.external_id).first()
    if session is not None:
        stored = _client_ids_stored(session, {m.client_id for m in part})
        part = [m for m in part if m.client_id not in stored]
    if not part:
        return 0
    fallback = item.saved_at or timezone.now()
    result = session_services.messages_append(
        agent=plan.agent,
        messages=[
            {
                "role": m.role,
                "text": m.text,
                "client_id": m.client_id,
                "internal": m.internal,
                "created_at": m.created_at or fallback,
            }
            for m in part
        ],
        session=session,
        session_key=plan.external_id,
        model_id=text_prefix_chars(item.model_id, 200),
        changed_by="import",
    )
    if plan.own:
        # messages_append dated the session now: it takes its conversation's dates (the last part's
        # last message last).
        dates = [m.created_at or fallback for m in plan.new]
        Session.objects.filter(pk=result.session.pk).update(
            created_at=Least(F("created_at"), min(dates)),
            last_activity_at=max(m.created_at or fallback for m in part),
        )
    return len(result.stored)


def conversation_store(importer: Importer, item: ParsedConversation) -> None:
    """Store a parsed conversation as the session with its `external_id`, through the sessions service
    `messages_append` (so the write-ahead scan and the daily notes see imported messages too), in parts
    of CONVERSATION_PART_MESSAGES messages, each one transaction (`sessions_step`): a live agent waits
    for one part at most. An import stopped midway leaves the parts it stored; run again, it stores the
    rest (a dry run plans it without writing: the counts of a real run).

    Idempotent: messages whose client id is already in that session are skipped, and a conversation with
    nothing new does not touch (or reopen) its session. Dates are kept: each message keeps its own
    timestamp (or the conversation's `saved_at` when the source has none), and a session created by the
    import gets the dates of its first and last messages. Messages are stored in order as one chain on the
    session's active branch; a source tree whose parent links differ from that order is flattened and
    reported."""
    report = importer.report
    agent = _session_agent(importer, item.agent)
    if agent is None:
        report.counts["conversations skipped (no valid agent)"] += 1
        return
    plan = sessions_step(importer, item.source, lambda: _conversation_plan(importer, item, agent))
    if plan is None:
        return
    stored = 0
    for start in range(0, len(plan.new), CONVERSATION_PART_MESSAGES):
        part = plan.new[start : start + CONVERSATION_PART_MESSAGES]
        if report.dry_run:  # a part rolled back would leave the next one no session to go on
            stored += len(part)
            continue
        try:
            stored += sessions_step(
                importer,
                f"{item.source} (messages {start + 1} to {start + len(part)} to store)",
                lambda part=part: _conversation_part_store(importer, item, plan, part),
                what="that part of it",
            )
        except DomainError as exc:
            done = f"its first {start} new message(s) stored, the rest" if start else "conversation"
            report.problem(item.source, f"{done} not stored: {exc.detail}")
            break
    report.counts["messages stored"] += stored
    if not stored:
        return
    report.counts["sessions created" if plan.created else "sessions updated"] += 1
    previous = None
    flattened = 0
    for message in plan.new:
        if message.parent_client_id and previous is not None and message.parent_client_id != previous:
            flattened += 1
        previous = message.client_id
    if flattened:
        report.problem(
            item.source,
            f"{flattened} message(s) answer an earlier message than the one before them; stored in order "
            "on one branch",
        )


def checkpoint_store(importer: Importer, item: ParsedCheckpoint) -> None:
    """Store a parsed checkpoint as the agent's Checkpoint with the sessions service `checkpoint_save`,
    keeping its `saved_at`. An expired checkpoint is not stored (recovery would ignore it). The agent
    keeps one checkpoint: an imported one replaces it only when it is newer, so a re-import (same
    `saved_at`) changes nothing."""
    report = importer.report
    agent = _session_agent(importer, item.agent)
    if agent is None:
        report.counts["checkpoints skipped (no valid agent)"] += 1
        return
    if item.expired:
        report.counts["checkpoints not stored (expired)"] += 1
        return
    if not _checkpoint_newest_of_merged_agents(importer, agent, item):
        return
    existing = Checkpoint.objects.filter(agent=agent).first()
    if existing is not None and existing.saved_at >= item.saved_at:
        report.counts["checkpoints skipped (same or newer already stored)"] += 1
        return
    session = (
        Session.objects.filter(agent=agent, external_id=text_prefix_chars(item.chat_id, 200)).first()
        if item.chat_id
        else None
    )
    messages = [
        {"role": m.role, "text": m.text, "internal": m.internal}
        for index, m in enumerate(item.messages)
        if (m.role not in ("user", "system") or m.text.strip())
        and _message_storable(report, item.source, index, {"role": m.role, "text": m.text})
    ]
    try:
        with transaction.atomic():
            checkpoint = session_services.checkpoint_save(
                agent=agent,
                messages=messages,
                session=session,
                chat_id=text_prefix_chars(item.chat_id, 200),
                model_id=text_prefix_chars(item.model_id, 200),
            )
            Checkpoint.objects.filter(pk=checkpoint.pk).update(saved_at=item.saved_at)
    except DomainError as exc:
        report.problem(item.source, f"checkpoint not stored: {exc.detail}")
        return
    report.counts["checkpoints stored"] += 1


def _checkpoint_newest_of_merged_agents(importer: Importer, agent: Agent, item: ParsedCheckpoint) -> bool:
    """Whether `item` goes on to be stored as the agent's checkpoint. Two source agents mapped onto one
    (--agent-map a=dev,b=dev) each bring their checkpoint, and an agent has one: the newer went on, the
    older was dropped, and with it what that agent was doing and meant to do next. The older is kept
    as a handoff entry of the target agent (dated when it was saved, naming its agent and chat);
    the newer goes on as any imported checkpoint does. Idempotent: a re-import finds the entry."""
    source = item.source_agent or agent.slug
    claims = importer.checkpoint_claims
    previous = claims.get(agent.pk)
    if previous is None or (previous.source_agent or agent.slug) == source:
        if previous is None or item.saved_at > previous.saved_at:
            claims[agent.pk] = item
        return True
    older, newer = (previous, item) if previous.saved_at <= item.saved_at else (item, previous)
    claims[agent.pk] = newer
    _checkpoint_handoff_add(importer, agent, older, newer_of=newer.source_agent or agent.slug)
    return newer is item


def _checkpoint_handoff_add(
    importer: Importer, agent: Agent, item: ParsedCheckpoint, *, newer_of: str
) -> None:
    report = importer.report
    origin = item.source_agent or agent.slug
    saved = timezone.localtime(item.saved_at, UTC)
    chat = f"chat {item.chat_id}, " if item.chat_id else ""
    messages = [m for m in item.messages if not m.internal and m.text.strip()]
    content = (
        f"Checkpoint of agent {origin} ({chat}saved {saved:%Y-%m-%d %H:%M} UTC), imported into "
        f"{agent.slug} beside agent {newer_of}'s newer one.\n\n{_handoff_text(messages)}"
    ).strip()
    importer.entry_add(
        agent,
        EntryItem(
            "handoffs",
            content,
            item.saved_at,
            "checkpoint:" + _hash(origin, item.saved_at.isoformat(), content)[:40],
            tags=["imported", "checkpoint"],
        ),
        where=item.source,
    )
    report.counts["checkpoints kept as handoffs (another agent mapped onto theirs has a newer one)"] += 1
    report.say(f"{item.source}: agent {origin}'s checkpoint kept as a handoff of {agent.slug}")


def sessions_write(
    importer: Importer, item: ParsedConversation | ParsedCheckpoint | ParsedSessionFile
) -> None:
    """The sessions writer of an import: a parsed conversation becomes a session with its messages, a
    checkpoint the agent's Checkpoint, a session file of our export the session it was; each in
    transactions of its own (vault.transfer.conversations.sessions_step)."""
    if item.kind == "checkpoint":
        sessions_step(importer, item.source, lambda: checkpoint_store(importer, item), what="that checkpoint")
    elif item.kind == "session":
        agent = _session_agent(importer, item.agent)
        if agent is None:
            importer.report.counts["sessions skipped (no valid agent)"] += 1
        else:
            sessions_step(
                importer, item.source, lambda: session_files.session_file_store(importer, item, agent)
            )
    else:
        conversation_store(importer, item)


def _handoff_text(messages: list[ParsedMessage]) -> str:
    chars = settings.MEMORY_HANDOFF_MESSAGE_CHARS
    lines = [
        f"[{'User' if m.role == 'user' else 'Agent'}]: {text_clip(m.text, chars, flatten=False, mark='')}"
        for m in messages[-settings.MEMORY_HANDOFF_MESSAGES :]
    ]
    return "\n".join(lines)


def conversation_insights_import(importer: Importer, path: Path) -> None:
    """The conversation-mining import for one file: a handoff from the last messages, and the
    decisions and lessons its PT + EN patterns find in the conversation."""
    report = importer.report
    data = _read_json(path, report)
    if not isinstance(data, dict):
        if data is not None:
            report.problem(path, "is not a conversation object; skipped")
        return
    messages = _messages_parse(data.get("messages"), where=path, report=report)
    messages = [m for m in messages or [] if not m.internal and m.text.strip()]
    if not messages:
        report.counts["conversations without messages"] += 1
        return
    source_agent = data.get("agentId") if isinstance(data.get("agentId"), str) else path.stem
    agent = importer.agent(source_agent, where=path)
    saved_at = date_parse(data.get("savedAt")) or _mtime(path)
    handoff = _handoff_text(messages)
    handoff_id = "conv:" + _hash("handoffs", handoff)[:40]
    items = [EntryItem("handoffs", handoff, saved_at, handoff_id, tags=["auto-handoff", "imported"])]
    insights = insights_extract(
        [m.text for m in messages],
        max_per_kind=settings.MEMORY_INSIGHTS_MAX,
        max_chars=settings.MEMORY_INSIGHT_CHARS,
        min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
    )
    for category, texts in (("decisions", insights.decisions), ("lessons", insights.lessons)):
        for text in texts:
            legacy_id = "conv:" + _hash(category, text)[:40]
            items.append(EntryItem(category, text, saved_at, legacy_id, tags=["auto-extract", "imported"]))
    stored, skipped = Counter(), Counter()
    for item in items:
        (stored if importer.entry_add(agent, item, where=path) else skipped)[item.category] += 1
    report.counts["conversations mined"] += 1
    report.say(
        f"{path}: stored {_mined(stored)}" + (f"; skipped {_mined(skipped)} {_SKIPPED}" if skipped else "")
    )


_SKIPPED = "(already imported, forgotten here since, or refused: see the summary)"


def _mined(counts: Counter) -> str:
    return ", ".join(f"{counts[category]} {category}" for category in ("decisions", "lessons", "handoffs"))


def import_conversations(
    *,
    path: Path,
    project: Project,
    agent_map: dict[str, str] | None = None,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Mine conversation files (a `.memory/` folder, its `conversations/` folder, or one JSON file)
    into handoffs, decisions and lessons; a `_project.md` beside them becomes the project context."""
    path = Path(path)
    if path.is_file():
        files, project_md, source = [path], None, path.parent
    elif (path / "conversations").is_dir():
        files, project_md = _conversation_files(path / "conversations"), path / "_project.md"
        source = path
    elif path.is_dir():
        files, project_md = _conversation_files(path), path.parent / "_project.md"
        source = path.parent
    else:
        raise InvalidInput(f"{path} is neither a conversation file nor a folder")

    if not files:  # a failure: a script must not go on as if it worked
        if path.is_dir() and (path / EXPORT_MANIFEST).is_file():
            raise InvalidInput(
                f"{path} is an export of this server, not a folder of conversations: import it with "
                "`python manage.py import_memory_dir`; nothing imported"
            )
        raise InvalidInput(f"{path}: no conversation .json files found; nothing imported")

    def body(importer: Importer) -> None:
        if project_md is not None and project_md.is_file():
            project_file_import(importer, project_md)
        for file in files:
            conversation_insights_import(importer, file)

    return _run(project, dry_run, progress, body, source=source, agent_map=agent_map)


def _conversation_files(folder: Path) -> list[Path]:
    """A folder's conversation files: its `*.json`, not hidden ones (pathlib's glob matches a dot file
    too, so an export's `.export.json` and `.project-versions.json` were read as two conversations
    "without messages" and the import exited 0 having stored nothing)."""
    return sorted(file for file in folder.glob("*.json") if not file.name.startswith("."))


def import_memory_dir(**options) -> ImportReport:
    """Import every layout found at a folder (vault.transfer.layouts.import_memory_dir), its conversations
    and checkpoints stored as sessions."""
    return layouts.import_memory_dir(**options, sessions_writer=sessions_write)
