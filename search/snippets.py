"""The snippet a search result shows: the text around the first match of a query word, matches marked."""

import re

_SNIPPET_BEFORE = 30
SNIPPET_CHARS = 120


def snippet_build(text: str, patterns: list[str], *, mark: tuple[str, str] = ("**", "**")) -> str:
    """About 120 characters around the first match of a query word, matches marked."""
    flat = " ".join(text.split())
    regex = None
    if patterns:
        alternation = "|".join(sorted(set(patterns), key=len, reverse=True))
        regex = re.compile(rf"(?<!\w)(?:{alternation})\w*", re.IGNORECASE)
    first = regex.search(flat) if regex else None
    start = max(0, first.start() - _SNIPPET_BEFORE) if first else 0
    if start > 0:
        space = flat.find(" ", start, first.start())
        start = space + 1 if space != -1 else start
    end = min(len(flat), start + SNIPPET_CHARS)
    if end < len(flat):
        space = flat.rfind(" ", start + SNIPPET_CHARS // 2, end)
        end = space if space != -1 else end
    window = flat[start:end]
    if regex:
        window = regex.sub(lambda m: f"{mark[0]}{m.group(0)}{mark[1]}", window)
    return ("…" if start > 0 else "") + window + ("…" if end < len(flat) else "")
