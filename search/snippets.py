"""The snippet a search result shows: the text around the first match of a query word, matches marked."""

import re

from vault.search_text import WordMatcher

_SNIPPET_BEFORE = 30
SNIPPET_CHARS = 120


def words_matcher(patterns: list[str]) -> WordMatcher:
    """A text's words that the patterns (a query's, CompiledQuery.patterns) match: from a word's start,
    or anywhere in a run of CJK characters."""
    return WordMatcher(patterns)


def word_exact_matcher(word: str) -> WordMatcher:
    """`word` as a whole word (an excluded one), by words_matcher's rule of where words start and end."""
    return WordMatcher([re.escape(word)], whole=True)


def _spans(flat: str, patterns: list[str]) -> list[tuple[int, int]]:
    """Where the patterns match, overlapping and touching matches merged (a run's pairs into one)."""
    if not patterns:
        return []
    merged: list[tuple[int, int]] = []
    for start, end in WordMatcher(patterns).spans(flat):
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
