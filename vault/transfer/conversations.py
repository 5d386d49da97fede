"""Parsers of conversation and checkpoint files (`.memory/conversations/*.json` and
`.vault/checkpoints/*.json`); what they find goes to the importer's sessions writer."""

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from memoryproject.errors import Conflict
from vault.transfer.common import (
    ROLE_MAP,
    ImportReport,
    ParsedCheckpoint,
    ParsedConversation,
    ParsedMessage,
    _concurrent_clash,
    _hash,
    _import_lock,
    _mtime,
    _read_json,
    date_parse,
    dates_where,
)
from vault.transfer.writer import Importer

T = TypeVar("T")


def sessions_store(importer: Importer, item: ParsedConversation | ParsedCheckpoint) -> None:
    """Queue a parsed conversation or checkpoint for the importer's sessions writer (sessions_app's),
    which stores it once the vault part is written (sessions_pending_store), or count it as skipped when
    the import has none."""
    if importer.sessions_writer is None:
        importer.report.counts[f"{item.kind}s skipped (no sessions writer)"] += 1
        return
    importer.sessions_pending.append(item)


def sessions_pending_store(importer: Importer, *, attempts: int) -> None:
    """Store the sessions and checkpoints an import found, once its vault part is written: the sessions
    writer stores each in transactions of its own (`sessions_step`), so an agent writing while a large
    folder is imported waits for one such transaction at most, not for the import. In a dry run this runs
    inside the dry run's transaction and each of them is rolled back at once (see `sessions_step`)."""
    importer.attempts = attempts
    for item in importer.sessions_pending:
        dates_where(item.source)
        importer.sessions_writer(importer, item)
    importer.sessions_pending = []


class _StepRollback(Exception):
    def __init__(self, result):
        super().__init__()
        self.result = result


def sessions_step(importer: Importer, where, work: Callable[[], T], *, what: str = "that session") -> T:
    """Run `work` (a session, a checkpoint, a part of a long conversation) as one transaction of an
    import's sessions part, under the import lock, holding the locks of the live write path it takes
    (the agent's session lock, a day's note, MEMORY.md) only until it ends: committed in a real run; in a
    dry run a savepoint of the dry run's transaction, rolled back as soon as `work` is done, which
    releases those locks too (its counts are kept). A clash with a writer that takes no lock rolls it back
    and runs it again, up to `importer.attempts` times; then the import fails with a Conflict: what it
    stored before stays, and running it again stores the rest (it is idempotent). Returns what `work`
    returns."""
    report = importer.report
    attempts = importer.attempts
    for attempt in range(1, attempts + 1):
        restore = importer.state_save()
        try:
            with transaction.atomic():
                _import_lock(importer.project, report)
                result = work()
                importer.flush()
                if report.dry_run:
                    raise _StepRollback(result)
            return result
        except _StepRollback as done:
            return done.result
        except (IntegrityError, OperationalError) as exc:
            clash = _concurrent_clash(exc)
            if clash is None:
                raise
            restore()
            if attempt == attempts:
                raise Conflict(
                    f"Another writer changed the same memory while this import stored {where} ({clash}); "
                    f"{what} was rolled back (tried {attempt} time(s)). What the import stored before it "
                    "stays: run it again when the other writer is done, and it stores the rest."
                ) from exc
            report.say(
                f"  ! a concurrent write clashed with this import ({clash}) at {where}; rolled back, "
                "storing it again"
            )
    raise AssertionError("unreachable")


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
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # No column can store it; kept, it also took down the handoff mined from the whole conversation.
        report.problem(where, f"message {index} contains invalid Unicode (lone surrogates); skipped")
        return None
    client_id = raw.get("id")
    if not isinstance(client_id, str) or not client_id:
        # No id in these files: the same role + text gets the same id on every import, so a re-import
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
    """`conversations/{agent}.json`: {"agentId", "savedAt", "messages": [{"role", "text"}]}."""
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
        source_agent=source_agent,
    )
    sessions_store(importer, conversation)
    return conversation


def checkpoint_file_import(importer: Importer, path: Path) -> ParsedCheckpoint | None:
    """`.vault/checkpoints/{agent}.json`: {"agentId", "savedAt" (ms), "messages", "chatId",
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
    source_agent = data.get("agentId") if isinstance(data.get("agentId"), str) else path.stem
    agent = importer.agent(source_agent, where=path)
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
        source_agent=source_agent,
    )
    if checkpoint.expired:
        report.counts["checkpoints expired (older than MEMORY_CHECKPOINT_DAYS)"] += 1
    sessions_store(importer, checkpoint)
    return checkpoint
