"""Import memory from the layouts of the seeds into the vault, workspace files and sessions.

- seed 000 `.memory/`: `_project.md`; `{agent}/{category}.md` with `<!-- id:... -->` markers and
  `## date · #tags` headers; legacy flat `{agent}.md` files split on `## Title` sections; the
  `conversations/*.json` history and `.vault/checkpoints/*.json`; our own export (`{agent}/workspace/`).
- seed 002 workspace: `MEMORY.md`, `SESSION-STATE.md` and the other upper-case files, `memory/*.md` daily
  notes, `memories/` (the memory tool's files).
- seed 004 `.bmad/memory/`: `sessions/*/manifest.json` with `conversation`, `decisions`, `findings` and
  `preferences` JSONL files; `shared/*.json`.

Imports are idempotent: every entry gets a `legacy_id` (the source's id, or a hash of its content when it
has none) and an entry whose id, or whose category + content + date, is already stored is skipped; a file
whose content is already there (or was, before a later edit) is left alone. Source files are only read.
Each source kind has its own function; problems (corrupt JSON, malformed entries) are reported and the
rest goes on.
"""

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryproject.errors import DomainError
from vault import services, trust
from vault.exporters import WORKSPACE_DIR, WORKSPACE_MANIFEST
from vault.extraction import SECTION_MAP, _title_normalise, insights_extract, section_classify
from vault.models import (
    Agent,
    Category,
    EntrySource,
    EntryStatus,
    Project,
    VaultEntry,
    WorkspaceFile,
    WorkspaceFileVersion,
)
from vault.redaction import redact_for_project
from vault.text import TAG_RE, tags_normalise, text_check
from vault.workspace_templates import DEFAULT_WORKSPACE_FILES

BATCH_SIZE = 1000
PROGRESS_EVERY = 1000
LEGACY_ID_MAX = 64
MARKER_RE = re.compile(r"^<!--\s*id:(?P<id>\S+?)(?P<attrs>(?:\s+[a-z_]+:\S+?)*)\s*-->[ \t]*$", re.MULTILINE)
ATTR_RE = re.compile(r"([a-z_]+):(\S+)")
SECTION_RE = re.compile(r"^##[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
HEADER_TAG_RE = re.compile(r"#([\w][\w.-]*)")
DAILY_NOTE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
SEED000_SKIP_DIRS = {"conversations", "memory", "memories", "sessions", "shared", WORKSPACE_DIR}
# Workspace files of seed 001/002 with their (enabled, sort order); other upper-case files are free files.
WORKSPACE_KNOWN = {path: (True, order) for path, _, order in DEFAULT_WORKSPACE_FILES} | {
    "SESSION-STATE.md": (True, 4)
}
IMPORTANCE_BY_LEVEL = {"critical": 0.9, "high": 0.8, "medium": 0.6, "moderate": 0.6, "low": 0.4, "info": 0.3}
ROLE_MAP = {
    "user": "user",
    "human": "user",
    "agent": "assistant",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "system": "system",
    "tool": "tool",
}


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", errors="surrogatepass")).hexdigest()


def legacy_id_fit(value: str) -> str:
    """Source ids are kept as they are when they fit the column, else replaced by a stable hash."""
    value = value.strip()
    return value if len(value) <= LEGACY_ID_MAX else "h:" + _hash(value)[:40]


def date_parse(value) -> datetime | None:
    """ISO 8601 (with or without seconds, zone, 'Z'), a date alone, or epoch milliseconds/seconds.
    Dates without a zone are UTC, as the seed wrote them (`toISOString`)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.isdigit() and len(text) in (10, 13):
        return date_parse(int(text))
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def _read_text(path: Path, report: "ImportReport") -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        report.problem(path, "not UTF-8 text; skipped")
    except OSError as exc:
        report.problem(path, f"cannot be read ({exc.strerror}); skipped")
    return None


def _read_json(path: Path, report: "ImportReport"):
    text = _read_text(path, report)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        report.problem(path, f"corrupt JSON ({exc.msg} at line {exc.lineno}); skipped")
        return None


# --- What an import found and did ----------------------------------------------------------------


@dataclass
class ParsedMessage:
    client_id: str
    role: str  # user | assistant | tool | system
    text: str
    internal: bool = False
    created_at: datetime | None = None
    parent_client_id: str | None = None


@dataclass
class ParsedConversation:
    """A conversation read from a seed's files, validated, waiting to become a session with messages."""

    source: str
    agent: str  # target agent slug (after --agent-map)
    external_id: str  # the session / chat id in the source system
    messages: list[ParsedMessage]
    saved_at: datetime | None = None
    model_id: str = ""
    metadata: dict = field(default_factory=dict)
    kind: str = "conversation"


@dataclass
class ParsedCheckpoint:
    """A seed 000 checkpoint (last messages, chat id, model id), waiting to become a sessions Checkpoint."""

    source: str
    agent: str
    saved_at: datetime
    messages: list[ParsedMessage]
    chat_id: str = ""
    model_id: str = ""
    expired: bool = False
    kind: str = "checkpoint"


@dataclass
class EntryItem:
    category: str
    content: str
    created_at: datetime
    legacy_id: str
    tags: list[str] = field(default_factory=list)
    importance: float | None = None
    status: str = EntryStatus.ACTIVE


@dataclass
class ImportReport:
    dry_run: bool = False
    counts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    progress: Callable[[str], None] | None = None

    def say(self, message: str) -> None:
        if self.progress:
            self.progress(message)

    def problem(self, where, message: str) -> None:
        self.problems.append(f"{where}: {message}")
        self.counts["problems"] += 1
        self.say(f"  ! {where}: {message}")

    def summary(self) -> str:
        head = "Dry run: nothing was written. Would have:" if self.dry_run else "Import summary:"
        lines = [head]
        for key in sorted(self.counts):
            lines.append(f"  {key}: {self.counts[key]}")
        if self.problems:
            lines.append(f"Problems ({len(self.problems)}):")
            lines.extend(f"  - {problem}" for problem in self.problems)
        return "\n".join(lines)


class _DryRunRollback(Exception):
    pass


# --- The writer: agents, entries, files, project context ----------------------------------------


class Importer:
    """Writes what the source-kind functions found, idempotently, through the vault's services."""

    def __init__(
        self,
        *,
        project: Project,
        report: ImportReport,
        agent_map: dict[str, str] | None = None,
        default_agent: str = "main",
    ):
        self.project = project
        self.report = report
        self.agent_map = agent_map or {}
        self.default_agent = default_agent
        self._agents: dict[str, Agent | None] = {}
        self._seen: dict[int, tuple[set[str], set[tuple]]] = {}
        self._pending: dict[int, list[VaultEntry]] = {}
        self._created_total = 0

    def agent_slug(self, source_id: str | None) -> str:
        source_id = (source_id or self.default_agent).strip()
        return self.agent_map.get(source_id, source_id)

    def agent(self, source_id: str | None, *, where="") -> Agent | None:
        slug = self.agent_slug(source_id)
        if slug not in self._agents:
            try:
                agent = services.agent_ensure(
                    project=self.project, slug=services.slug_check(slug, field="agent")
                )
            except DomainError as exc:
                self.report.problem(
                    where or slug, f"{exc.detail} Map it with --agent-map {slug}=new-id; skipped"
                )
                agent = None
            self._agents[slug] = agent
        return self._agents[slug]

    # Entries -------------------------------------------------------------------------------------

    def _seen_for(self, agent: Agent) -> tuple[set[str], set[tuple]]:
        if agent.pk not in self._seen:
            ids, keys = set(), set()
            for legacy_id, category, content, created_at in VaultEntry.objects.filter(
                agent=agent
            ).values_list("legacy_id", "category", "content", "created_at"):
                if legacy_id:
                    ids.add(legacy_id)
                keys.add(self._key(category, content, created_at))
            self._seen[agent.pk] = (ids, keys)
        return self._seen[agent.pk]

    @staticmethod
    def _key(category: str, content: str, created_at: datetime) -> tuple:
        return (category, _hash(content.strip()), created_at.replace(microsecond=0).timestamp())

    def _tags(self, tags: Iterable[str], content: str, where) -> list[str]:
        clean = []
        for raw in tags:
            tag = str(raw).strip().lstrip("#").lower()
            if tag and TAG_RE.match(tag) and tag not in clean:
                clean.append(tag)
            elif tag:
                self.report.problem(where, f"tag {raw!r} is not a valid tag; dropped")
        limit = settings.MEMORY_MAX_TAGS
        try:
            return tags_normalise(clean[:limit], content)[:limit]
        except DomainError:
            return clean[:limit]

    def entry_add(self, agent: Agent | None, item: EntryItem, *, where) -> None:
        """Queue one entry unless it is already stored (by legacy id, or category + content + date)."""
        if agent is None:
            self.report.counts["entries skipped (no valid agent)"] += 1
            return
        if item.category not in Category.values:
            self.report.problem(where, f"unknown category {item.category!r}; entry skipped")
            return
        # Redacted before anything else, so re-imports compare against what was stored.
        content = redact_for_project(item.content.strip(), agent.project_id)
        try:
            text_check(content)
        except DomainError as exc:
            self.report.problem(where, f"entry {item.legacy_id or '?'}: {exc.detail}; skipped")
            return
        ids, keys = self._seen_for(agent)
        legacy_id = legacy_id_fit(item.legacy_id)
        key = self._key(item.category, content, item.created_at)
        if legacy_id in ids or key in keys:
            self.report.counts["entries already imported (skipped)"] += 1
            return
        ids.add(legacy_id)
        keys.add(key)
        importance = item.importance
        if importance is None or not 0.0 <= importance <= 1.0:
            importance = 0.5
        self._pending.setdefault(agent.pk, []).append(
            VaultEntry(
                project_id=agent.project_id,
                agent=agent,
                category=item.category,
                content=content,
                content_hash=trust.content_hash(content),
                sketch=trust.sketch(trust.word_set(content)),
                tags=self._tags(item.tags, content, where),
                importance=float(importance),
                status=item.status if item.status in EntryStatus.values else EntryStatus.ACTIVE,
                source=EntrySource.IMPORT,
                created_by="import",
                created_at=item.created_at,
                updated_at=item.created_at,
                legacy_id=legacy_id,
            )
        )
        self.report.counts[f"entries created ({item.category})"] += 1
        if sum(len(batch) for batch in self._pending.values()) >= BATCH_SIZE:
            self.flush()

    def flush(self) -> None:
        """Store the queued entries. The unique (agent, legacy_id) constraint makes a concurrent import of
        the same source skip, not duplicate."""
        for batch in self._pending.values():
            if not batch:
                continue
            VaultEntry.objects.bulk_create(batch, batch_size=BATCH_SIZE, ignore_conflicts=True)
            before = self._created_total
            self._created_total += len(batch)
            if self._created_total // PROGRESS_EVERY > before // PROGRESS_EVERY:
                self.report.say(f"  ... {self._created_total} entries stored")
        self._pending = {}

    # Files and project context -------------------------------------------------------------------

    def file_put(
        self,
        agent: Agent | None,
        path: str,
        content: str,
        *,
        enabled: bool | None = None,
        sort_order: int | None = None,
        where,
    ) -> None:
        """Create or update a workspace file. A file that already holds this content is unchanged; one
        that held it before a later edit is left alone (the edit wins); otherwise the import overwrites
        it and the previous content is versioned."""
        if agent is None:
            self.report.counts["files skipped (no valid agent)"] += 1
            return
        existing = WorkspaceFile.objects.filter(agent=agent, path=path, deleted_at__isnull=True).first()
        if existing is not None and existing.content == content:
            self.report.counts["files unchanged"] += 1
        elif (
            existing is not None
            and WorkspaceFileVersion.objects.filter(file=existing, content=content).exists()
            and existing.content not in {text for _, text, _ in DEFAULT_WORKSPACE_FILES}
        ):
            self.report.counts["files skipped (edited since an earlier import)"] += 1
            return
        else:
            try:
                _, created = services.file_write(
                    agent=agent,
                    path=path,
                    content=content,
                    changed_by="import",
                    markdown_only=not path.startswith("memories/"),
                )
            except DomainError as exc:
                self.report.problem(where, f"{exc.detail} File skipped")
                return
            self.report.counts["files created" if created else "files updated"] += 1
        if enabled is not None or sort_order is not None:
            services.file_settings_set(agent=agent, path=path, enabled=enabled, sort_order=sort_order)

    def project_context(self, content: str, *, where) -> None:
        project = Project.objects.get(pk=self.project.pk)
        if project.context == content:
            self.report.counts["project context unchanged"] += 1
            return
        try:
            services.project_context_set(project=project, content=content, changed_by="import")
        except DomainError as exc:
            self.report.problem(where, exc.detail)
            return
        self.report.counts["project context replaced (previous text versioned)"] += 1


# --- Sessions: conversations and checkpoints ------------------------------------------------------


def _session_agent(importer: Importer, slug: str) -> Agent | None:
    # `slug` is already mapped (--agent-map) and the agent already ensured by the parser.
    agent = importer._agents.get(slug)
    return agent if agent is not None else Agent.objects.filter(project=importer.project, slug=slug).first()


def conversation_store(importer: Importer, item: ParsedConversation) -> None:
    """Store a parsed conversation as the session with its `external_id`, through the sessions service
    `messages_append` (so the write-ahead scan and the daily notes see imported messages too).

    Idempotent: messages whose client id is already in that session are skipped, and a conversation with
    nothing new does not touch (or reopen) its session. Dates are kept: each message keeps its own
    timestamp (or the conversation's `saved_at` when the source has none), and a session created by the
    import gets the dates of its first and last messages. Messages are stored in order as one chain on the
    session's active branch; a source tree whose parent links differ from that order is flattened and
    reported."""
    from sessions_app import services as session_services
    from sessions_app.models import Message, Session

    report = importer.report
    agent = _session_agent(importer, item.agent)
    if agent is None:
        report.counts["conversations skipped (no valid agent)"] += 1
        return
    messages = []
    for message in item.messages:
        if message.role in ("user", "system") and not message.text.strip():
            report.problem(item.source, f"message {message.client_id} has empty text; skipped")
            continue
        messages.append(message)
    session = Session.objects.filter(agent=agent, external_id=item.external_id[:200]).first()
    known = (
        set(
            Message.objects.filter(
                session=session, client_id__in=[m.client_id for m in messages]
            ).values_list("client_id", flat=True)
        )
        if session is not None
        else set()
    )
    new = [m for m in messages if m.client_id not in known]
    report.counts["messages already imported (skipped)"] += len(messages) - len(new)
    if not new:
        report.counts["conversations already imported (skipped)"] += 1
        return
    created = session is None
    fallback = item.saved_at or timezone.now()
    previous = None
    flattened = 0
    for message in new:
        if message.parent_client_id and previous is not None and message.parent_client_id != previous:
            flattened += 1
        previous = message.client_id
    chunk_size = settings.MEMORY_APPEND_MAX_MESSAGES
    try:
        with transaction.atomic():
            for start in range(0, len(new), chunk_size):
                result = session_services.messages_append(
                    agent=agent,
                    messages=[
                        {
                            "role": m.role,
                            "text": m.text,
                            "client_id": m.client_id,
                            "internal": m.internal,
                            "created_at": m.created_at or fallback,
                        }
                        for m in new[start : start + chunk_size]
                    ],
                    session=session,
                    session_key=item.external_id[:200],
                    model_id=item.model_id[:200],
                    changed_by="import",
                )
                session = result.session
                report.counts["messages stored"] += len(result.stored)
            if created:
                dates = [m.created_at or fallback for m in new]
                Session.objects.filter(pk=session.pk).update(
                    created_at=min(dates), last_activity_at=max(dates)
                )
    except DomainError as exc:
        report.problem(item.source, f"conversation not stored: {exc.detail}")
        return
    report.counts["sessions created" if created else "sessions updated"] += 1
    if flattened:
        report.problem(
            item.source,
            f"{flattened} message(s) answer an earlier message than the one before them; stored in order "
            "on one branch",
        )


def checkpoint_store(importer: Importer, item: ParsedCheckpoint) -> None:
    """Store a parsed checkpoint as the agent's Checkpoint with the sessions service `checkpoint_save`,
    keeping its `saved_at`. An expired checkpoint is not stored (seed 000 would discard it). The agent
    keeps one checkpoint: an imported one replaces it only when it is newer, so a re-import (same
    `saved_at`) changes nothing."""
    from sessions_app import services as session_services
    from sessions_app.models import Checkpoint, Session

    report = importer.report
    agent = _session_agent(importer, item.agent)
    if agent is None:
        report.counts["checkpoints skipped (no valid agent)"] += 1
        return
    if item.expired:
        report.counts["checkpoints not stored (expired)"] += 1
        return
    existing = Checkpoint.objects.filter(agent=agent).first()
    if existing is not None and existing.saved_at >= item.saved_at:
        report.counts["checkpoints skipped (same or newer already stored)"] += 1
        return
    session = (
        Session.objects.filter(agent=agent, external_id=item.chat_id[:200]).first() if item.chat_id else None
    )
    try:
        with transaction.atomic():
            checkpoint = session_services.checkpoint_save(
                agent=agent,
                messages=[
                    {"role": m.role, "text": m.text, "internal": m.internal}
                    for m in item.messages
                    if m.role not in ("user", "system") or m.text.strip()
                ],
                session=session,
                chat_id=item.chat_id[:200],
                model_id=item.model_id[:200],
            )
            Checkpoint.objects.filter(pk=checkpoint.pk).update(saved_at=item.saved_at)
    except DomainError as exc:
        report.problem(item.source, f"checkpoint not stored: {exc.detail}")
        return
    report.counts["checkpoints stored"] += 1


def sessions_store(importer: Importer, item: ParsedConversation | ParsedCheckpoint) -> None:
    """Store a parsed conversation as a session with its messages, or a checkpoint as a Checkpoint."""
    if item.kind == "checkpoint":
        checkpoint_store(importer, item)
    else:
        conversation_store(importer, item)


def _message_parse(
    raw, index: int, *, where, report: ImportReport, occurrences: Counter
) -> ParsedMessage | None:
    if not isinstance(raw, dict):
        report.problem(where, f"message {index} is not an object; skipped")
        return None
    role = ROLE_MAP.get(str(raw.get("role", "")).lower())
    text = raw.get("text", raw.get("content"))
    if role is None:
        report.problem(where, f"message {index} has unknown role {raw.get('role')!r}; skipped")
        return None
    if not isinstance(text, str):
        report.problem(where, f"message {index} has no text; skipped")
        return None
    if "\x00" in text:
        report.problem(where, f"message {index} contains NUL characters; removed")
        text = text.replace("\x00", "")
    client_id = raw.get("id")
    if not isinstance(client_id, str) or not client_id:
        # No id in seed 000's files: the same role + text gets the same id on every import, so a re-import
        # (even of a conversation that compaction has trimmed meanwhile) does not store it twice.
        occurrences[(role, text)] += 1
        client_id = "imp-" + _hash(role, text, str(occurrences[(role, text)]))[:32]
    context = raw.get("context") if isinstance(raw.get("context"), dict) else {}
    return ParsedMessage(
        client_id=client_id[:128],
        role=role,
        text=text,
        internal=bool(raw.get("internal", False)),
        created_at=date_parse(raw.get("timestamp")),
        parent_client_id=context.get("parent_message_id") or None,
    )


def _messages_parse(raws, *, where, report: ImportReport) -> list[ParsedMessage] | None:
    if not isinstance(raws, list):
        report.problem(where, "has no 'messages' list; skipped")
        return None
    occurrences: Counter = Counter()
    parsed = [
        _message_parse(raw, i, where=where, report=report, occurrences=occurrences)
        for i, raw in enumerate(raws)
    ]
    return [message for message in parsed if message is not None]


def conversation_file_import(importer: Importer, path: Path) -> ParsedConversation | None:
    """Seed 000 `conversations/{agent}.json`: {"agentId", "savedAt", "messages": [{"role", "text"}]}."""
    report = importer.report
    data = _read_json(path, report)
    if data is None:
        return None
    if not isinstance(data, dict):
        report.problem(path, "is not a conversation object; skipped")
        return None
    messages = _messages_parse(data.get("messages"), where=path, report=report)
    if messages is None:
        return None
    source_agent = data.get("agentId") if isinstance(data.get("agentId"), str) else path.stem
    agent = importer.agent(source_agent, where=path)
    if agent is None:
        return None
    conversation = ParsedConversation(
        source=str(path),
        agent=agent.slug,
        external_id=str(data.get("chatId") or f"{source_agent}-conversation"),
        messages=messages,
        saved_at=date_parse(data.get("savedAt")) or _mtime(path),
        model_id=str(data.get("modelId") or ""),
    )
    sessions_store(importer, conversation)
    return conversation


def checkpoint_file_import(importer: Importer, path: Path) -> ParsedCheckpoint | None:
    """Seed 000 `.vault/checkpoints/{agent}.json`: {"agentId", "savedAt" (ms), "messages", "chatId",
    "modelId"}. Corrupt files are reported and skipped (the seed deletes them; we never touch sources)."""
    report = importer.report
    data = _read_json(path, report)
    if data is None:
        return None
    if not isinstance(data, dict):
        report.problem(path, "is not a checkpoint object; skipped")
        return None
    saved_at = date_parse(data.get("savedAt"))
    if saved_at is None:
        report.problem(path, "has no valid 'savedAt'; skipped")
        return None
    messages = _messages_parse(data.get("messages"), where=path, report=report)
    if messages is None:
        return None
    agent = importer.agent(
        data.get("agentId") if isinstance(data.get("agentId"), str) else path.stem, where=path
    )
    if agent is None:
        return None
    age_days = (timezone.now() - saved_at).total_seconds() / 86400
    checkpoint = ParsedCheckpoint(
        source=str(path),
        agent=agent.slug,
        saved_at=saved_at,
        messages=messages[-settings.MEMORY_CHECKPOINT_MESSAGES :],
        chat_id=str(data.get("chatId") or ""),
        model_id=str(data.get("modelId") or ""),
        expired=age_days > settings.MEMORY_CHECKPOINT_DAYS,
    )
    if checkpoint.expired:
        report.counts["checkpoints expired (older than MEMORY_CHECKPOINT_DAYS)"] += 1
    sessions_store(importer, checkpoint)
    return checkpoint


# --- Seed 000: the .memory/ vault ------------------------------------------------------------------


def project_file_import(importer: Importer, path: Path) -> None:
    """`_project.md` becomes the project context."""
    text = _read_text(path, importer.report)
    if text is not None:
        importer.project_context(text, where=path)


def _sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split markdown on `## Title` lines: (preamble, [(title, body)])."""
    matches = list(SECTION_RE.finditer(text))
    preamble = text[: matches[0].start()] if matches else text
    sections = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections.append((match.group("title").strip(), text[match.end() : end].strip()))
    return preamble, sections


def _preamble_text(preamble: str) -> str:
    """A file's text before its first entry, minus the `# Title` line an export or a person puts there."""
    return "\n".join(line for line in preamble.strip().splitlines() if not re.match(r"^#\s", line)).strip()


def _section_content(title: str, body: str) -> str:
    if _title_normalise(title) in {_title_normalise(name) for name in SECTION_MAP}:
        return body
    return f"**{title}**\n\n{body}" if body else f"**{title}**"


def _entry_block_parse(block: str, marker_id: str) -> tuple[datetime | None, list[str], str, bool]:
    """(date, tags, content, header_ok) of the text after a marker."""
    block = block.strip("\n").rstrip()
    if block.endswith("\n---") or block == "---":
        block = block[:-3]
    first, _, rest = block.partition("\n")
    header = re.match(r"^##[ \t]+(.*)$", first)
    if not header:
        return None, [], block.strip(), False
    date_part, _, tag_part = header.group(1).partition("·")
    content = rest
    return date_parse(date_part.strip()), HEADER_TAG_RE.findall(tag_part), content.strip(), True


def vault_category_file_import(importer: Importer, agent: Agent | None, category: str, path: Path) -> None:
    """`{agent}/{category}.md`: entries separated by `<!-- id:N -->` markers, each with a `## date · #tags`
    header, content and a `---` separator. Ids and dates are kept. A file without markers (written by hand)
    is split on `## Title` sections instead, so nothing in it is lost."""
    report = importer.report
    text = _read_text(path, report)
    if text is None:
        return
    markers = list(MARKER_RE.finditer(text))
    mtime = _mtime(path)
    if not markers:
        preamble, sections = _sections(text)
        loose = _preamble_text(preamble)
        if loose:
            sections.insert(0, ("", loose))
        for title, body in sections:
            content = _section_content(title, body) if title else body
            if content.strip():
                importer.entry_add(
                    agent,
                    EntryItem(category, content, mtime, "md:" + _hash(category, content)[:40]),
                    where=path,
                )
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
        created_at, tags, content, header_ok = _entry_block_parse(text[marker.end() : end], marker_id)
        where = f"{path} (id {marker_id})"
        if not header_ok:
            report.problem(where, "no '## date · #tags' header line; content kept, date from the id or file")
        if created_at is None:
            created_at = date_parse(marker_id) or mtime
            if header_ok:
                report.problem(where, "unreadable date; used the id's timestamp or the file's date")
        if not content:
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
    for category in Category.values:
        path = directory / f"{category}.md"
        if path.is_file():
            importer.report.say(f"{path}")
            vault_category_file_import(importer, agent, category, path)
    workspace = directory / WORKSPACE_DIR
    if workspace.is_dir():
        workspace_import(importer, workspace, agent=agent)
    importer.flush()


def _is_agent_dir(directory: Path) -> bool:
    if directory.name.startswith((".", "_")) or directory.name in SEED000_SKIP_DIRS:
        return False
    return (
        any((directory / f"{c}.md").is_file() for c in Category.values)
        or (directory / WORKSPACE_DIR).is_dir()
    )


def looks_like_seed000(root: Path) -> bool:
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


def seed000_import(importer: Importer, root: Path) -> None:
    report = importer.report
    report.say(f"seed 000 vault: {root}")
    if (root / "_project.md").is_file():
        project_file_import(importer, root / "_project.md")
    children = sorted(root.iterdir())
    for child in children:
        if child.is_dir() and _is_agent_dir(child):
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


# --- Seed 002: a workspace ------------------------------------------------------------------------


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
    file), and our export's `.workspace.json` (enabled flags and sort order)."""
    report = importer.report
    if agent is None:
        agent = importer.agent(None, where=root)
    report.say(f"workspace: {root} -> agent {agent.slug if agent else '?'}")
    manifest = {}
    if (root / WORKSPACE_MANIFEST).is_file():
        data = _read_json(root / WORKSPACE_MANIFEST, report)
        manifest = data if isinstance(data, dict) else {}
    files: list[tuple[str, Path]] = []
    for child in sorted(root.iterdir()):
        if (
            child.is_file()
            and child.suffix == ".md"
            and (child.name in WORKSPACE_KNOWN or child.stem.isupper() or manifest.get(child.name))
        ):
            files.append((child.name, child))
    for folder in ("memory", "memories"):
        base = root / folder
        if base.is_dir():
            for child in sorted(base.rglob("*")):
                if child.is_file() and not any(
                    part.startswith(".") for part in child.relative_to(root).parts
                ):
                    if folder == "memory" and child.suffix != ".md":
                        continue
                    files.append((child.relative_to(root).as_posix(), child))
    for relative, path in files:
        text = _read_text(path, report)
        if text is None:
            continue
        settings_for = manifest.get(relative) if isinstance(manifest.get(relative), dict) else {}
        enabled, sort_order = WORKSPACE_KNOWN.get(relative, (False, None))
        if "enabled" in settings_for:
            enabled = bool(settings_for["enabled"])
        if isinstance(settings_for.get("sort_order"), int):
            sort_order = settings_for["sort_order"]
        importer.file_put(agent, relative, text, enabled=enabled, sort_order=sort_order, where=path)


# --- Seed 004: .bmad/memory/ ---------------------------------------------------------------------


def looks_like_bmad(root: Path) -> bool:
    return (
        (root / "sessions").is_dir()
        and any((root / "sessions").glob("*/manifest.json"))
        or (root / "shared").is_dir()
    )


def _jsonl(path: Path, report: ImportReport) -> list[dict]:
    text = _read_text(path, report)
    if text is None:
        return []
    records = []
    for number, line in enumerate(text.splitlines(), 1):
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
    importer.report.say(f"seed 004 memory: {root}")
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


# --- Entry points ---------------------------------------------------------------------------------


def agent_map_parse(text: str | None) -> dict[str, str]:
    """`old=new,old2=new2` -> {"old": "new", ...}; malformed pairs are an InvalidInput."""
    from memoryproject.errors import InvalidInput

    mapping = {}
    for pair in filter(None, (part.strip() for part in (text or "").split(","))):
        old, sep, new = pair.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise InvalidInput(f"--agent-map: {pair!r} is not old=new")
        mapping[old.strip()] = services.slug_check(new.strip(), field="agent")
    return mapping


def _run(
    project: Project, dry_run: bool, progress, body: Callable[[Importer], None], **options
) -> ImportReport:
    report = ImportReport(dry_run=dry_run, progress=progress)
    importer = Importer(project=project, report=report, **options)
    try:
        with transaction.atomic():
            body(importer)
            importer.flush()
            if dry_run:
                raise _DryRunRollback
    except _DryRunRollback:
        pass
    return report


def import_memory_dir(
    *,
    path: Path,
    project: Project,
    agent_map: dict[str, str] | None = None,
    default_agent: str = "main",
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Import every layout found at `path`: the folder itself, or `.memory/`, `.bmad/memory/` and
    `workspace/` inside it. `default_agent` receives what names no agent (a bare workspace, shared files).
    With `dry_run` everything runs and is counted, then rolled back."""
    path = Path(path)
    if not path.is_dir():
        from memoryproject.errors import InvalidInput

        raise InvalidInput(f"{path} is not a folder")

    def body(importer: Importer) -> None:
        found = False
        # A project folder holding the layouts in their usual places; only when none is there is the folder
        # itself the layout (so a project's own notes.md is never mistaken for an agent's memory file).
        for candidates in (
            (
                (path / ".memory", looks_like_seed000, seed000_import),
                (path / ".bmad" / "memory", looks_like_bmad, bmad_import),
                (path / "workspace", looks_like_workspace, workspace_import),
            ),
            (
                (path, looks_like_bmad, bmad_import),
                (path, looks_like_workspace, workspace_import),
                (path, looks_like_seed000, seed000_import),
            ),
        ):
            for candidate, looks, run in candidates:
                if candidate.is_dir() and looks(candidate):
                    found = True
                    run(importer, candidate)
                    importer.flush()
            if found:
                break
        if not found:
            importer.report.problem(path, "no seed 000, 002 or 004 memory layout found; nothing imported")

    return _run(project, dry_run, progress, body, agent_map=agent_map, default_agent=default_agent)


def _handoff_text(messages: list[ParsedMessage]) -> str:
    chars = settings.MEMORY_HANDOFF_MESSAGE_CHARS
    lines = [
        f"[{'User' if m.role == 'user' else 'Agent'}]: {m.text.strip()[:chars]}"
        for m in messages[-settings.MEMORY_HANDOFF_MESSAGES :]
    ]
    return "\n".join(lines)


def conversation_insights_import(importer: Importer, path: Path) -> None:
    """Seed 000's import-conversations script for one file: a handoff from the last messages, and the
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
    importer.entry_add(
        agent,
        EntryItem(
            "handoffs",
            handoff,
            saved_at,
            "conv:" + _hash("handoffs", handoff)[:40],
            tags=["auto-handoff", "imported"],
        ),
        where=path,
    )
    insights = insights_extract(
        [m.text for m in messages],
        max_per_kind=settings.MEMORY_INSIGHTS_MAX,
        max_chars=settings.MEMORY_INSIGHT_CHARS,
        min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
    )
    for category, texts in (("decisions", insights.decisions), ("lessons", insights.lessons)):
        for text in texts:
            importer.entry_add(
                agent,
                EntryItem(
                    category,
                    text,
                    saved_at,
                    "conv:" + _hash(category, text)[:40],
                    tags=["auto-extract", "imported"],
                ),
                where=path,
            )
    report.counts["conversations mined"] += 1
    report.say(f"{path}: {len(insights.decisions)} decisions, {len(insights.lessons)} lessons, 1 handoff")


def import_conversations(
    *,
    path: Path,
    project: Project,
    agent_map: dict[str, str] | None = None,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Mine seed 000 conversation files (a `.memory/` folder, its `conversations/` folder, or one JSON file)
    into handoffs, decisions and lessons; a `_project.md` beside them becomes the project context."""
    path = Path(path)
    if path.is_file():
        files, project_md = [path], None
    elif (path / "conversations").is_dir():
        files, project_md = sorted((path / "conversations").glob("*.json")), path / "_project.md"
    elif path.is_dir():
        files, project_md = sorted(path.glob("*.json")), path.parent / "_project.md"
    else:
        from memoryproject.errors import InvalidInput

        raise InvalidInput(f"{path} is neither a conversation file nor a folder")

    def body(importer: Importer) -> None:
        if project_md is not None and project_md.is_file():
            project_file_import(importer, project_md)
        for file in files:
            conversation_insights_import(importer, file)
        if not files:
            importer.report.problem(path, "no conversation .json files found")

    return _run(project, dry_run, progress, body, agent_map=agent_map)
