"""The snippet a search result shows: the text around the first match of a query word, matches marked."""

import re

from vault.search_text import NON_CJK_WORD_CHAR

_SNIPPET_BEFORE = 30
SNIPPET_CHARS = 120
_WORD_CHAR = NON_CJK_WORD_CHAR


def words_regex(patterns: list[str]) -> re.Pattern:
    """A text's words that the patterns (a query's, CompiledQuery.patterns) match: from a word's start,
    or anywhere in a run of CJK characters."""
    alternation = "|".join(sorted(set(patterns), key=len, reverse=True))
    return re.compile(rf"(?<!{_WORD_CHAR})(?:{alternation}){_WORD_CHAR}*", re.IGNORECASE)


def word_exact_regex(word: str) -> re.Pattern:
    """`word` as a whole word (an excluded one), by words_regex's rule of where words start and end."""
    return re.compile(rf"(?<!{_WORD_CHAR}){re.escape(word)}(?!{_WORD_CHAR})", re.IGNORECASE)


def _spans(flat: str, patterns: list[str]) -> list[tuple[int, int]]:
    """Where the patterns match, overlapping and touching matches merged (a run's pairs into one)."""
    if not patterns:
        return []
    alternation = "|".join(sorted(set(patterns), key=len, reverse=True))
    regex = re.compile(rf"(?<!{_WORD_CHAR})(?=((?:{alternation}){_WORD_CHAR}*))", re.IGNORECASE)
    merged: list[tuple[int, int]] = []
    for match in regex.finditer(flat):
        start, end = match.start(), match.start() + len(match.group(1))
        if end == start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def snippet_build(text: str, patterns: list[str], *, mark: tuple[str, str] = ("**", "**")) -> str:
    """About 120 characters around the first match of a query word, matches marked."""
    flat = " ".join(text.split())
    spans = _spans(flat, patterns)
    start = max(0, spans[0][0] - _SNIPPET_BEFORE) if spans else 0
    if start > 0:
        space = flat.find(" ", start, spans[0][0])
        start = space + 1 if space != -1 else start
    end = min(len(flat), start + SNIPPET_CHARS)
    if end < len(flat):
        space = flat.rfind(" ", start + SNIPPET_CHARS // 2, end)
        end = space if space != -1 else end
    parts, done = [], start
    for span_start, span_end in spans:
        span_start, span_end = max(span_start, start), min(span_end, end)
        if span_start >= span_end:
            continue
        parts += [flat[done:span_start], mark[0], flat[span_start:span_end], mark[1]]
        done = span_end
    window = "".join(parts) + flat[done:end]
    return ("…" if start > 0 else "") + window + ("…" if end < len(flat) else "")
