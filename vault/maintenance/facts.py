"""The facts of a memory file (MEMORY.md, a daily note), and the check that a model's rewrite of the
file keeps them or says why not: shared by consolidation and the post-conversation extraction."""

import re

from django.conf import settings

from vault.text import lines_with_code
from vault.workspace_templates import MEMORY_MD

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
    return " ".join(line.casefold().split()).rstrip(".!;:")


def fact_clean(line: str) -> str:
    line = _FACT_PREFIX_RE.sub("", line.strip())
    return _FACT_TIME_RE.sub("", line).strip()


# An old fact is still in the new MEMORY.md when a line of it holds this share of the fact's words (a fact
# reworded a little, merged into a longer line or given a new value is kept, not dropped); a removal
# names it when its "fact" does.
FACT_KEPT_WORD_SHARE = 0.8
# Cap on the dropped facts a result lists (the count is always whole).
FACTS_DROPPED_LISTED = 50


def _fact_words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def _memory_facts(content: str) -> list[str]:
    """MEMORY.md's facts (fact_lines, cleaned), once each; the lines of its starting text are none."""
    facts: dict[str, str] = {}
    for line, is_fact in fact_lines(content):
        fact = fact_clean(line)
        key = fact_key(fact)
        if is_fact and _fact_words(fact) and key not in _STARTING_TEXT_FACTS:
            facts.setdefault(key, fact)
    return list(facts.values())


_STARTING_TEXT_FACTS = {fact_key(fact_clean(line)) for line, fact in fact_lines(MEMORY_MD) if fact}


def _fact_in(words: set[str], lines: list[set[str]]) -> bool:
    return any(len(words & line) >= FACT_KEPT_WORD_SHARE * len(words) for line in lines)


def facts_dropped_silently(old: str, new: str, removed: list) -> tuple[int, list[str]]:
    """How many facts `old` MEMORY.md holds, and those the `new` one holds no longer without the
    model naming them in `removed` ([{"fact", "why"}], a why given: superseded, duplicate, no longer
    true): what a rewrite would lose unnoticed, the old text kept only in the file's history."""
    facts = _memory_facts(old)
    lines = [_fact_words(line) for line in new.splitlines()]
    # Most facts are kept word for word: found by their key, no word sets compared.
    verbatim = {fact_key(fact_clean(line)) for line in new.splitlines()}
    explained = [
        _fact_words(item["fact"])
        for item in removed
        if isinstance(item, dict)
        and isinstance(item.get("fact"), str)
        and isinstance(item.get("why") or item.get("reason"), str)
        and (item.get("why") or item.get("reason")).strip()
    ]
    dropped = [
        fact
        for fact in facts
        if fact_key(fact) not in verbatim
        and not _fact_in(_fact_words(fact), lines)
        and not _fact_in(_fact_words(fact), explained)
    ]
    return len(facts), dropped


def rewrite_refusal(memory: str | None, content: str, removed: list) -> dict | None:
    """None when the model's MEMORY.md may replace `memory`; else why not: it drops more than
    MEMORY_CONSOLIDATE_MAX_SILENT_DROP of the facts without saying so."""
    total, dropped = facts_dropped_silently(memory or "", content, removed)
    share = settings.MEMORY_CONSOLIDATE_MAX_SILENT_DROP
    if not dropped or len(dropped) <= share * total:
        return None
    return {
        "reason": (
            f"the model's MEMORY.md dropped {len(dropped)} of {total} facts without saying why (more than "
            f"MEMORY_CONSOLIDATE_MAX_SILENT_DROP, {share:.0%}): refused, MEMORY.md kept as it was"
        ),
        "facts_dropped_silently": dropped[:FACTS_DROPPED_LISTED],
    }
