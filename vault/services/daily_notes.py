"""Daily notes: each finished exchange logged in the day's note (memory/YYYY-MM-DD.md, continued in
parts past MEMORY_DAILY_NOTE_MAX_BYTES by files.py's _daily_parts_append), queued when the note was
written a moment ago, and the queue written out."""

import re
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memoryproject.copy_rows import row_insert
from memoryproject.resilience import guarded
from vault.models import Agent, QueuedNoteAppend, WorkspaceFile, WorkspaceFileVersion
from vault.selectors import DAILY_NOTE_ANY_PART, daily_note_path
from vault.services.files import (
    DAILY_NOTE_LOGGER,
    _daily_header,
    _daily_note_day,
    file_append,
    file_append_many,
)
from vault.text import text_check

_DAILY_TIME_HEADING_RE = re.compile(r"^\s*## \[\d{1,2}:\d{2}(?::\d{2})?\]\n")


def daily_note_append(*, agent: Agent, when: datetime, text: str, changed_by: str = "") -> WorkspaceFile:
    """Append to the agent's daily note for `when`'s date (memory/YYYY-MM-DD.md).

    Daily notes are disabled files: searched, not injected into the system prompt. A block that opens
    with a `## [HH:MM:SS]` time heading (a logged exchange) is logged once a day: when the note already
    holds the same exchange under another time, it is not appended again (a replayed conversation
    leaves one copy).
    """
    day = timezone.localtime(when).date()
    heading = _DAILY_TIME_HEADING_RE.match(text)
    body = text[heading.end() :].strip() if heading else ""
    return file_append(
        agent=agent,
        path=daily_note_path(day),
        text=text,
        changed_by=changed_by,
        header=_daily_header(day),
        unless_present=f"]\n{body}\n" if body else "",
    )


def daily_notes_append(
    *,
    agent: Agent,
    blocks: list[tuple[datetime, str]],
    changed_by: str = "",
    words_known: bool = False,
    redacted: bool = False,
) -> None:
    """daily_note_append for several (when, text) blocks: one locked rewrite per day's note, or, for a
    note written less than MEMORY_DAILY_NOTE_WRITE_SECONDS ago, one INSERT into its queue
    (QueuedNoteAppend), which the note's next write empties. Only blocks whose words are known and
    that are already redacted (the exchange log's) are queued; `words_known` and `redacted` as in
    file_append_many."""
    by_day: dict = {}
    for when, text in blocks:
        heading = _DAILY_TIME_HEADING_RE.match(text)
        body = text[heading.end() :].strip() if heading else ""
        day = timezone.localtime(when).date()
        by_day.setdefault(day, []).append((text, f"]\n{body}\n" if body else ""))
    delay = settings.MEMORY_DAILY_NOTE_WRITE_SECONDS
    for day, parts in by_day.items():
        path = daily_note_path(day)
        if delay and words_known and redacted and _written_since(agent, day, delay):
            for text, _ in parts:
                text_check(text, allow_empty=True)
            row_insert(QueuedNoteAppend(agent=agent, path=path, parts=[list(part) for part in parts]))
            continue
        file_append_many(
            agent=agent,
            path=path,
            parts=parts,
            changed_by=changed_by,
            header=_daily_header(day),
            words_known=words_known,
            redacted=redacted,
        )


def _written_since(agent: Agent, day, seconds: int) -> bool:
    """Whether a live part of the agent's note of `day` was written in the last `seconds` (the rows are
    not read)."""
    since = timezone.now() - timedelta(seconds=seconds)
    # Asked on every message batch that logs an exchange: one statement by hand, as the ORM's compiling
    # of the same query took 0.47 ms of Python.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {WorkspaceFile._meta.db_table} WHERE agent_id = %s AND path ~ %s "
            "AND deleted_at IS NULL AND updated_at > %s LIMIT 1",
            [agent.pk, rf"^memory/{day:%Y-%m-%d}(-[1-9][0-9]*)?\.md$", since],
        )
        return cursor.fetchone() is not None


class QueuedNotesNotWritten(Exception):
    """daily_notes_flush(strict=True) failed to write some notes' queued exchanges (it wrote the others)."""


def daily_notes_flush(
    *, agent: Agent | None = None, older_than_seconds: int | None = None, strict: bool = False
) -> int:
    """Write the queued exchanges of the agent's daily notes (every agent's without `agent`) into their
    notes; with `older_than_seconds`, only notes whose oldest queued block is at least that old.
    Returns how many notes were written. Called before a note is read through the API, the MCP server,
    the pages, an export, consolidation or extraction, and every minute by a job. A note that fails to
    be written is logged and left with its queue (the read goes on with the note as stored); with
    `strict` (the job) QueuedNotesNotWritten is raised once the others are written, naming the notes, so
    that a queue that can never be written is a failed task an operator sees, not a log line a minute."""
    queued = QueuedNoteAppend.objects.all()
    if agent is not None:
        queued = queued.filter(agent=agent)
    if older_than_seconds is not None:
        queued = queued.filter(created_at__lte=timezone.now() - timedelta(seconds=older_than_seconds))
    notes = sorted(set(queued.values_list("agent_id", "path")))
    agents = {agent.pk: agent} if agent is not None else {}
    written, failed = 0, []
    for agent_id, path in notes:
        owner = agents.get(agent_id) or Agent.objects.filter(pk=agent_id).first()
        if owner is None:
            continue
        agents[agent_id] = owner
        day = _daily_note_day(path)
        done = guarded(
            f"writing the queued exchanges of {path}",
            lambda owner=owner, path=path, day=day: file_append_many(
                agent=owner,
                path=path,
                parts=[],
                changed_by=DAILY_NOTE_LOGGER,
                header=_daily_header(day) if day else "",
                words_known=True,
                redacted=True,
            ),
            failed=lambda exc, agent_id=agent_id, path=path: failed.append(
                f"agent {agent_id} {path} ({exc})"
            ),
        )
        written += done is not None
    if strict and failed:
        raise QueuedNotesNotWritten(
            f"the queued exchanges of {len(failed)} daily note(s) could not be written: {'; '.join(failed[:10])}"
        )
    return written


# What an erased text is replaced with in the exchanges that logged it.
FORGOTTEN = "[forgotten]"


def _logged_text_pattern(texts: list[str]) -> re.Pattern:
    """The texts where an exchange logged them: a whole user side (after "**User:** " or between the
    " / " that join several user messages) or a whole reply, never the same words inside another text
    (forgetting a message "ok" must not touch "is it ok")."""
    choices = "|".join(re.escape(text) for text in sorted(set(texts), key=len, reverse=True))
    return re.compile(rf"(?:(?<=\*\*User:\*\* )|(?<= / )|(?<=\*\*Agent:\*\* ))(?:{choices})(?= / |\n)")


def daily_notes_text_erase(
    *, agent: Agent, texts: list[str], first_day: date | None = None, last_day: date | None = None
) -> int:
    """Replace `texts` (the forms a forgotten message was logged in: whole, clipped, redacted) with
    FORGOTTEN wherever the agent's daily notes logged them: every part of every day's note (deleted ones
    too), their version history, and the exchanges queued for their next write. The day's writers take
    turns on the row lock of its first part; the erase takes the same locks (in path order) before it
    reads, so an exchange appended meanwhile is neither lost nor written back unerased. The search
    vector follows the new content (the trigger parses it again). Returns how many notes, versions and
    queued appends changed. `first_day` / `last_day` (inclusive) bound the days whose notes are read:
    a message is logged only on the day of a reply in its session, and the nightly purge erases
    thousands of old messages, each of which would otherwise read every note the agent has."""
    texts = [text for text in texts if text.strip()]
    if not texts:
        return 0
    pattern = _logged_text_pattern(texts)
    holding = Q()
    for text in texts:
        holding |= Q(content__contains=text)
    notes = WorkspaceFile.objects.filter(agent=agent, path__regex=DAILY_NOTE_ANY_PART)
    if first_day is not None:
        notes = notes.filter(path__gte=f"memory/{first_day:%Y-%m-%d}")
    if last_day is not None:  # every part of the last day sorts before the next day's path
        notes = notes.filter(path__lt=f"memory/{last_day + timedelta(days=1):%Y-%m-%d}")
    with transaction.atomic():
        days = {_note_first_part(path) for path in notes.filter(holding).values_list("path", flat=True)}
        days |= set(QueuedNoteAppend.objects.filter(agent=agent).values_list("path", flat=True))
        list(WorkspaceFile.objects.select_for_update().filter(agent=agent, path__in=days).order_by("path"))
        changed = 0
        for note in notes.select_for_update().filter(holding).order_by("path", "pk"):
            content = pattern.sub(FORGOTTEN, note.content)
            if content != note.content:
                WorkspaceFile.objects.filter(pk=note.pk).update(
                    content=content, size=len(content.encode("utf-8")), updated_at=timezone.now()
                )
                changed += 1
        versions = WorkspaceFileVersion.objects.filter(file__in=notes)
        for version in versions.filter(holding):
            content = pattern.sub(FORGOTTEN, version.content)
            if content != version.content:
                WorkspaceFileVersion.objects.filter(pk=version.pk).update(content=content)
                changed += 1
        for queued in QueuedNoteAppend.objects.filter(agent=agent):
            parts = [
                [pattern.sub(FORGOTTEN, text), pattern.sub(FORGOTTEN, unless)]
                for text, unless in queued.parts
            ]
            if parts != queued.parts:
                QueuedNoteAppend.objects.filter(pk=queued.pk).update(parts=parts)
                changed += 1
    return changed


def _note_first_part(path: str) -> str:
    """The path of the first part of the day's note `path` is a part of (where the day's writers lock)."""
    return re.sub(r"-[1-9][0-9]*\.md$", ".md", path)
