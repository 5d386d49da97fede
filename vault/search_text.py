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
alone stays one. The last character of each longer run is also stored, after the whole text: a
one-character query (猫, 水) asks for the pairs that start with it and for that character, which
between them are every place it stands ("一只猫": 一只 只猫, then 猫). Storing every character as well
(Lucene's CJK analyser with unigrams) found the same rows, at 83% more vector bytes and 63% more GIN
index for CJK rows against 13% and 11% (30,000 memories in Chinese, Japanese and Korean; the pairs'
prefix alone missed 37 of 468 characters, those only ever last in their run).

Thai, Lao, Myanmar and Khmer are not written with spaces between words either, and the parser kept a
clause as one token: their runs are cut into pairs the same way (vowel and tone marks, which are not
Python word characters, inside them), without single characters, which in these scripts are sounds.

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
# Of which Hangul (Korean, written with spaces between words).
HANGUL_RANGES = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF))
# Thai, Lao, Myanmar and Khmer (with their extensions), combining marks included: written without
# spaces between words like CJK, and a run of them a single token of the parser, so cut into pairs
# too. Not into single characters as well: a letter of these scripts is a sound, not a word.
UNSPACED_RANGES = (
    (0x0E00, 0x0E7F),
    (0x0E80, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x19E0, 0x19FF),
    (0xA9E0, 0xA9FF),
    (0xAA60, 0xAA7F),
)
UNSPACED_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in UNSPACED_RANGES)
PAIRED_CLASS = CJK_CLASS + UNSPACED_CLASS
_CJK = re.compile(f"[{CJK_CLASS}]")
_PAIRED = re.compile(f"[{PAIRED_CLASS}]")
_RUNS_PATTERN = f"[{CJK_CLASS}]+|[{UNSPACED_CLASS}]+|[^{PAIRED_CLASS}]+"
_RUNS = re.compile(_RUNS_PATTERN)
# A letter or digit that is not of a script written without spaces (CJK, Thai, Lao, Myanmar, Khmer; a
# regular expression's class): where a word of a text starts and ends when it is matched in Python
# (search snippets and highlights), a pair of those scripts matching inside its run.
NON_CJK_WORD_CHAR = f"[^\\W{PAIRED_CLASS}]"
# Compiled once: a class this large takes milliseconds to compile (8 ms with IGNORECASE), so a pattern
# made per query never holds it; WordMatcher tests it with these instead.
_NON_CJK_WORD_CHAR = re.compile(NON_CJK_WORD_CHAR)
_NON_CJK_WORD_TAIL = re.compile(f"{NON_CJK_WORD_CHAR}*")


# A pattern of literal characters only (escaped or plain, as re.escape writes a query's words): each
# matches one character, so a match of the pattern is at most as long as the pattern.
_LITERAL = re.compile(r"(?:\\.|[^\\.^$*+?{}\[\]|()])*", re.DOTALL)


class WordMatcher:
    """Where a query's patterns (regular expressions, case ignored) match a text as words: from a word's
    start (no NON_CJK_WORD_CHAR before it) and running on over the word's other letters, or, with
    `whole`, only where the word ends too; inside a run of CJK (Thai, Lao, Myanmar, Khmer) characters,
    anywhere. The same matches as `(?<!W)(?:patterns)W*`, without compiling W's class for each query."""

    def __init__(self, patterns: list[str], *, whole: bool = False):
        alternation = "|".join(sorted(set(patterns), key=len, reverse=True))
        self._regex = re.compile(f"(?=({alternation}))", re.IGNORECASE)
        self._whole = whole
        # How far past its start a match can reach, when every pattern is literal; else not known.
        literal = patterns and all(_LITERAL.fullmatch(pattern) for pattern in patterns)
        self._reach = max(map(len, patterns)) if literal else None

    def spans(self, text: str, *, not_after: str = "", pos: int = 0, before: int | None = None):
        """Each match's (start, end) from `pos` on, in order; they may overlap. `not_after`: characters
        a match may not follow either. `before`: only the matches starting before it; the text past it
        and the patterns' reach is not searched (a snippet's window in a long text: the whole rest of
        the text was searched for a match that would not be shown)."""
        endpos = len(text)
        if before is not None and self._reach is not None:
            endpos = min(endpos, before + self._reach)
        for match in self._regex.finditer(text, pos, endpos):
            start, end = match.start(), match.end(1)
            if before is not None and start >= before:
                return
            if start and (_NON_CJK_WORD_CHAR.match(text, start - 1) or text[start - 1] in not_after):
                continue
            if self._whole:
                if _NON_CJK_WORD_CHAR.match(text, end):
                    continue
            else:
                end = _NON_CJK_WORD_TAIL.match(text, end).end()
            if end > start:
                yield start, end

    def search(self, text: str) -> bool:
        """Whether the patterns match `text` anywhere as words."""
        return next(self.spans(text), None) is not None


CJK_FUNCTION_NAME = "memory_cjk_pairs"

# standard_conforming_strings is on (PostgreSQL's default since 9.1): backslashes in '...' are literal.
# memory_search_text is not STRICT, so that PostgreSQL inlines it into the generated columns (a NULL
# text gives NULL all the same); the pairs' function runs only for a text that holds such a character.
# An ASCII text (as many bytes as characters) skips the character-class test: about 0.5 us a row of
# 230 characters instead of 3.5 (docs/benchmarks.md), beside the 120-150 us of parsing it.
# The last character of each CJK run longer than one follows the whole text (where it cannot join a
# quoted phrase's pairs): a one-character query asks for it and for the pairs that start with it
# (search/query.py), and so finds every text holding that character.
FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {CJK_FUNCTION_NAME}(txt text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
SELECT coalesce(string_agg(
    CASE WHEN length(r.run[1]) > 1 AND r.run[1] ~ '^[{PAIRED_CLASS}]' THEN (
        SELECT string_agg(substr(r.run[1], i, 2), ' ' ORDER BY i)
        FROM generate_series(1, length(r.run[1]) - 1) AS i
    ) ELSE r.run[1] END,
    ' ' ORDER BY r.n), '') || coalesce(' ' || string_agg(
    CASE WHEN length(r.run[1]) > 1 AND r.run[1] ~ '^[{CJK_CLASS}]'
        THEN right(r.run[1], 1) END,
    ' ' ORDER BY r.n), '')
FROM regexp_matches(txt, '{_RUNS_PATTERN}', 'g') WITH ORDINALITY AS r(run, n)
$$;
CREATE OR REPLACE FUNCTION {FUNCTION_NAME}(txt text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN octet_length(txt) > length(txt) AND txt ~ '[{PAIRED_CLASS}]'
    THEN {CJK_FUNCTION_NAME}(regexp_replace(txt, '{_PATTERN}', ' ', 'g'))
    ELSE regexp_replace(txt, '{_PATTERN}', ' ', 'g') END $$;
"""


def has_cjk(text: str) -> bool:
    """Whether `text` holds a character of a script written without spaces (PAIRED_CLASS: CJK_RANGES
    and UNSPACED_RANGES), whose runs search cuts into pairs."""
    return _PAIRED.search(text) is not None


def cjk_pairs(text: str) -> list[str]:
    """A run of CJK (or Thai, Lao, Myanmar, Khmer) characters as search asks for it: its overlapping
    pairs, or the one character."""
    return [text[i : i + 2] for i in range(len(text) - 1)] or [text]


def cjk_runs(text: str) -> list[tuple[str, bool]]:
    """`text` cut into its runs of the characters of one script written without spaces (CJK, or Thai,
    Lao, Myanmar, Khmer) and the runs between them, each with whether it is one of the former."""
    return [(run, _PAIRED.match(run) is not None) for run in _RUNS.findall(text)]


def search_text(text: str) -> str:
    """`text` with the separators inside identifiers, paths, hosts and addresses made spaces, and its
    runs of CJK (Thai, Lao, Myanmar, Khmer) characters written as their pairs: how a query's word or
    phrase is parsed, in the positions `memory_search_text` gives stored text."""
    text = _SEPARATORS.sub(" ", text)
    if not has_cjk(text):
        return text
    return " ".join(" ".join(cjk_pairs(run)) if cjk else run for run, cjk in cjk_runs(text))


def stored_text(text: str) -> str:
    """What `memory_search_text` gives the stored vectors: `search_text`, then the last character of
    each CJK run longer than one."""
    cut = search_text(text)
    if not has_cjk(text):
        return cut
    runs = _RUNS.findall(_SEPARATORS.sub(" ", text))
    last = [run[-1] for run in runs if len(run) > 1 and _CJK.match(run)]
    return " ".join([cut, *last]) if last else cut


def cjk_character(text: str) -> bool:
    """Whether `text` is one CJK character: a query asking for it and for the pairs starting with it
    (stored_text)."""
    return len(text) == 1 and _CJK.match(text) is not None


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


def parts_cut_query(text: str) -> str:
    """The SELECT that cuts the identifiers of the non-null SQL text `text` (a column or variable) into
    their parts: the body of memory_identifier_parts_cut, and what the entry vector's PL/pgSQL function
    runs itself (vault/search_vectors.py)."""
    return f"""SELECT coalesce(string_agg(s.split, ' ' ORDER BY s.n), '')
FROM (
    SELECT {_split_sql("m.chunk[1]")} AS split, m.chunk[1] AS chunk, m.n
    FROM regexp_matches({text}, '({_CHUNK_PATTERN})', 'g') WITH ORDINALITY AS m(chunk, n)
) s
WHERE s.split <> s.chunk"""


# Whether a text holds an identifier to cut (the SQL regular expression memory_identifier_parts tests).
PARTS_TRANSITION = _TRANSITION

# Two functions: the cut itself, and the one the vectors call, which runs it only for a text that holds
# a letter-case or letter-digit change. That test is one regular-expression match, and PostgreSQL inlines
# the function (one SQL expression, not STRICT), so most texts, which hold none, never pay for calling
# the cut (14 us a message, twice a message for its two languages: measured, docs/benchmarks.md).
PARTS_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {PARTS_FUNCTION_NAME}_cut(txt text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
{parts_cut_query("txt")}
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
