"""The prefilter that lets redaction and the write-ahead scan skip a regex: the strings it reads from a
pattern must be necessary (every match holds one), or a secret or a fact would silently go unseen."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app import scan
from vault.redaction import BUILTIN_PATTERNS
from vault.regex_prefilter import haystack, required_strings, requires_digit


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (r"\bremember\s+this\b", ("remember",)),
        # Adjacent literals join; the longest string of a sequence wins.
        (r"ab\s+cdef", ("cdef",)),
        # An alternation needs one of its branches.
        (r"\b(?:password|pwd)\b", ("password", "pwd")),
        (r"x(?:foo|bar)+y", ("bar", "foo")),
        # A branch, a part or a repeat that may be empty needs nothing, so another part must decide.
        (r"(?:foo|\d+)", None),
        (r"(?:foo)?bar", ("bar",)),
        (r"(?:foo)*", None),
        (r"[a-z]+\d{4,}", None),
        # Matching ignores case, so the strings are lower case and compared with a lower-cased text.
        (r"(?i)AKIA[0-9A-Z]{16}", ("akia",)),
        # A class of a few literal characters, or an alternation of words, continues the run as
        # alternatives; a large class or a range ends it.
        (r"\b(?:sk|pk)[-_][A-Za-z0-9]{16,}", ("pk-", "pk_", "sk-", "sk_")),
        (r"(?i)\bn[ãa]o\s+", ("nao", "não")),
        (r"gh[pousr]_", ("gho_", "ghp_", "ghr_", "ghs_", "ghu_")),
        (r"ab[a-z]cd", ("ab",)),
        (r"x[abcdefg]yy", ("yy",)),
    ],
)
def test_required_strings(pattern, expected):
    assert required_strings(re.compile(pattern)) == expected


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (r"\d{4}-\d{2}", True),
        (r"[0-9]+", True),
        (r"(?:19|20)\d{2}", True),
        (r"x{0}\d", True),
        (r"(?:a\d|\db)", True),
        # A branch or a repeat that can do without a digit, a class that holds other characters, a
        # look-around (it consumes nothing): no requirement.
        (r"a|\d", False),
        (r"\d?x", False),
        (r"[\d.]+", False),
        (r"[^\d]", False),
        (r"(?!\d)x", False),
        (r"(?a)\d", False),  # ASCII-only \d: a Unicode digit test would not agree with it
    ],
)
def test_requires_digit(pattern, expected):
    assert requires_digit(re.compile(pattern)) is expected


def test_the_haystack_maps_what_ignorecase_matches_for_ascii_letters():
    # 'ſ' matches 's', 'ı' and 'İ' match 'i', the Kelvin sign matches 'k' under re.IGNORECASE.
    assert re.search(r"(?i)password", "pa\u017f\u017fword")
    assert haystack("Pa\u017f\u017fword \u0130\u0131 \u212aey") == "password ii key"


_PATTERNS = [t.pattern for t in scan._TRIGGERS] + [
    re.compile(source, re.DOTALL) for name in BUILTIN_PATTERNS for source in BUILTIN_PATTERNS[name]
]


@pytest.mark.parametrize("pattern", _PATTERNS, ids=lambda p: p.pattern[:40])
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_match_holds_one_of_the_required_strings(pattern, data):
    """Texts generated from the pattern itself (any case, any spacing Python's \\s allows): each one the
    pattern finds must contain a required string, or the prefilter would skip a real match."""
    text = data.draw(st.from_regex(pattern))
    needed = required_strings(pattern)
    if needed is not None and pattern.search(text):
        assert any(s in haystack(text) for s in needed), (text, needed)
    if requires_digit(pattern) and pattern.search(text):
        assert re.search(r"\d", text), text


def test_the_scan_finds_the_same_with_and_without_the_prefilter(monkeypatch):
    from benchmarks.corpus import corpus_generate

    texts = [item["content"] for item in corpus_generate(600, agents=5, seed=3)] + [
        "Actually, my name is Sardor. Remember this: the deploy is on March 3rd, 2026 at https://x.io.",
        "Não é o Redis, é o Memcached; lembre-se disso. Eu prefiro 1.500 reais.",
        "I'm Ana and I hate waiting. We decided to go with Postgres. Call me Bob.",
        "Men Sardorman, ismim Sardor; eslab qoling: qaror qildik.",
    ]
    assert sum(scan._NEEDS_DIGIT) >= 3  # the date, amount and number triggers
    fast = [scan.scan_message(text) for text in texts]
    monkeypatch.setattr(scan, "_NEEDS", tuple(None for _ in scan._NEEDS))
    monkeypatch.setattr(scan, "_NEEDS_DIGIT", tuple(False for _ in scan._NEEDS_DIGIT))
    slow = [scan.scan_message(text) for text in texts]
    assert fast == slow
    assert sum(map(len, fast)) > 20  # the texts do trigger the scan
    assert sum(m.category == "specific_value" for found in fast for m in found) > 5  # digits among them


def _fold_reference(text: str) -> str:
    """The scan's accent folding as first written: every character looked at."""
    import unicodedata

    from vault.text import APOSTROPHES

    text = text.translate(APOSTROPHES)
    chars = []
    for char in text:
        base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
        chars.append(base if len(base) == 1 else char)
    return "".join(chars)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
    | st.sampled_from(["Não é o Redis`s", "ﬁle ½ café ´x´ ’quoted’", "İstanbul ſ \u212a", "a\u0301 e\u0302"])
)
def test_folding_only_the_characters_that_change_folds_as_before(text):
    assert scan._fold(text) == _fold_reference(text)
    assert len(scan._fold(text)) == len(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=st.text(alphabet=st.sampled_from("ab .!?\u2026\n\r\t x"), max_size=40))
def test_sentence_spans_cut_where_the_split_does(text):
    pieces = [piece.strip() for piece in scan._SENTENCE_SPLIT.split(text) if piece.strip()]
    assert [text[start:end] for start, end in scan._sentence_spans(text)] == pieces
