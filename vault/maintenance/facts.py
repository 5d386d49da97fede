"""The facts of a memory file (MEMORY.md, PROFILE.md, a daily note), and the check that a model's
rewrite of the file keeps them or says why not: shared by consolidation and the post-conversation extraction."""

import re

from django.conf import settings

from vault.text import lines_with_code, text_clip
from vault.trust import poisoning_findings, text_as_written, text_words
from vault.workspace_templates import DEFAULT_WORKSPACE_FILES, PREVIOUS_DEFAULTS

_FACT_PREFIX_RE = re.compile(r"^(?:[-*+•]\s+|\d+[.)]\s+|\[[ xX]\]\s+)+")
_FACT_TIME_RE = re.compile(r"^(?:\[?\d{1,2}:\d{2}(?::\d{2})?\]?\s*[-–·:]?\s*)")
_FACT_WORD_RE = re.compile(r"\w")


def fact_lines(content: str) -> list[tuple[str, bool]]:
    """Each line of a note or MEMORY.md and whether it can be a fact: prose or a list item, not a
    heading, code (a fence or inside one), a table row or a rule. Those repeat by nature (a block's
    closing fence, a second table's separator): dropped as duplicates they broke the file."""
    return [
        (line, not code and bool(_FACT_WORD_RE.search(line)) and not line.lstrip().startswith(("#", "|")))
        for line, code in lines_with_code(content)
    ]


def fact_key(line: str) -> str:
    """A fact's line as the duplicate and kept-verbatim checks compare it: as written (text_as_written:
    composed, lower case, marks and ß kept, so "in Maßen" (in moderation) is not "in Massen" (in
    masses)), whitespace runs as one space, without its closing punctuation."""
    return " ".join(text_as_written(line).split()).rstrip(".!;:")


def fact_clean(line: str) -> str:
    line = _FACT_PREFIX_RE.sub("", line.strip())
    return _FACT_TIME_RE.sub("", line).strip()


# An old fact is still in the new file when a line of it holds this share of the fact's words (a fact
# reworded a little, merged into a longer line or given a new value is kept, not dropped); a removal
# names it when its "fact" does.
FACT_KEPT_WORD_SHARE = 0.8
# Cap on the dropped facts, and on the removals told why of, a result lists (the count is always whole).
FACTS_DROPPED_LISTED = 50
# A removal's fact and why as a result reports them: the model's why can be any length.
REMOVAL_CHARS = 500


def _fact_words(text: str) -> set[str]:
    """A fact's words as written (fact_key's reading): a letter's combining accent is part of its word
    (e + U+0301 is é, not a cut), and a word whose accent or ß changed is another word."""
    return set(text_words(text_as_written(text)).split())


def _file_facts(content: str, path: str) -> list[str]:
    """The file's facts (fact_lines, cleaned), once each; the lines of its starting text are none."""
    starting = _STARTING_TEXT_FACTS.get(path, set())
    facts: dict[str, str] = {}
    for line, is_fact in fact_lines(content):
        fact = fact_clean(line)
        key = fact_key(fact)
        if is_fact and _fact_words(fact) and key not in starting:
            facts.setdefault(key, fact)
    return list(facts.values())


# The facts of each workspace file's starting texts (a new agent's PROFILE.md and MEMORY.md): replacing
# them is not dropping anything.
_STARTING_TEXT_FACTS: dict[str, set[str]] = {}
for _path, _text in [(path, text) for path, text, _ in DEFAULT_WORKSPACE_FILES] + [
    (path, text) for path, texts in PREVIOUS_DEFAULTS.items() for text in texts
]:
    _STARTING_TEXT_FACTS.setdefault(_path, set()).update(
        fact_key(fact_clean(line)) for line, fact in fact_lines(_text) if fact
    )


def _fact_in(words: set[str], lines: list[set[str]]) -> bool:
    return any(len(words & line) >= FACT_KEPT_WORD_SHARE * len(words) for line in lines)


def _removal_whys(removed: list) -> list[tuple[set[str], str]]:
    """The words of each fact `removed` names, with its why, for the removals that give one (a blank
    or missing why explains nothing)."""
    whys = []
    for item in removed:
        if not isinstance(item, dict) or not isinstance(item.get("fact"), str):
            continue
        why = item.get("why") or item.get("reason")
        if isinstance(why, str) and why.strip():
            whys.append((_fact_words(item["fact"]), why))
    return whys


def model_text_reported(text: str) -> str:
    """A model's text as a result and a run's record may hold it: short, no NUL nor lone surrogate
    (PostgreSQL's jsonb takes neither). For its removals' facts and whys, and its answer's reason."""
    text = text_clip(text.replace("\x00", ""), REMOVAL_CHARS)
    return text.encode("utf-8", "replace").decode("utf-8")


def facts_dropped(path: str, old: str, new: str, removed: list) -> tuple[int, list[str], list[dict]]:
    """How many facts the `old` file at `path` holds; those the `new` one holds no longer without the
    model naming them in `removed` ([{"fact", "why"}], a why given: superseded, duplicate, no longer
    true), what a rewrite would lose unnoticed, the old text kept only in the file's history; and those
    it removes saying why, [{"fact", "why"}] (the old fact, the model's why)."""
    facts = _file_facts(old, path)
    lines = [_fact_words(line) for line in new.splitlines()]
    # Most facts are kept word for word: found by their key, no word sets compared.
    verbatim = {fact_key(fact_clean(line)) for line in new.splitlines()}
    whys = _removal_whys(removed)
    silent, explained = [], []
    for fact in facts:
        words = _fact_words(fact)
        if fact_key(fact) in verbatim or _fact_in(words, lines):
            continue
        why = next((why for named, why in whys if _fact_in(words, [named])), None)
        if why is None:
            silent.append(fact)
        else:
            explained.append({"fact": model_text_reported(fact), "why": model_text_reported(why)})
    return len(facts), silent, explained


def rewrite_review(*, path: str, old: str | None, new: str, removed: list) -> tuple[dict | None, list[dict]]:
    """Whether the model's `new` file at `path` (MEMORY.md, PROFILE.md) may replace the `old` one, and
    what it removes saying why.

    Returns (refusal, removals). The refusal is None when the file may be written; else why not, as
    {"reason", "facts_dropped_silently"}: it drops more than MEMORY_CONSOLIDATE_MAX_SILENT_DROP of the
    old facts without naming them in `removed`. The removals are the old facts the new file no longer
    holds that `removed` names with a why, [{"fact", "why"}] (at most FACTS_DROPPED_LISTED): what a
    curator reviews."""
    total, dropped, explained = facts_dropped(path, old or "", new, removed)
    share = settings.MEMORY_CONSOLIDATE_MAX_SILENT_DROP
    removals = explained[:FACTS_DROPPED_LISTED]
    if not dropped or len(dropped) <= share * total:
        return None, removals
    refusal = {
        "reason": (
            f"the model's {path} dropped {len(dropped)} of {total} facts without saying why (more than "
            f"MEMORY_CONSOLIDATE_MAX_SILENT_DROP, {share:.0%}): refused, {path} kept as it was"
        ),
        "facts_dropped_silently": dropped[:FACTS_DROPPED_LISTED],
    }
    return refusal, removals


def instructions_added(old: str | None, new: str) -> list[str]:
    """Why the lines a model's `new` text adds to `old` (its rewrite of a memory file; its daily-note
    entry, with no `old`) look like instructions to the agent (trust.poisoning_findings), the reasons an
    entry with them is held for review; [] when they do not. The lines `old` holds already (a curator
    wrote them) are not looked at again."""
    kept = set((old or "").splitlines())
    added = "\n".join(line for line in new.splitlines() if line not in kept)
    return poisoning_findings(added) if added.strip() else []
