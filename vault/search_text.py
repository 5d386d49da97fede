"""The text that search parses: identifiers, paths, hosts and addresses cut into their words.

PostgreSQL's text-search parser keeps a file path, a dotted name, a host or an e-mail address as one
token: "src/worker/queue_runner.py", "django.db.utils.IntegrityError", "alice@example.com" are each a
single lexeme, so a search for "queue_runner.py", "IntegrityError" or "alice" did not find the memory
that holds them. Agents' memories are full of them (the file a bug was in, the exception to catch, who
to ask). So every text is parsed after `/`, `\\`, `@` and `:` become spaces, and so does a `.` between
two letters, digits or underscores (not a full stop before a space): "src worker queue_runner py",
"django db utils IntegrityError", "alice example com". A query is parsed the same way
(search/query.py), so "queue_runner.py" is the phrase queue <-> runner <-> py and finds the path
wherever it sits in a longer one.

One rule, written twice and tested to agree: `memory_search_text(text)`, an IMMUTABLE SQL function that
the stored search vectors' generated columns and triggers call, and `search_text` below for queries.
The rule's classes are ASCII on purpose: PostgreSQL's `[[:alnum:]]` depends on the database's locale,
Python's `\\w` does not, and identifiers and paths are ASCII.

Chinese, Japanese and Korean are not written with spaces between words, and the parser keeps a run of
their characters as one token: "我们决定使用Redis作为会话缓存" was a single lexeme, so neither "会话缓存"
(session cache) nor even "Redis" found it. So a run of such characters becomes its overlapping pairs
("作为会话缓存": "作为 为会 会话 话缓 缓存"), set apart from the letters next to it, as search engines index
these scripts (Lucene's CJK bigrams): a query's run is cut the same way (search/query.py), so "会话缓存"
finds the pairs 会话, 话缓 and 缓存, and a quoted one finds them in that order. A character standing
alone stays one; a one-character query finds only such characters, not the pairs.

Names written as one word ("getUserById", "500ms") are cut into their parts by a second pair,
`memory_identifier_parts` and `identifier_parts`, below.
"""

import re

FUNCTION_NAME = "memory_search_text"

_PATTERN = r"[/\\@:]|(?<=[A-Za-z0-9_])\.(?=[A-Za-z0-9_])"
_SEPARATORS = re.compile(_PATTERN)

# Han (with its extensions and compatibility forms), the iteration marks, Hiragana, Katakana (with
# its half-width forms) and Hangul: code-point ranges, so PostgreSQL's regular expressions read them
# alike whatever the database's locale.
CJK_RANGES = (
    (0x1100, 0x11FF),
    (0x3005, 0x3007),
    (0x3040, 0x309F),
    (0x30A0, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)
CJK_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK_RANGES)
_CJK = re.compile(f"[{CJK_CLASS}]")
_CJK_RUNS = re.compile(f"[{CJK_CLASS}]+|[^{CJK_CLASS}]+")
CJK_FUNCTION_NAME = "memory_cjk_pairs"

# standard_conforming_strings is on (PostgreSQL's default since 9.1): backslashes in '...' are literal.
# memory_search_text is not STRICT, so that PostgreSQL inlines it into the generated columns (a NULL
# text gives NULL all the same); the pairs' function runs only for a text that holds such a character.
# An ASCII text (as many bytes as characters) skips the character-class test: about 0.5 us a row of
# 230 characters instead of 3.5 (docs/benchmarks.md), beside the 120-150 us of parsing it.
FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {CJK_FUNCTION_NAME}(txt text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
SELECT coalesce(string_agg(
    CASE WHEN length(r.run[1]) > 1 AND r.run[1] ~ '^[{CJK_CLASS}]' THEN (
        SELECT string_agg(substr(r.run[1], i, 2), ' ' ORDER BY i)
        FROM generate_series(1, length(r.run[1]) - 1) AS i
    ) ELSE r.run[1] END,
    ' ' ORDER BY r.n), '')
FROM regexp_matches(txt, '[{CJK_CLASS}]+|[^{CJK_CLASS}]+', 'g') WITH ORDINALITY AS r(run, n)
$$;
CREATE OR REPLACE FUNCTION {FUNCTION_NAME}(txt text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN octet_length(txt) > length(txt) AND txt ~ '[{CJK_CLASS}]'
    THEN {CJK_FUNCTION_NAME}(regexp_replace(txt, '{_PATTERN}', ' ', 'g'))
    ELSE regexp_replace(txt, '{_PATTERN}', ' ', 'g') END $$;
"""


def has_cjk(text: str) -> bool:
    """Whether `text` holds a Chinese, Japanese or Korean character (CJK_RANGES)."""
    return _CJK.search(text) is not None


def cjk_pairs(text: str) -> list[str]:
    """A run of CJK characters as search stores it: its overlapping pairs, or the one character."""
    return [text[i : i + 2] for i in range(len(text) - 1)] or [text]


def cjk_runs(text: str) -> list[tuple[str, bool]]:
    """`text` cut into its runs of CJK characters and the runs between them, each with whether it is
    one of CJK characters."""
    return [(run, _CJK.match(run) is not None) for run in _CJK_RUNS.findall(text)]


def search_text(text: str) -> str:
    """`text` with the separators inside identifiers, paths, hosts and addresses made spaces, and its
    runs of CJK characters written as their pairs, as `memory_search_text` does in the database."""
    text = _SEPARATORS.sub(" ", text)
    if not has_cjk(text):
        return text
    return " ".join(" ".join(cjk_pairs(run)) if cjk else run for run, cjk in cjk_runs(text))


# Identifiers written as one word: "getUserById", "HTTPServerError", "python3", "500ms", "v2.4.1".
# Their parts are searched too, at a lower weight than the text's own words (vault/models.py), so that
# "user by id" finds getUserById, "2.4.1" finds v2.4.1 and "500 ms" finds 500ms, while a search for
# "java" still ranks a memory about Java above one that only mentions JavaScript. Cut: a lower-case
# letter before a capital, a capital before a capitalised word of three letters or more ("HTTP
# Server"), and a run of letters and digits that is letters then digits or digits then letters
# ("sha 256", "500 ms"; hex digests and ids, which alternate more, are left whole).
PARTS_FUNCTION_NAME = "memory_identifier_parts"

_SPACE = r" \t\n\r\f\v"
_TRANSITION = r"[a-z][A-Z]|[A-Z][A-Z][a-z]{2}|[A-Za-z][0-9]|[0-9][A-Za-z]"
_CHUNK_PATTERN = rf"[^{_SPACE}]*(?:{_TRANSITION})[^{_SPACE}]*"
_LETTERS_DIGITS = r"(?<![A-Za-z0-9])([A-Za-z]+)(?=[0-9]+(?![A-Za-z0-9]))"
_DIGITS_LETTERS = r"(?<![A-Za-z0-9])([0-9]+)(?=[A-Za-z]+(?![A-Za-z0-9]))"
_CASE = r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]{2})"

# (pattern, replacement), applied in this order, in SQL and in Python.
_RULES = [(_LETTERS_DIGITS, r"\1 "), (_DIGITS_LETTERS, r"\1 "), (_CASE, " ")]
_CHUNKS = re.compile(_CHUNK_PATTERN)
_SPLITS = [(re.compile(pattern), replacement) for pattern, replacement in _RULES]


def _split_sql(expression: str) -> str:
    for pattern, replacement in _RULES:
        expression = f"regexp_replace({expression}, '{pattern}', '{replacement}', 'g')"
    return expression


# Two functions: the cut itself, and the one the vectors call, which runs it only for a text that holds
# a letter-case or letter-digit change. That test is one regular-expression match, and PostgreSQL inlines
# the function (one SQL expression, not STRICT), so most texts, which hold none, never pay for calling
# the cut (14 us a message, twice a message for its two languages: measured, docs/benchmarks.md).
PARTS_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {PARTS_FUNCTION_NAME}_cut(txt text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
SELECT coalesce(string_agg(s.split, ' ' ORDER BY s.n), '')
FROM (
    SELECT {_split_sql("m.chunk[1]")} AS split, m.chunk[1] AS chunk, m.n
    FROM regexp_matches(txt, '({_CHUNK_PATTERN})', 'g') WITH ORDINALITY AS m(chunk, n)
) s
WHERE s.split <> s.chunk
$$;
CREATE OR REPLACE FUNCTION {PARTS_FUNCTION_NAME}(txt text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN txt ~ '{_TRANSITION}' THEN {PARTS_FUNCTION_NAME}_cut(txt) ELSE '' END $$;
"""


def split_identifiers(text: str) -> str:
    """`text` with every identifier cut into its parts ("getUserById" -> "get User By Id")."""
    for pattern, replacement in _SPLITS:
        text = pattern.sub(replacement, text)
    return text


def identifier_parts(text: str) -> str:
    """The cut identifiers of `text`, each with the rest of its word (the space-delimited chunk), in
    order: what `memory_identifier_parts` gives the stored vectors. "" when there are none."""
    chunks = (match.group(0) for match in _CHUNKS.finditer(text))
    return " ".join(split for chunk in chunks if (split := split_identifiers(chunk)) != chunk)
