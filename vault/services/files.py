"""Writes of workspace files: PROFILE.md, MEMORY.md, daily notes, the memory tool's files; each change
versioned."""

import re
from collections.abc import Callable
from contextlib import contextmanager
from datetime import date, datetime

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput
from memoryproject.prepared import prepared_cursor
from memoryproject.row_read import row_first
from vault import selectors
from vault.models import (
    WORKSPACE_PATH_MAX,
    Agent,
    QueuedNoteAppend,
    VersionAction,
    WorkspaceFile,
    WorkspaceFileVersion,
)
from vault.redaction import project_redaction_enabled, redact, redact_for_project
from vault.search_vectors import VECTOR_GIVEN_SETTING, WORDS_KNOWN_SETTING, text_vectors
from vault.selectors import daily_note_path
from vault.text import CONTROL_CHARACTERS_RULE, control_characters_in, echoed, text_bytes, text_check

# --- Workspace files -----------------------------------------------------------------------------

# A name of a day's note (memory/YYYY-MM-DD.md) or of one of its parts (memory/YYYY-MM-DD-2.md).
_DAY_NAMED_RE = re.compile(r"^memory/([0-9]{4}-[0-9]{2}-[0-9]{2})(?:-[0-9]+)?\.md$")
DAY_NAME_RULE = "memory/YYYY-MM-DD.md names a day: this date does not exist"


def _day_named_by_no_date(path: str) -> bool:
    match = _DAY_NAMED_RE.match(path)
    if match is None:
        return False
    try:
        date.fromisoformat(match.group(1))
    except ValueError:
        return True
    return False


def file_path_check(path: str, *, markdown_only: bool = True, dateless_notes: bool = False) -> str:
    """Apply the path rules; each violation names the rule broken. A daily note's name whose date does
    not exist (memory/2026-13-45.md: no day's note, which consolidation and the context never read) is
    refused, unless `dateless_notes` (an import keeps such a file as it was, and reports it)."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidInput("path must not be empty", [{"loc": ["path"], "msg": "empty"}])
    problems = []
    if "\x00" in path:
        problems.append("no NUL characters")
    if "\\" in path:
        problems.append("no backslashes")
    if control_characters_in(path):
        problems.append(CONTROL_CHARACTERS_RULE)
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        problems.append("relative paths only (no absolute paths)")
    if any(part == ".." for part in path.replace("\\", "/").split("/")):
        problems.append("no '..' segments")
    if any(part in ("", ".") for part in path.split("/")):
        problems.append("no empty or '.' segments")
    if len(path) > WORKSPACE_PATH_MAX:
        problems.append(f"at most {WORKSPACE_PATH_MAX} characters")
    if markdown_only and not path.endswith(".md"):
        problems.append("workspace files must end in .md")
    if not dateless_notes and _day_named_by_no_date(path):
        problems.append(DAY_NAME_RULE)
    if problems:
        raise InvalidInput(
            f"Invalid path {echoed(path)}: {'; '.join(problems)}.",
            [{"loc": ["path"], "msg": problem} for problem in problems],
        )
    return path


def file_write(
    *,
    agent: Agent,
    path: str,
    content: str,
    changed_by: str,
    enabled: bool | None = None,
    sort_order: int | None = None,
    markdown_only: bool = True,
    seen_updated_at: datetime | None = None,
    max_bytes: int | None = None,
    limit_setting: str = "MEMORY_MAX_ENTRY_BYTES",
    dateless_notes: bool = False,
) -> tuple[WorkspaceFile, bool]:
    """Create or overwrite a workspace file; the previous content is versioned. Returns (file, created).

    With `seen_updated_at`, the file's `updated_at` when the writer read it (the files page's form), a
    file changed or deleted since is refused (Conflict, loc "seen_updated_at"), checked under the row
    lock: an agent appends to its notes all day, and a form opened before an append and saved after it
    replaced the appended text with what the form had shown. `max_bytes` (named by `limit_setting`)
    replaces the size limit: an import of a file this server stored, grown by appends past it.
    `dateless_notes`: as file_path_check's."""
    file_path_check(path, markdown_only=markdown_only, dateless_notes=dateless_notes)
    content = redact_for_project(content, agent.project_id)
    text_check(content, allow_empty=True, max_bytes=max_bytes, limit_setting=limit_setting)
    with transaction.atomic():
        file, created = _file_lock_or_create(agent, path)
        if seen_updated_at is not None and (created or file.updated_at != seen_updated_at):
            what = "deleted" if created else f"changed (at {timezone.localtime(file.updated_at):%H:%M:%S})"
            raise Conflict(
                f"{path} was {what} since this form was opened; saving would overwrite that change. "
                "Its current text is shown; save again to replace it with yours.",
                [{"loc": ["seen_updated_at"], "msg": "changed since the form was opened"}],
            )
        if (
            not created
            and file.content == content
            and enabled in (None, file.enabled)
            and sort_order in (None, file.sort_order)
        ):
            return file, False  # nothing to version, and its date (search recency) stays the last change's
        if not created and file.content != content:
            WorkspaceFileVersion.objects.create(
                file=file, action=VersionAction.EDIT, content=file.content, changed_by=changed_by[:200]
            )
        file.content = content
        file.size = len(content.encode("utf-8"))
        if enabled is not None:
            file.enabled = enabled
        if sort_order is not None:
            file.sort_order = sort_order
        file.save()
    return file, created


def _file_live_locked(agent: Agent, path: str) -> WorkspaceFile | None:
    """The live file at path with its row locked (its own row only), or None. A path has one live file
    (the partial unique constraint), so the order does not matter: Meta.ordering, which `.first()`
    would use, would join the agent and the project. Call inside a transaction."""
    # By hand (row_first): a day's note is locked here on every write of it, and the ORM compiled
    # this query anew each time.
    return row_first(
        WorkspaceFile, "agent_id = %s AND path = %s AND deleted_at IS NULL", [agent.pk, path], lock=True
    )


def _file_lock_or_create(agent: Agent, path: str, content: str = "") -> tuple[WorkspaceFile, bool]:
    """Lock the live file at path, or insert it (with `content`); a concurrent insert of the same path is
    waited for and locked instead (the partial unique constraint decides who created it). Call inside a
    transaction."""
    file = _file_live_locked(agent, path)
    if file is not None:
        return file, False
    try:
        with transaction.atomic():
            file = WorkspaceFile.objects.create(
                project_id=agent.project_id,
                agent=agent,
                path=path,
                content=content,
                size=len(content.encode("utf-8")),
            )
            return file, True
    except IntegrityError:
        return _file_live_locked(agent, path), False


def file_append(
    *, agent: Agent, path: str, text: str, changed_by: str, header: str = "", unless_present: str = ""
) -> WorkspaceFile:
    """Append to a workspace file, creating it (with `header` first) when missing.

    The row is locked while appending so that concurrent appends (two exchanges finishing at once)
    are both kept. Appends are not versioned: the previous content is a prefix of the new one. With
    `unless_present`, nothing is appended when the file already contains that text (checked under the
    lock, so two identical concurrent appends store it once).
    """
    return file_append_many(
        agent=agent, path=path, parts=[(text, unless_present)], changed_by=changed_by, header=header
    )


def file_append_many(
    *,
    agent: Agent,
    path: str,
    parts: list[tuple[str, str]],
    changed_by: str,
    header: str = "",
    words_known: bool = False,
    redacted: bool = False,
) -> WorkspaceFile:
    """file_append for several (text, unless_present) parts in order, in one locked rewrite of the file:
    a batch of messages logs all its exchanges at the cost of one. `words_known`: the parts' words are
    already in the typo vocabulary (WORDS_KNOWN_SETTING), so the write does not parse them for it.
    `redacted`: the parts were built from texts already redacted as the project asks, so they are not
    redacted again."""
    file_path_check(path)
    if not redacted and project_redaction_enabled(agent.project_id):
        parts = [(redact(text), redact(unless) if unless else unless) for text, unless in parts]
    for text, _ in parts:
        text_check(text, allow_empty=True)
    with transaction.atomic():
        file, _ = _file_lock_or_create(agent, path, content=header)
        # Exchanges queued for this note since its last write go first (they are older than `parts`).
        queued = _queued_appends(agent, path)
        if queued:
            parts = [(text, unless) for _, queued_parts in queued for text, unless in queued_parts] + list(
                parts
            )
            _queued_delete([pk for pk, _ in queued])
        day = _daily_note_day(path)
        if day is not None:
            return _daily_parts_append(agent, day, file, parts, words_known=words_known)
        tail = _tail_build(file.content, parts)
        if tail:
            _file_tail_write(file, tail, words_known=words_known)
    return file


# The append of a tail (its first parameter) to a file's content, with its size from the stored value's
# header (octet_length does not read a day's note through, nor does Python encode the whole note again),
# and, after a word boundary, the stored vector followed by the tail's: what the file's trigger computes
# for such an append (vault migrations 0015 and 0018), weight B in English and Portuguese, and its
# identifiers' parts at weight D (`text_vectors`, its parameter the tail again). Written by hand
# and prepared (`prepared_cursor`): the ORM compiled this UPDATE anew for every write of a day's note,
# about 1 ms of the web process's CPU each time.
_TAIL_VECTOR_SQL = text_vectors("").sql
_TAIL_UPDATE = (
    f"UPDATE {WorkspaceFile._meta.db_table} SET content = COALESCE(content, '') || COALESCE(%s::text, ''),"
    " size = octet_length(content) + %s::integer, updated_at = %s::timestamptz{vector} WHERE id = %s::bigint"
)
_TAIL_UPDATE_TEXT = _TAIL_UPDATE.format(vector="")
_TAIL_UPDATE_VECTOR = _TAIL_UPDATE.format(vector=f", search_vector = (search_vector || {_TAIL_VECTOR_SQL})")


def _file_tail_write(file: WorkspaceFile, tail: str, *, words_known: bool) -> None:
    """Append `tail` to `file`, whose row is locked and whose `content` is the stored one."""
    stored = file.content
    tail_bytes = len(tail.encode("utf-8"))
    # Only the appended text goes to the database (the row is locked, so the stored content is the
    # one read): a day's note is sent and parsed once, not again on every append.
    settings_on = [WORDS_KNOWN_SETTING] if words_known else []
    statement = _TAIL_UPDATE_TEXT
    if not stored or stored[-1] in _WORD_BREAKS:
        # After a word boundary the stored lexemes stay right: the new vector is the stored one and
        # the tail's, given here so the trigger need not find the tail in the whole file again
        # (vault migration 0015). A tail that continues a word is left to the trigger's full parse.
        statement = _TAIL_UPDATE_VECTOR
        settings_on.append(VECTOR_GIVEN_SETTING)
    now = timezone.now()
    params = [tail, tail_bytes, now] + ([tail] if statement is _TAIL_UPDATE_VECTOR else []) + [file.pk]
    with _settings_on(settings_on), prepared_cursor() as cursor:
        cursor.execute(statement, params)
    file.content, file.size, file.updated_at = stored + tail, file.size + tail_bytes, now


def _daily_parts_append(
    agent: Agent, day, first: WorkspaceFile, parts: list[tuple[str, str]], *, words_known: bool
) -> WorkspaceFile:
    """Append `parts` to the note of `day` (its first part `first` locked: the day's writers take turns):
    to its last part while that stays within MEMORY_DAILY_NOTE_MAX_BYTES, then to new parts after it.
    A block is never split nor dropped (one over the bound fills a part alone); one whose `unless` text
    is in any part of the day is left out. Returns the last part written to."""
    notes = [first] + [note for note in selectors.daily_note_parts(agent.pk, day) if note.pk != first.pk]
    texts = _tail_texts("".join(note.content for note in notes), parts)
    if not texts:
        return first
    limit = settings.MEMORY_DAILY_NOTE_MAX_BYTES
    number = max(selectors.daily_note_part(note.path)[1] for note in notes)
    current = first if number == 1 else _file_live_locked(agent, daily_note_path(day, number)) or first
    chunk = ""
    for text in texts:
        while current.size + text_bytes(chunk + text) > limit and (
            chunk or current.size > text_bytes(_daily_header(day, number))
        ):
            if chunk:
                _file_tail_write(current, chunk, words_known=words_known)
            chunk = ""
            number += 1
            current, _ = _file_lock_or_create(
                agent, daily_note_path(day, number), content=_daily_header(day, number)
            )
        chunk += text
    _file_tail_write(current, chunk, words_known=words_known)
    return current


def _tail_build(stored: str, parts: list[tuple[str, str]]) -> str:
    """The text to append for (text, unless) parts (_tail_texts joined)."""
    return "".join(_tail_texts(stored, parts))


def _tail_texts(stored: str, parts: list[tuple[str, str]]) -> list[str]:
    """The texts to append for (text, unless) parts, in order, built on their own (adding each part to
    the whole file copied all of it once per part). A part is left out when its `unless` text is in the
    file, in the new text, or across the seam between them."""
    in_stored = _containment_check(stored, [unless for _, unless in parts if unless])
    tail, texts = "", []
    for text, unless in parts:
        if unless and (in_stored(unless) or unless in stored[-len(unless) :] + tail):
            continue
        tail += text
        if text:
            texts.append(text)
    return texts


# How many `unless` texts make an index of the file worth building (below it, each is looked for in the
# whole file), and how many characters of a text the index holds.
_INDEX_MIN_TEXTS = 8
_INDEX_KEY_CHARS = 48
_INDEX_ANCHOR_CHARS = 4


def _containment_check(stored: str, texts: list[str]) -> Callable[[str], bool]:
    """`text in stored` for many texts, with one pass over `stored` instead of one each.

    A write of a day's queued exchanges checks each against the whole note (a megabyte at the end of a
    busy day). Every occurrence of a text in the note starts with the text's first few characters (the
    anchor: "]\n**" for an exchange), so the note's substrings that start at an anchor, cut to the key's
    length, are the only keys an occurrence can have: a text whose key is not among them is not in the
    note, and only the others (replays, rare) are looked for in the whole note."""
    if len(texts) < _INDEX_MIN_TEXTS:
        return stored.__contains__
    keys = set()
    for anchor in {text[:_INDEX_ANCHOR_CHARS] for text in texts if len(text) >= _INDEX_KEY_CHARS}:
        at = stored.find(anchor)
        while at != -1:
            keys.add(stored[at : at + _INDEX_KEY_CHARS])
            at = stored.find(anchor, at + 1)

    def contains(text: str) -> bool:
        if len(text) >= _INDEX_KEY_CHARS and text[:_INDEX_KEY_CHARS] not in keys:
            return False
        return text in stored

    return contains


_DAILY_NOTE_PATH_RE = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})\.md$")


def _daily_note_day(path: str):
    """The date of a day's note at its first part's path, else None (appends there: _daily_parts_append)."""
    match = _DAILY_NOTE_PATH_RE.match(path)
    if match is None:
        return None
    try:
        return datetime(*(int(group) for group in match.groups())).date()
    except ValueError:  # memory/2026-13-45.md: refused as a new path, kept by an import (file_path_check)
        return None


def _queued_appends(agent: Agent, path: str) -> list[tuple[int, list]]:
    """(id, parts) of the appends queued for the agent's note at path, oldest first (only daily notes
    have any). Read under the note's row lock: only writers of the note delete them, and an append that
    has not committed yet is left for the next writer."""
    if not _DAILY_NOTE_PATH_RE.match(path):
        return []
    # By hand and prepared, as _TAIL_UPDATE: read on every write of a day's note.
    with prepared_cursor() as cursor:
        cursor.execute(_QUEUED_SELECT, [agent.pk, path])
        rows = cursor.fetchall()
    return [(pk, _QUEUED_PARTS.from_db_value(parts, None, connection)) for pk, parts in rows]


def _queued_delete(ids: list[int]) -> None:
    """Delete the queued appends `ids` (written into their note)."""
    with prepared_cursor() as cursor:
        cursor.execute(_QUEUED_DELETE, [ids])


_QUEUED_SELECT = (
    f"SELECT id, parts FROM {QueuedNoteAppend._meta.db_table} WHERE agent_id = %s::bigint AND path = %s::text"
    " ORDER BY id"
)
_QUEUED_PARTS = QueuedNoteAppend._meta.get_field("parts")
_QUEUED_DELETE = f"DELETE FROM {QueuedNoteAppend._meta.db_table} WHERE id = ANY(%s::bigint[])"


# The bytes the search-vector trigger takes for a word boundary at the end of the old content.
_WORD_BREAKS = " \n\t\r"


@contextmanager
def _settings_on(names: list[str]):
    """Turn these transaction-local settings on for the block and off after it, so that a later write in
    the same transaction is not affected; one statement each way. Call inside an atomic block: if the
    block fails, rolling it back restores the settings too."""
    if not names:
        yield
        return
    on = ", ".join("set_config(%s, 'on', true)" for _ in names)
    off = ", ".join("set_config(%s, '', true)" for _ in names)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {on}", names)
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {off}", names)


def _file_locked(agent: Agent, path: str) -> WorkspaceFile:
    selectors.file_path_lookup_check(path)
    file = _file_live_locked(agent, path)
    if file is None:
        raise selectors.file_not_found(path)
    return file


def file_edit(
    *, agent: Agent, path: str, old_text: str, new_text: str, replace_all: bool = False, changed_by: str
) -> tuple[WorkspaceFile, int]:
    """Exact find-and-replace in a file (edit_workspace_memory_file); returns (file, count).

    The text must be present, and present once unless replace_all: an ambiguous edit is refused rather
    than guessed. The previous content is versioned.
    """
    if not isinstance(old_text, str) or old_text == "":
        raise InvalidInput("old_text must not be empty", [{"loc": ["old_text"], "msg": "empty"}])
    text_check(new_text, field="new_text", allow_empty=True)
    with transaction.atomic():
        file = _file_locked(agent, path)
        count = file.content.count(old_text)
        if count == 0:
            raise InvalidInput(
                f"old_text was not found in {path}; nothing was replaced.",
                [{"loc": ["old_text"], "msg": "not found"}],
            )
        if count > 1 and not replace_all:
            raise InvalidInput(
                f"old_text occurs {count} times in {path}; include more context to make it unique, "
                "or set replace_all to replace every occurrence. Nothing was replaced.",
                [{"loc": ["old_text"], "msg": f"found {count} times"}],
            )
        content = file.content.replace(old_text, new_text)
        text_check(content, allow_empty=True)
        if content != file.content:
            WorkspaceFileVersion.objects.create(
                file=file, action=VersionAction.EDIT, content=file.content, changed_by=changed_by[:200]
            )
            file.content = content
            file.size = len(content.encode("utf-8"))
            file.save(update_fields=["content", "size", "updated_at"])
    return file, count


def file_lines_erase(*, agent: Agent, path: str, lines: list[str]) -> int:
    """Take `lines` (each a whole line, as written) out of a file and out of its version history, where
    an erased text must not come back from: a forgotten message's durable fact in MEMORY.md. No
    version is added (it would keep the line). Returns how many texts (the file, versions) changed."""
    wanted = {line for line in lines if line.strip()}
    if not wanted:
        return 0

    def without(content: str) -> str:
        return "".join(
            line for line in content.splitlines(keepends=True) if line.rstrip("\r\n") not in wanted
        )

    return file_history_rewrite(agent=agent, path=path, rewrite=without)


def file_history_rewrite(*, agent: Agent, path: str, rewrite) -> int:
    """Rewrite the live file at `path` and every one of its versions with `rewrite` (text -> text), under
    the file's lock, adding no version (a version would keep what is taken out): how an erased text
    leaves a file for good. Returns how many texts (the file, versions) changed."""
    changed = 0
    with transaction.atomic():
        file = _file_live_locked(agent, path)
        if file is None:
            return 0
        content = rewrite(file.content)
        if content != file.content:
            file.content, file.size = content, len(content.encode("utf-8"))
            file.save(update_fields=["content", "size", "updated_at"])
            changed += 1
        for version in WorkspaceFileVersion.objects.filter(file=file).only("pk", "content"):
            content = rewrite(version.content)
            if content != version.content:
                WorkspaceFileVersion.objects.filter(pk=version.pk).update(content=content)
                changed += 1
    return changed


def file_delete(*, agent: Agent, path: str, deleted_by: str) -> WorkspaceFile:
    """Soft-delete a file: it leaves listings, prompts and search, and its last content is versioned."""
    with transaction.atomic():
        file = _file_locked(agent, path)
        # Exchanges queued for a deleted note go with it (a later exchange starts a new note).
        QueuedNoteAppend.objects.filter(agent=agent, path=path).delete()
        WorkspaceFileVersion.objects.create(
            file=file, action=VersionAction.DELETE, content=file.content, changed_by=deleted_by[:200]
        )
        file.deleted_at = timezone.now()
        file.save(update_fields=["deleted_at", "updated_at"])
    return file


def file_settings_set(
    *,
    agent: Agent,
    path: str,
    enabled: bool | None = None,
    sort_order: int | None = None,
    seen_enabled: bool | None = None,
    seen_sort_order: int | None = None,
) -> WorkspaceFile:
    """Change whether a file is injected into the system prompt, and where (sort order). A setting
    left None is left as it is; a write that changes nothing writes nothing.

    A form sends every setting back, so a form opened before an agent's (or another curator's) change
    of one setting wrote the value it had shown back over it. With `seen_enabled` / `seen_sort_order`,
    each setting as the form showed it, a setting the form did not change (sent as seen) is left as it
    is now, and one it changed that someone else changed since is refused (Conflict, loc the seen_
    field; nothing is written), checked under the row lock. Settings only: an append to the file's
    text is no reason to refuse a change of them."""
    if sort_order is not None and not -1_000_000 <= sort_order <= 1_000_000:
        raise InvalidInput(
            "sort_order must be between -1000000 and 1000000",
            [{"loc": ["sort_order"], "msg": "out of range"}],
        )
    with transaction.atomic():
        file = _file_locked(agent, path)
        wanted, changed_since = {}, []
        for field, value, seen in (
            ("enabled", enabled, seen_enabled),
            ("sort_order", sort_order, seen_sort_order),
        ):
            current = getattr(file, field)
            if value is None or value == current or (seen is not None and value == seen):
                continue
            if seen is not None and current != seen:
                changed_since.append(field)
            wanted[field] = value
        if changed_since:
            now = f"{'in the prompt' if file.enabled else 'not in the prompt'}, order {file.sort_order}"
            raise Conflict(
                f"The settings of {path} were changed since this page was opened (now: {now}); saving "
                "would overwrite that change, so nothing was saved. Its current settings are shown with "
                "your change; save again to apply it.",
                [
                    {"loc": [f"seen_{field}"], "msg": "changed since the form was opened"}
                    for field in changed_since
                ],
            )
        if not wanted:
            return file
        for field, value in wanted.items():
            setattr(file, field, value)
        file.save(update_fields=[*wanted, "updated_at"])
    return file


def file_rename(*, agent: Agent, old_path: str, new_path: str, markdown_only: bool = True) -> WorkspaceFile:
    """Move a file to a new path, history included; the destination must not exist."""
    file_path_check(new_path, markdown_only=markdown_only)
    with transaction.atomic():
        file = _file_locked(agent, old_path)
        if _queued_appends(agent, old_path):  # the note's queued exchanges are written before it moves
            file_append_many(agent=agent, path=old_path, parts=[], changed_by=DAILY_NOTE_LOGGER)
            file = _file_locked(agent, old_path)
        if WorkspaceFile.objects.filter(agent=agent, path=new_path, deleted_at__isnull=True).exists():
            raise Conflict(f"The destination {new_path} already exists.")
        file.path = new_path
        try:
            with transaction.atomic():
                file.save(update_fields=["path", "updated_at"])
        except IntegrityError:
            raise Conflict(f"The destination {new_path} already exists.") from None
    return file


def file_create(
    *, agent: Agent, path: str, content: str, changed_by: str, markdown_only: bool = True
) -> WorkspaceFile:
    """Create a file that must not exist yet (the memory tool's `create`); Conflict when it does."""
    file_path_check(path, markdown_only=markdown_only)
    text_check(content, allow_empty=True)
    with transaction.atomic():
        file, created = _file_lock_or_create(agent, path)
        if not created:
            raise Conflict(f"File {path} already exists")
        file.content = content
        file.size = len(content.encode("utf-8"))
        file.save(update_fields=["content", "size", "updated_at"])
    return file


def _daily_header(day, part: int = 1) -> str:
    if part == 1:
        return f"# Daily Notes -- {day:%Y-%m-%d}\n"
    return f"# Daily Notes -- {day:%Y-%m-%d} (part {part}, continued from {daily_note_path(day, part - 1)})\n"


DAILY_NOTE_LOGGER = "daily-note log"
