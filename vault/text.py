"""Small text rules shared by every write path: hashtags, tag normalisation, content checks."""

import re
import unicodedata

from django.conf import settings

from memoryproject.errors import InvalidInput, TooLarge
from vault.trust import text_as_written

# takes tags from /#(\w+)/g. The look-behind keeps "C#", "page#anchor" and "&#39;" out,
# and markdown headings ("## Title") never match because a space follows the hashes.
TAG_MAX_CHARS = 64  # tag_valid's limit
HASHTAG_START_RE = re.compile(r"(?<![\w&#/])#(?=\w)")


def _tag_char(char: str) -> bool:
    """A letter, digit or '_' (a regular expression's \\w), or a combining mark: the vowel signs of
    हिंदी and ไทย, an accent typed apart from its letter, belong to the word they follow."""
    return char.isalnum() or char == "_" or unicodedata.category(char)[0] == "M"


def tag_valid(tag: str) -> bool:
    """1-TAG_MAX_CHARS characters: letters, digits, '_' and combining marks, '.' or '-', starting
    with a letter, digit or '_'."""
    return (
        0 < len(tag) <= TAG_MAX_CHARS
        and (tag[0].isalnum() or tag[0] == "_")
        and all(char in ".-" or _tag_char(char) for char in tag)
    )


def hashtags_find(content: str) -> list[str]:
    """Tags written as #hashtags in the content, normalised (lower case, canonically composed), in
    order of first appearance."""
    if not content.isascii():
        content = unicodedata.normalize("NFC", content)
    found = []
    for match in HASHTAG_START_RE.finditer(content):
        end = match.end()
        while end < len(content) and (content[end] == "-" or _tag_char(content[end])):
            end += 1
        tag = content[match.end() : end].rstrip("-").lower()[:TAG_MAX_CHARS]
        if tag and not tag.isdigit() and tag not in found:
            found.append(tag)
    return found


# Most tags a search or a forget filters by: a filter is not stored, so MEMORY_MAX_TAGS does not bound
# it, but without a bound a query string of a thousand long tags cost the database a second and more.
TAG_FILTER_MAX = 64


def _tag_check(raw, field: str, max_chars: int | None = None) -> str:
    """One tag as it is stored: '#' and surrounding whitespace stripped, lower-cased ('' when blank);
    InvalidInput naming `field` when it breaks tag_valid, or when it is sent longer than `max_chars`."""
    if not isinstance(raw, str):
        raise InvalidInput(f"{field} must be strings", [{"loc": [field], "msg": "not a string"}])
    tag = unicodedata.normalize("NFC", raw.strip().lstrip("#").lower())
    if (tag and not tag_valid(tag)) or (max_chars is not None and len(raw) > max_chars):
        shown = repr(
            raw if len(raw) <= 2 * TAG_MAX_CHARS else text_clip(raw, 2 * TAG_MAX_CHARS, flatten=False)
        )
        raise InvalidInput(
            f"Invalid tag {shown}: use 1-{TAG_MAX_CHARS} letters, digits, '_', '.' or '-', "
            "starting with a letter or digit.",
            [{"loc": [field], "msg": f"invalid tag {shown}"}],
        )
    return tag


def tags_normalise(tags: list[str] | None, content: str = "") -> list[str]:
    """Explicit tags plus the content's hashtags: lower-cased, '#' stripped, deduplicated, validated."""
    result: list[str] = []
    for raw in tags or []:
        tag = _tag_check(raw, "tags")
        if tag and tag not in result:
            result.append(tag)
    for tag in hashtags_find(content):
        if tag not in result:
            result.append(tag)
    if len(result) > settings.MEMORY_MAX_TAGS:
        raise InvalidInput(
            f"Too many tags ({len(result)}); the limit is {settings.MEMORY_MAX_TAGS} (MEMORY_MAX_TAGS).",
            [{"loc": ["tags"], "msg": "too many tags"}],
        )
    return result


def tags_filter_check(tags: list[str] | None, *, field: str = "tags", blank_ok: bool = True) -> list[str]:
    """The tags a search or a forget filters by, as tags_normalise stores them (so that they can
    match): '#' stripped, lower-cased, deduplicated. More than TAG_FILTER_MAX, one that no entry can
    carry (tag_valid), or one sent longer than TAG_MAX_CHARS (with its '#': the limit the
    schemas state) is InvalidInput naming `field`. A blank tag is skipped, or refused when not
    `blank_ok` (a forget, where dropping it would widen what is deleted)."""
    tags = tags or []
    if len(tags) > TAG_FILTER_MAX:
        raise InvalidInput(
            f"Too many tags ({len(tags)}) in {field}; the limit is {TAG_FILTER_MAX}.",
            [{"loc": [field], "msg": "too many tags"}],
        )
    result: list[str] = []
    for raw in tags:
        tag = _tag_check(raw, field, TAG_MAX_CHARS)
        if not tag and not blank_ok:
            raise InvalidInput(f"{field} must not hold a blank tag", [{"loc": [field], "msg": "blank tag"}])
        if tag and tag not in result:
            result.append(tag)
    return result


def text_check(
    value: str,
    *,
    field: str = "content",
    allow_empty: bool = False,
    max_bytes: int | None = None,
    limit_setting: str = "MEMORY_MAX_ENTRY_BYTES",
) -> str:
    """Reject text PostgreSQL cannot store or that is empty or over the size limit."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", [{"loc": [field], "msg": "not a string"}])
    if "\x00" in value:
        raise InvalidInput(
            f"{field} must not contain NUL (\\u0000) characters",
            [{"loc": [field], "msg": "contains NUL characters"}],
        )
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{field} must not be empty", [{"loc": [field], "msg": "empty"}])
    limit = settings.MEMORY_MAX_ENTRY_BYTES if max_bytes is None else max_bytes
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > limit:
        raise TooLarge(
            f"{field} is {size} bytes; the limit is {limit} bytes ({limit_setting}).",
            [{"loc": [field], "msg": "too large"}],
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            f"{field} contains invalid Unicode (lone surrogates)",
            [{"loc": [field], "msg": "invalid unicode"}],
        ) from None
    return value


# text_check's rules as JSON Schema patterns, so that the OpenAPI document states them (the check stays
# the authority, with its messages). No look-ahead, so that every validator and test-data generator can
# use them; the whitespace is spelled out because \s differs between Python (what str.strip() removes)
# and JavaScript (which adds U+FEFF and leaves out U+001C-U+001F and U+0085).
WHITESPACE_CLASS = r"\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NO_NUL_PATTERN = r"^[^\x00]*$"
NOT_BLANK_PATTERN = rf"^[{WHITESPACE_CLASS}]*[^\x00{WHITESPACE_CLASS}][^\x00]*$"


def token_estimate(text: str) -> int:
    """ceil(UTF-8 bytes / 4): the usual four characters a token for English, and for other scripts a
    count that grows with what tokenizers spend on them (a CJK character, 3 bytes, is about a token; at
    four characters a token a budget held three or four times its size of CJK text). The one place to
    plug in a real tokenizer."""
    if text.isascii():
        return token_estimate_of_bytes(len(text))
    return token_estimate_of_bytes(len(text.encode("utf-8", errors="surrogatepass")))


def token_estimate_of_bytes(size: int) -> int:
    """token_estimate of a text of `size` UTF-8 bytes (octet_length in SQL): a count from stored sizes
    without loading the texts."""
    return -(-size // 4)


def text_bytes(text: str) -> int:
    """The UTF-8 size of `text`, the unit token_estimate counts in."""
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="surrogatepass"))


def text_prefix_bytes(text: str, max_bytes: int) -> str:
    """The longest start of `text` that is at most `max_bytes` of UTF-8 and ends where a character a
    reader sees ends (cluster_start): never half a code point, nor a flag's half, an emoji without its
    joined part or skin tone, a letter without its accent."""
    if text.isascii():  # one byte a character, and no character of several
        return text if len(text) <= max_bytes else text[: max(max_bytes, 0)]
    encoded = text.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= max_bytes:
        return text
    end = max(max_bytes, 0)
    while end and encoded[end] & 0xC0 == 0x80:  # a continuation byte: the cut is inside a code point
        end -= 1
    return text[: cluster_start(text, len(encoded[:end].decode("utf-8", errors="surrogatepass")))]


def text_prefix_chars(text: str, max_chars: int) -> str:
    """The longest start of `text` that is at most `max_chars` characters (a column's length) and ends
    where a character a reader sees ends (cluster_start), as text_prefix_bytes for bytes."""
    return text if len(text) <= max_chars else text[: cluster_start(text, max(max_chars, 0))]


# Markdown task list items: "- [ ] do it", "* [x] done", "1. [ ] first". Fenced code is skipped.
TASK_LINE_RE = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)\[( |x|X)\](\s)")
FENCE_RE = re.compile(r"^\s*(```|~~~)")


def lines_with_code(content: str) -> list[tuple[str, bool]]:
    """Each line of markdown `content` and whether it is code: a fence line or a line inside a fenced
    block."""
    found = []
    fence = None
    for line in content.splitlines():
        marker = FENCE_RE.match(line)
        if marker:
            fence = None if fence == marker.group(1) else (fence or marker.group(1))
        found.append((line, bool(marker) or fence is not None))
    return found


def task_lines(content: str) -> list[tuple[int, bool]]:
    """(line number, done) for each markdown task item outside fenced code, in order."""
    found = []
    fence = None
    for number, line in enumerate(content.split("\n")):
        marker = FENCE_RE.match(line)
        if marker:
            fence = None if fence == marker.group(1) else (fence or marker.group(1))
            continue
        if fence is None:
            match = TASK_LINE_RE.match(line)
            if match:
                found.append((number, match.group(2) != " "))
    return found


def task_text(content_line: str) -> str:
    """What a task line says, without its bullet and box, its whitespace runs as single spaces: how a
    page names the task it ticks (a browser sends a line break back as CRLF, whatever was stored)."""
    match = TASK_LINE_RE.match(content_line)
    return " ".join(content_line[match.end() :].split()) if match else ""


def task_line_set(content: str, line: int, done: bool, task: str | None = None) -> str:
    """The content with the task on `line` set to done/not done; InvalidInput if it is no task line,
    or, with `task` (the task's text as the page showed it), when the line now holds another task: a
    line added above it since the page was loaded moved the task, and its line number alone ticked
    the one now there."""
    lines = content.split("\n")
    if line not in dict(task_lines(content)):
        raise InvalidInput(
            f"Line {line + 1} is not a task any more; reload the entry and try again.",
            [{"loc": ["line"], "msg": "not a task line"}],
        )
    if task is not None and task_text(lines[line]) != " ".join(task.split()):
        raise InvalidInput(
            f"Line {line + 1} is now another task than the one ticked (the entry changed since the page "
            "was loaded); reload the entry and try again.",
            [{"loc": ["line"], "msg": "another task"}],
        )
    lines[line] = TASK_LINE_RE.sub(
        lambda m: f"{m.group(1)}[{'x' if done else ' '}]{m.group(3)}", lines[line], count=1
    )
    return "\n".join(lines)


def cluster_start(text: str, index: int) -> int:
    """`index`, moved back to the start of the character a reader sees: never between a letter and its
    combining accent, an emoji and its modifier or joiner, the two halves of a flag, or a subdivision
    flag (🏴 and its tag letters)."""
    index = max(0, min(index, len(text)))
    while 0 < index < len(text) and (
        unicodedata.combining(text[index])
        or unicodedata.category(text[index]) in ("Mn", "Me", "Mc")
        or text[index] in "\u200d\ufe0e\ufe0f"
        or text[index - 1] == "\u200d"
        or 0x1F3FB <= ord(text[index]) <= 0x1F3FF
        or 0xE0020 <= ord(text[index]) <= 0xE007F  # a subdivision flag's tags (🏴 and England's letters)
    ):
        index -= 1
    if 0 < index < len(text) and _REGIONAL.match(text[index]):  # flags: pairs counted from the run's start
        run_start = index
        while run_start > 0 and _REGIONAL.match(text[run_start - 1]):
            run_start -= 1
        index -= (index - run_start) % 2
    return index


_REGIONAL = re.compile("[\U0001f1e6-\U0001f1ff]")


ASCII_CUT = "..."


# Unicode's bidirectional embeddings, overrides and isolates: a name shown with one reads backwards
# (`a\u202egnp.md` is listed as `adm.png`).
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
CONTROL_CHARACTERS_RULE = "no control characters (newline, tab, escape, bidirectional overrides)"


def control_characters_in(value: str) -> bool:
    """Whether a name (a path, a session key) holds a control character (NUL aside: its own rule) or a
    bidirectional control, which a listing would show raw."""
    return any(unicodedata.category(ch) == "Cc" or ch in BIDI_CONTROLS for ch in value if ch != "\x00")


def clipped(value, max_chars: int = 80) -> str:
    """`value` as an error message shows it, cut to `max_chars` characters (marked "…") when longer. An
    error names what the client sent, never all of it: a path, agent or session key of a megabyte came
    back whole in its 404."""
    value = str(value)
    if len(value) > max_chars:
        value = value[: cluster_start(value, max_chars - 1)] + "…"
    return value


def echoed(value, max_chars: int = 80) -> str:
    """`value` quoted in an error message: the repr of `clipped`."""
    return repr(clipped(value, max_chars))


def text_clip(
    text: str, max_chars: int, *, flatten: bool = True, mark: str = "…", at_word: bool = False
) -> str:
    """`text` cut to at most `max_chars` characters, the cut marked with `mark`; with `flatten` its
    whitespace runs become single spaces (one line), otherwise it is only stripped; with `at_word` the
    cut falls between words. The one way text is shortened anywhere in the product."""
    text = " ".join(text.split()) if flatten else text.strip()
    if len(text) <= max_chars:
        return text
    cut = text[: cluster_start(text, max_chars - len(mark))]
    if at_word and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip() + mark


APOSTROPHES = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u02bb": "'", "`": "'", "\u00b4": "'"}
)


def normalise_fact(text: str) -> str:
    """Reduce a fact to a comparison key, so "My name is Ana." and "my  name is ana" count as one fact.

    Durable facts are appended to long-term memory; this is what duplicate detection compares. Marks
    are kept, as the vault's exact duplicates keep them (trust.text_as_written): "vou às 10" and "vou as
    10", "pôde" (could) and "pode" (can) are two facts; a negation typed without its accent ("nao") is
    still "não".
    """
    collapsed = " ".join(text_as_written(text.translate(APOSTROPHES)).split())
    end = len(collapsed)
    while end and (unicodedata.category(collapsed[end - 1]).startswith("P") or collapsed[end - 1].isspace()):
        end -= 1
    return collapsed[:end]
