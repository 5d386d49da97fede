"""The snippet a search result shows: the text around the first match of a query word, matches marked."""

import re
from functools import lru_cache

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


def _spans(flat: str, matcher: WordMatcher, start: int, end: int) -> list[tuple[int, int]]:
    """Where the matcher matches from `start` to `end`, overlapping and touching matches merged (a run's
    pairs into one)."""
    merged: list[tuple[int, int]] = []
    for span_start, span_end in matcher.spans(flat, pos=start, before=end):
        if merged and span_start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(span_end, merged[-1][1]))
        else:
            merged.append((span_start, span_end))
    return merged


def snippet_build(text: str, patterns: list[str], *, mark: tuple[str, str] = ("**", "**")) -> str:
    """About 120 characters around the first match of a query word, matches marked."""
    flat = " ".join(text.split())
    matcher = _matcher(tuple(patterns)) if patterns else None
    first = next(matcher.spans(flat), None) if matcher else None
    start = max(0, first[0] - _SNIPPET_BEFORE) if first else 0
    if start > 0:
        space = flat.find(" ", start, first[0])
        start = space + 1 if space != -1 else start
    end = min(len(flat), start + SNIPPET_CHARS)
    if end < len(flat):
        space = flat.rfind(" ", start + SNIPPET_CHARS // 2, end)
        end = space if space != -1 else end
    parts, done = [], start
    # Only the window is searched: a long text's matches past it cost time and are not shown.
    for span_start, span_end in _spans(flat, matcher, start, end) if first else []:
        span_start, span_end = max(span_start, start), min(span_end, end)
        if span_start >= span_end:
            continue
        parts += [flat[done:span_start], mark[0], flat[span_start:span_end], mark[1]]
        done = span_end
    window = "".join(parts) + flat[done:end]
    return ("…" if start > 0 else "") + window + ("…" if end < len(flat) else "")


@lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...]) -> WordMatcher:
    """The matcher of a query's patterns, made once for the page's snippets (a search builds ten or
    more with the same patterns; making one sorts and compiles the alternation and checks each pattern)."""
    return WordMatcher(list(patterns))
