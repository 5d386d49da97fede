"""A forgotten message's text taken out of what the server derived from it, beyond the exchange log
(daily_notes.daily_notes_text_erase) and the entries written from it alone (retention's
entries_from_message_erase):

- the entries that name it among their sources and quote it line by line (a handoff: "[User]: text"),
  whose quote of it becomes "[forgotten]" (`entries_quotes_erase`);
- the blocks the post-conversation extraction wrote for its session in the daily notes: the lines the
  heuristics wrote from it (its durable facts, decisions and lessons) go, and its text where the model
  wrote it becomes "[forgotten]" (`daily_notes_extraction_erase`);
- MEMORY.md and PROFILE.md, which the model rewrites (extraction, consolidation) and consolidation
  copies the notes' recurring facts into: its text becomes "[forgotten]", and the lines the heuristics
  wrote from it go once no daily note holds them (`memory_files_text_erase`).

What cannot be traced to the message (a model's paraphrase, its words inside another text) is found
only as the exact text: the caller gives its forms (whole, spaces collapsed, redacted), and a form
shorter than DERIVED_TEXT_MIN_CHARS is not looked for outside the lines the server wrote from it
("ok" or "yes please" would be erased from everything). Nothing here adds a version: a version would
keep the text. Call in the forget's transaction."""

import re
from datetime import date

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from vault import trust
from vault.models import Agent, EntryVersion, VaultEntry, WorkspaceFile, WorkspaceFileVersion
from vault.selectors import DAILY_NOTE_ANY_PART, MEMORY_FILES
from vault.services.daily_notes import FORGOTTEN, _note_first_part
from vault.services.files import file_history_rewrite

# A form of the forgotten text shorter than this is looked for only where the server wrote it whole.
DERIVED_TEXT_MIN_CHARS = 12


def _text_pattern(texts: list[str]) -> re.Pattern | None:
    """The forms of a forgotten text, each as a whole run of words (not "forgotten" inside
    "unforgotten"), the longest first."""
    forms = sorted({t for t in texts if len(t.strip()) >= DERIVED_TEXT_MIN_CHARS}, key=len, reverse=True)
    if not forms:
        return None
    return re.compile(rf"(?<!\w)(?:{'|'.join(re.escape(form) for form in forms)})(?!\w)")


def entries_quotes_erase(*, agent_id: int, message_id: int, quotes: list[str]) -> list[int]:
    """In the agent's entries that list the message among their sources, a line quoting it
    ("[User]: <quote>" or "[Agent]: <quote>", as a handoff quotes each message) says "[forgotten]"
    instead, in the entry and in its versions; the rest of the entry (the other messages' lines, a
    summary) stays. Returns the ids of the entries changed."""
    quotes = sorted({q for q in quotes if q.strip()}, key=len, reverse=True)
    if not quotes:
        return []
    pattern = re.compile(rf"^(\[(?:User|Agent)\]: )(?:{'|'.join(re.escape(q) for q in quotes)})$", re.M)

    def erased(content: str) -> str:
        return pattern.sub(lambda m: m.group(1) + FORGOTTEN, content)

    changed = []
    entries = VaultEntry.objects.select_for_update(of=("self",)).filter(
        agent_id=agent_id, source_message_ids__contains=[message_id]
    )
    for entry in entries.order_by("pk"):
        content = erased(entry.content)
        if content != entry.content:
            VaultEntry.objects.filter(pk=entry.pk).update(
                content=content,
                content_hash=trust.content_hash(content),
                sketch=trust.sketch(trust.word_set(content)),
                updated_at=timezone.now(),
            )
            changed.append(entry.pk)
        for version in EntryVersion.objects.filter(entry_id=entry.pk).only("pk", "content"):
            content = erased(version.content)
            if content != version.content:
                EntryVersion.objects.filter(pk=version.pk).update(content=content)
    return changed


def _blocks_rewrite(content: str, heading: re.Pattern, lines: set[str], pattern: re.Pattern | None) -> str:
    """`content` with, inside the blocks whose "## " heading matches `heading`, the lines in `lines`
    taken out and `pattern`'s matches replaced by FORGOTTEN."""
    out, inside = [], False
    for line in content.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if bare.startswith("## "):
            inside = bool(heading.match(bare))
        elif inside:
            if bare in lines:
                continue
            if pattern is not None:
                line = pattern.sub(FORGOTTEN, line)
        out.append(line)
    return "".join(out)


def daily_notes_extraction_erase(
    *, agent: Agent, session_label: str, lines: list[str], texts: list[str], first_day: date | None = None
) -> int:
    """In the blocks the post-conversation extraction wrote for the session called `session_label`
    ("## HH:MM · session <label> (extraction)" or "(heuristic extraction)") in the agent's daily notes
    (every part, deleted ones too, and their versions), from `first_day` on: the lines in `lines` (those
    the heuristics wrote from the forgotten message) are taken out, and `texts` (its forms) where the
    model wrote them become FORGOTTEN. The day's writers' locks are taken first, as
    daily_notes_text_erase takes them. Returns how many notes and versions changed."""
    wanted = {line for line in lines if line.strip()}
    pattern = _text_pattern(texts)
    if not wanted and pattern is None:
        return 0
    heading = re.compile(
        rf"^## \d{{1,2}}:\d{{2}} · session {re.escape(session_label)} \((?:heuristic )?extraction\)$"
    )
    marker = f" · session {session_label} ("
    notes = WorkspaceFile.objects.filter(agent=agent, path__regex=DAILY_NOTE_ANY_PART)
    if first_day is not None:
        notes = notes.filter(path__gte=f"memory/{first_day:%Y-%m-%d}")
    changed = 0
    with transaction.atomic():
        days = {
            _note_first_part(path)
            for path in notes.filter(content__contains=marker).values_list("path", flat=True)
        }
        list(WorkspaceFile.objects.select_for_update().filter(agent=agent, path__in=days).order_by("path"))
        for note in notes.select_for_update().filter(content__contains=marker).order_by("path", "pk"):
            content = _blocks_rewrite(note.content, heading, wanted, pattern)
            if content != note.content:
                WorkspaceFile.objects.filter(pk=note.pk).update(
                    content=content, size=len(content.encode("utf-8")), updated_at=timezone.now()
                )
                changed += 1
        for version in WorkspaceFileVersion.objects.filter(file__in=notes, content__contains=marker):
            content = _blocks_rewrite(version.content, heading, wanted, pattern)
            if content != version.content:
                WorkspaceFileVersion.objects.filter(pk=version.pk).update(content=content)
                changed += 1
    return changed


def memory_files_text_erase(*, agent: Agent, lines: list[str], texts: list[str]) -> int:
    """MEMORY.md and PROFILE.md (and their versions) without the forgotten message's text: `texts` (its
    forms) become FORGOTTEN wherever they stand, and the lines in `lines` (those the heuristics wrote
    from it, which consolidation copies from the notes) go once no live daily note of the agent holds
    them (a line still in a note came from another conversation too). Returns how many files and
    versions changed."""
    pattern = _text_pattern(texts)
    still_noted = Q()
    for line in lines:
        still_noted |= Q(content__contains=line)
    noted = set()
    if lines:
        held = WorkspaceFile.objects.filter(
            still_noted, agent=agent, path__regex=DAILY_NOTE_ANY_PART, deleted_at__isnull=True
        )
        for content in held.values_list("content", flat=True):
            noted |= {line for line in lines if line in content.splitlines()}
    wanted = {line for line in lines if line.strip() and line not in noted}
    if not wanted and pattern is None:
        return 0

    def erased(content: str) -> str:
        kept = [line for line in content.splitlines(keepends=True) if line.rstrip("\r\n") not in wanted]
        content = "".join(kept)
        return pattern.sub(FORGOTTEN, content) if pattern is not None else content

    with transaction.atomic():
        return sum(file_history_rewrite(agent=agent, path=path, rewrite=erased) for path in MEMORY_FILES)


def derived_texts_held(*, agent_id: int, session_label: str, texts: list[str]) -> set[str]:
    """Those of `texts` found in the text derived from a session's messages: the agent's daily notes
    that hold an extraction block of the session, MEMORY.md and PROFILE.md, and their versions. A forget
    asks this first, and asks whether another message still says a text (a search of every message of
    the agent) only for those found: most forgets then have nothing more to ask."""
    wanted = sorted({text for text in texts if text})
    if not wanted:
        return set()
    holding = Q()
    for text in wanted:
        holding |= Q(content__contains=text)
    marker = f" · session {session_label} ("
    derived = Q(path__in=MEMORY_FILES) | Q(path__regex=DAILY_NOTE_ANY_PART, content__contains=marker)
    contents = list(
        WorkspaceFile.objects.filter(derived, holding, agent_id=agent_id).values_list("content", flat=True)
    )
    versions = WorkspaceFileVersion.objects.filter(
        Q(file__path__in=MEMORY_FILES) | Q(file__path__regex=DAILY_NOTE_ANY_PART, content__contains=marker),
        holding,
        file__agent_id=agent_id,
    )
    contents += versions.values_list("content", flat=True)
    return {text for text in wanted if any(text in content for content in contents)}
