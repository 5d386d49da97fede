"""Heuristic extraction of decisions and lessons from conversation text.

When a session closes or a long conversation is compacted, the lines that record a decision or a lesson
are copied into the vault so they outlive the conversation. The seed does this with two lists of ten
regexes (PT + EN); this module keeps those patterns and limits, plus the section map used when importing
legacy markdown memory files. Pure Python, so it can be tested without a database.
"""

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from vault.text import text_clip


def _compile(regex: str) -> re.Pattern:
    return re.compile(regex, re.IGNORECASE)


# The ten decision regexes, then the extra session-close keywords it lists. "decidimos",
# "escolhemos" and "will use" are also in that list but are already matched by /\bdecid/, /\bescolh/ and
# /\bwill use\b/.
DECISION_PATTERNS: tuple[re.Pattern, ...] = (
    _compile(r"\bdecid"),
    _compile(r"\bchose\b"),
    _compile(r"\bwill use\b"),
    _compile(r"\bdecisão"),
    _compile(r"\bescolh"),
    _compile(r"\boptamos"),
    _compile(r"\badotamos"),
    _compile(r"\bvamos usar\b"),
    _compile(r"\bwent with\b"),
    _compile(r"\bsettled on\b"),
    _compile(r"\brecomenda[çc][ãa]o"),
    _compile(r"\bstack principal\b"),
)

# The ten lesson regexes, then "risco" from its session-close list ("aprendemos" and "lição" are
# already among the ten). /\bimportant/ and /\bobserv/ are deliberately broad in the seed ("important",
# "importantly", "observe", "observability"...): kept as-is so extraction behaves like the seed, at the cost
# of some noise in auto-extracted lessons. /\bimportante/ is subsumed by /\bimportant/ but kept for fidelity.
LESSON_PATTERNS: tuple[re.Pattern, ...] = (
    _compile(r"\blearned\b"),
    _compile(r"\bimportant"),
    _compile(r"\bnote:"),
    _compile(r"\baprendemos"),
    _compile(r"\bimportante"),
    _compile(r"\blição"),
    _compile(r"\bdiscovery"),
    _compile(r"\binsight"),
    _compile(r"\bdescobr"),
    _compile(r"\bobserv"),
    _compile(r"\briscos?\b"),
)


@dataclass
class Insights:
    decisions: list[str] = field(default_factory=list)
    lessons: list[str] = field(default_factory=list)


# Leading decoration that says nothing about the insight itself: list bullets, numbering, headings, quotes,
# checkboxes, and the "[Agent]: " / "User:" role prefixes that handoffs and transcripts put on each line.
_LINE_PREFIXES = (
    re.compile(r"^(?:[-*+•>]+|\d+[.)]|#+)\s+"),
    re.compile(r"^\[[ xX]\]\s+"),
    re.compile(r"^\*\*\s*(?:agent|user|assistant|human|system|ai)\s*:?\s*\*\*\s*:?\s*", re.IGNORECASE),
    re.compile(r"^\[[^\]\n]{1,40}\]\s*:\s*"),
    re.compile(r"^(?:agent|user|assistant|human|system|ai)\s*:\s+", re.IGNORECASE),
)


def _line_clean(line: str) -> str:
    """Strip prefixes repeatedly, since they stack: "- [Agent]: decided..." has two."""
    previous = None
    while previous != line:
        previous = line
        for prefix in _LINE_PREFIXES:
            line = prefix.sub("", line, count=1).strip()
    return line


def _cap(text: str, max_chars: int) -> str:
    """Cut at a word boundary and mark the cut with "…", staying within max_chars including the mark."""
    return text_clip(text, max_chars, flatten=False, at_word=True)


def _dedupe_key(text: str) -> str:
    return " ".join(text.casefold().split())


def insights_extract(
    texts: Iterable[str], *, max_per_kind: int = 10, max_chars: int = 300, min_line_chars: int = 15
) -> Insights:
    """Split each text into lines, keep lines longer than min_line_chars (strictly >), classify: a line
    matching a decision pattern is a decision (decision wins over lesson), else a lesson pattern makes it a
    lesson; strip leading list markers / markdown bullets / role prefixes like "[Agent]: "; cap each at
    max_chars (cut at a word boundary and add "…" only if cut), de-duplicate (case/whitespace-insensitive)
    preserving order; at most max_per_kind each.

    The length limit is measured on the trimmed raw line, as in the seed, so it filters out short chatter
    ("ok, decided") before any prefix stripping.
    """
    insights = Insights()
    seen: set[str] = set()
    for text in texts:
        for raw_line in text.splitlines():
            line = raw_line.strip()
            if len(line) <= min_line_chars:
                continue
            if any(pattern.search(line) for pattern in DECISION_PATTERNS):
                bucket = insights.decisions
            elif any(pattern.search(line) for pattern in LESSON_PATTERNS):
                bucket = insights.lessons
            else:
                continue
            cleaned = _line_clean(line)
            key = _dedupe_key(cleaned)
            if not cleaned or key in seen or len(bucket) >= max_per_kind:
                continue
            seen.add(key)
            bucket.append(_cap(cleaned, max_chars))
    return insights


# The map from legacy markdown section titles to vault categories.
SECTION_MAP: dict[str, str] = {
    "Decisões": "decisions",
    "Decisões Técnicas": "decisions",
    "Decisions": "decisions",
    "Aprendizados": "lessons",
    "Notas de Sessão": "lessons",
    "Lessons": "lessons",
    "Findings": "lessons",
    "Notes": "lessons",
    "Tarefas": "tasks",
    "Tasks": "tasks",
    "Contexto": "projects",
    "Contexto de Projeto": "projects",
    "Context": "projects",
    "Projects": "projects",
    "Handoffs": "handoffs",
}

SECTION_FALLBACK = "lessons"

# Word stems for titles that are not in SECTION_MAP verbatim ("Decision log", "Lessons learned", "Open
# tasks"). Checked in this order, so a title naming two things goes to the more specific category:
# "Decisões de projeto" is a decision, "Project notes" a lesson.
_SECTION_STEMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("decisions", ("decis", "decid")),
    ("handoffs", ("handoff",)),
    ("tasks", ("tarefa", "task")),
    ("lessons", ("aprendizad", "aprendi", "licao", "licoes", "lesson", "learn", "finding", "nota", "note")),
    ("projects", ("contexto", "context", "projeto", "project")),
)


def _title_normalise(title: str) -> str:
    """Casefold, drop accents, emoji and punctuation: "## 📌 Decisões Técnicas!" -> "decisoes tecnicas"."""
    decomposed = unicodedata.normalize("NFKD", title.replace("-", ""))
    without_accents = "".join(c for c in decomposed if not unicodedata.combining(c))
    words = re.sub(r"[^\w\s]|_", " ", without_accents.casefold()).split()
    return " ".join(words)


_SECTION_MAP_NORMALISED = {_title_normalise(title): category for title, category in SECTION_MAP.items()}


def section_classify(title: str) -> str:
    """Map a markdown section title to a vault category, as the seed's migration does.

    Fuzzy: case/accent-insensitive, tolerant of extra words and emoji ("## 📌 Decisões técnicas importantes"
    -> decisions, "Lessons learned" -> lessons, "Project context" -> projects, "Open tasks" -> tasks);
    unknown -> "lessons" (seed's fallback), because legacy notes are more often lessons than anything else.
    """
    normalised = _title_normalise(title)
    if normalised in _SECTION_MAP_NORMALISED:
        return _SECTION_MAP_NORMALISED[normalised]
    words = normalised.split()
    for category, stems in _SECTION_STEMS:
        if any(word.startswith(stem) for word in words for stem in stems):
            return category
    return SECTION_FALLBACK
