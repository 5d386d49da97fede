"""HTML for the curator pages: sanitised markdown, task checkboxes, version diffs, search highlights.

Content is written by agents and imported from elsewhere, so nothing in it may reach the page as
HTML: raw HTML in markdown is escaped by the parser (its HTML processors are removed) and the result
is cleaned again by nh3 with a short allow-list, so neither script nor event handlers nor
javascript: links survive.
"""

import difflib
import re
from dataclasses import dataclass

import markdown
import nh3
from django.utils.html import escape, format_html, linebreaks
from django.utils.safestring import SafeString, mark_safe

from vault.search_text import UNSPACED_CLASS, WordMatcher, cjk_pairs, cjk_runs
from vault.text import cluster_start, task_lines, task_text

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "td": {"align"}, "th": {"align"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}
# A task item as Python-Markdown renders it (tight and loose lists), after sanitising.
TASK_HTML_RE = re.compile(r"<li>(<p>)?\[( |x|X)\]\s")


def _markdown() -> markdown.Markdown:
    md = markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists"], output_format="html")
    # Without these two processors raw HTML in the content is escaped instead of passed through.
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    return md


# Python-Markdown's link and image patterns look ahead from every "[" for its "]", and from every "](" for
# its ")": a bracket or link target left open makes each of them read the rest of the text. Measured
# (render "[" * 4000: 2.6 s; "[a](" * 2000: 0.9 s; "[^" * 3000: 2.5 s) the time is about 1.4e-7 s x
# open brackets x characters, so a text whose open brackets times its length pass this is shown as
# plain text (at most about half a second of parsing). Links people write close their brackets: 300
# links in 25 KB render in 27 ms.
OPEN_BRACKETS_BUDGET = 4_000_000
NESTING_ALLOWED = 8


def _open_brackets(text: str) -> int:
    """How many "[" and link targets are left open (or nested deeper than NESTING_ALLOWED): linear."""
    depth = deepest = 0
    for char in text:
        if char == "[":
            depth += 1
            deepest = max(deepest, depth)
        elif char == "]" and depth:
            depth -= 1
    open_targets = max(0, text.count("](") - text.count(")"))
    return depth + max(0, deepest - NESTING_ALLOWED) + open_targets


# Memory's own headings ("# Memory", "## Rollout") sit on a page under its h1 and the h2 of the entry or
# file that holds them: they are shown two levels down (h1 as h3, ...; h4 and below as h6), so that a
# screen reader's list of headings keeps the page's title first and its sections in order.
HEADING_SHIFT = 2
_HEADING_TAG_RE = re.compile(r"<(/?)h([1-6])>")


def _headings_lowered(html: str) -> str:
    return _HEADING_TAG_RE.sub(lambda m: f"<{m.group(1)}h{min(6, int(m.group(2)) + HEADING_SHIFT)}>", html)


def markdown_html(text: str) -> str:
    """Sanitised HTML for markdown text (a plain str: callers mark it safe after adding their own).

    Two kinds of text are shown as escaped plain text instead, since anyone with a write token can
    store them and every curator page showing them (the agent's vault, the entry, the review queue,
    search results) failed or hung: nesting Python-Markdown's recursive block parser cannot follow (a
    few KB of "+ + + …", a list in a list…, raised RecursionError: a 500), and brackets left open that
    its link patterns take quadratic time over (OPEN_BRACKETS_BUDGET)."""
    if "[" in text and _open_brackets(text) * len(text) > OPEN_BRACKETS_BUDGET:
        return linebreaks(text, autoescape=True)
    try:
        html = _markdown().convert(text)
    except RecursionError:
        return linebreaks(text, autoescape=True)
    return _headings_lowered(
        nh3.clean(
            html,
            tags=ALLOWED_TAGS,
            attributes=ALLOWED_ATTRIBUTES,
            url_schemes=URL_SCHEMES,
            link_rel="noopener noreferrer nofollow",
        )
    )


def markdown_with_tasks(text: str, *, toggle_url: str | None, csrf_token: str | None) -> SafeString:
    """Render markdown; task items get a checkbox, which is a small form when toggle_url is given.

    Checkboxes are matched to source lines in order. If the counts differ (a task inside some
    construct the scan does not know), the boxes are shown but cannot be ticked rather than risk
    ticking the wrong line.
    """
    html = markdown_html(text)
    tasks = task_lines(text)
    found = TASK_HTML_RE.findall(html)
    tickable = toggle_url is not None and csrf_token is not None and len(found) == len(tasks)
    boxes = iter(tasks)
    source_lines = text.split("\n")

    def replace(match: re.Match) -> str:
        done = match.group(2) != " "
        opening = '<li class="task">' + (match.group(1) or "")
        if not tickable:
            mark = "☑" if done else "☐"
            return opening + format_html('<span class="task-box" aria-hidden="true">{}</span> ', mark)
        line, _ = next(boxes)
        label = "Mark as not done" if done else "Mark as done"
        return opening + format_html(
            '<form class="task-toggle" method="post" action="{url}" hx-post="{url}" '
            'hx-target="closest .entry" hx-swap="outerHTML">'
            '<input type="hidden" name="csrfmiddlewaretoken" value="{csrf}">'
            '<input type="hidden" name="line" value="{line}">'
            '<input type="hidden" name="task" value="{task}">'
            '<input type="hidden" name="done" value="{want}">'
            '<button type="submit" class="task-box" role="checkbox" aria-checked="{checked}" '
            'title="{label}" aria-label="{label}">{mark}</button></form> ',
            url=toggle_url,
            csrf=csrf_token,
            line=line,
            task=task_text(source_lines[line]),
            want="0" if done else "1",
            checked="true" if done else "false",
            label=label,
            mark="☑" if done else "☐",
        )

    return mark_safe(TASK_HTML_RE.sub(replace, html))  # noqa: S308 - sanitised above, our markup added


def diff_html(before: str, after: str, *, before_label: str, after_label: str) -> SafeString:
    """A side-by-side diff table. difflib escapes &, < and > in every line it prints."""
    table = difflib.HtmlDiff(wrapcolumn=70).make_table(
        before.splitlines(),
        after.splitlines(),
        fromdesc=escape(before_label),
        todesc=escape(after_label),
        context=True,
        numlines=2,
    )
    return mark_safe(table)  # noqa: S308 - difflib escapes the content lines; labels escaped above


# A word of the query: letters, or a run of Thai, Lao, Myanmar or Khmer with its vowel and tone marks
# (not `\w`), as search reads it (search/query_syntax.py).
_QUERY_WORD_RE = re.compile(rf"[\w{UNSPACED_CLASS}]+")


def _query_terms(query: str) -> tuple[list[str], list[str]]:
    """The query's words to mark: its other words, and its runs of CJK characters as the pairs search
    matches them by (vault/search_text.py)."""
    words, pairs = [], []
    for word in _QUERY_WORD_RE.findall(query.lower()):
        for run, cjk in cjk_runs(word):
            if cjk:
                pairs += cjk_pairs(run)
            elif run not in {"or", "and", "not"}:
                words.append(run)
    return words, pairs


def _match_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Where the query's words are in `text`, in order, overlapping and touching spans merged: a word
    from its start (what follows it in the same word included), a CJK pair wherever it is."""
    words, pairs = _query_terms(query)
    spans = []
    if words:
        # Not after & or #: never inside an entity such as `&amp;` (the text is escaped already).
        spans += WordMatcher([re.escape(w) for w in words]).spans(text, not_after="&#")
    for pair in set(pairs):
        spans += [(m.start(), m.start() + len(pair)) for m in re.finditer(f"(?={re.escape(pair)})", text)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _marked(text: str, query: str) -> str:
    """`text` (escaped already) with the query's words in <mark>."""
    out, done = [], 0
    for start, end in _match_spans(text, query):
        out += [text[done:start], "<mark>", text[start:end], "</mark>"]
        done = end
    return "".join(out) + text[done:]


def _first_match(text: str, query: str) -> tuple[int, int]:
    spans = _match_spans(text, query)
    return spans[0] if spans else (0, 0)


def highlight(text: str, query: str, *, length: int = 240) -> SafeString:
    """An escaped excerpt of text around the first match of the query's words, matches in <mark>."""
    first, _ = _first_match(text, query)
    start = cluster_start(text, first - length // 3)
    end = cluster_start(text, start + length)
    html = _marked(escape(text[start:end]), query)
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text) else ""
    return mark_safe(prefix + html + suffix)  # noqa: S308 - built from escaped text


# Outside tags and entities: marks go into text only, never into `<a href=…>` or `&amp;`.
_TAG_RE = re.compile(r"(<[^>]*>)")


def snippet_markdown(text: str, query: str, *, length: int = 240) -> SafeString:
    """An excerpt of markdown around the first match of the query's words, rendered as the entry
    pages render it (sanitised; task boxes shown, not tickable), matches in <mark>.

    The excerpt starts at the beginning of a line when one is near the match, so lists and
    headings keep their markup, and ends at a space, so no word is cut; in text without spaces near
    the match (Chinese, a long address) it is cut between characters, the match kept inside.
    """
    first, first_end = _first_match(text, query)
    line_start = text.rfind("\n", 0, first) + 1
    if first - line_start <= length // 2:
        start = line_start
        while start > 0:  # earlier lines too, while they leave room for the match
            earlier = text.rfind("\n", 0, start - 1) + 1
            if first - earlier > length // 2:
                break
            start = earlier
    else:
        space = text.rfind(" ", first - length // 2, first - length // 3)
        start = space + 1 if space != -1 else cluster_start(text, first - length // 3)
    end = start + length
    if end < len(text):
        after = max(start, first_end)
        space = max(text.rfind(" ", after, end), text.rfind("\n", after, end))
        end = space if space > start else cluster_start(text, end)
    excerpt = text[start:end].strip()
    if start > line_start:
        excerpt = "…" + excerpt
    if end < len(text):
        excerpt += " …"
    html = str(markdown_with_tasks(excerpt, toggle_url=None, csrf_token=None))
    html = "".join(part if part.startswith("<") else _marked(part, query) for part in _TAG_RE.split(html))
    return mark_safe(html)  # noqa: S308 - sanitised markdown, our <mark> tags added in text only


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    day: object
    count: int


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    width: int
    height: int
    top: int
    total: int
    first_day: object
    last_day: object


def bar_chart(points: list[tuple], *, width: int = 600, height: int = 140) -> Chart:
    """Geometry for a server-rendered SVG bar chart of (day, count) points; the tallest bar fills it."""
    top = max((count for _, count in points), default=0)
    slot = width / max(len(points), 1)
    bars = []
    for index, (day, count) in enumerate(points):
        bar_height = 0.0 if top == 0 else round((height - 4) * count / top, 1)
        if count and bar_height < 2:
            bar_height = 2.0
        bars.append(
            Bar(
                x=round(index * slot + 1, 1),
                y=round(height - bar_height, 1),
                width=round(max(slot - 2, 1), 1),
                height=bar_height,
                day=day,
                count=count,
            )
        )
    return Chart(
        bars=bars,
        width=width,
        height=height,
        top=top,
        total=sum(count for _, count in points),
        first_day=points[0][0] if points else None,
        last_day=points[-1][0] if points else None,
    )


def version_diffs(current, versions, *, total: int, describe=lambda version: "", fields=()) -> list[dict]:
    """Each version (newest first) diffed against the state that replaced it: the next newer version, or
    `current` (the entry or file itself; None for a file that is gone). Versions are numbered per object,
    oldest 1 (`total` is how many there are; their ids are global and mean nothing here); `describe`
    adds to a version's label, and `fields` are compared besides the content.
    Returns [{"version", "number", "diff", "changed", "fields_changed"}]."""
    history, newer, newer_label = [], current, "current"
    for index, version in enumerate(versions):
        number = total - index
        label = f"version {number}{describe(version)}"
        newer_content = newer.content if newer is not None else ""
        history.append(
            {
                "version": version,
                "number": number,
                "diff": diff_html(
                    version.content, newer_content, before_label=label, after_label=newer_label
                ),
                "changed": version.content != newer_content,
                "fields_changed": [f for f in fields if getattr(version, f) != getattr(newer, f, None)],
            }
        )
        newer, newer_label = version, label
    return history
