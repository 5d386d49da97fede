"""WordMatcher: the query's words found in a text by the snippets, highlights and archived messages."""

import re

import pytest

from vault.search_text import NON_CJK_WORD_CHAR, PAIRED_CLASS, WordMatcher

TEXTS = [
    "We decided to use Redis for the session cache; the Services team owns it.",
    "我们决定使用Redis作为会话缓存，明天部署到生产环境。",
    "service_account=deploy-bot, serviços de conta, SERVICE-ACCOUNT and preservice",
    "เราตัดสินใจใช้Redisเป็นแคชของเซสชัน และ Redis-cluster",
    "&amp;redis #redis redis&gt; x_redis 2redis",
]
PATTERNS = [["redis"], ["servic", "account"], ["会话", "话缓", "缓存"], ["แคช"], ["serviç", "conta"], ["re"]]


@pytest.mark.parametrize("patterns", PATTERNS)
@pytest.mark.parametrize("text", TEXTS)
def test_it_finds_what_the_one_regular_expression_found(text, patterns):
    """The matches of `(?<!W)(?:patterns)W*` (W a letter that is not CJK), which was compiled for every
    query and cost milliseconds for its class of CJK characters."""
    alternation = "|".join(sorted(set(patterns), key=len, reverse=True))
    reference = re.compile(rf"(?<!{NON_CJK_WORD_CHAR})(?:{alternation}){NON_CJK_WORD_CHAR}*", re.IGNORECASE)
    matcher = WordMatcher(patterns)
    assert matcher.search(text) == bool(reference.search(text))
    starts = {m.start(): m.end() for m in reference.finditer(text)}
    spans = dict(matcher.spans(text))
    # Every match of the one expression is found, ending where it ended; the matcher also reports the
    # overlapping ones inside a run of CJK characters, which finditer skipped.
    assert {s: e for s, e in spans.items() if s in starts} == starts
    assert all(re.match(f"[{PAIRED_CLASS}]", text[s]) for s in spans if s not in starts)


@pytest.mark.parametrize("text", TEXTS)
def test_a_whole_word_must_end_too(text):
    reference = re.compile(rf"(?<!{NON_CJK_WORD_CHAR})redis(?!{NON_CJK_WORD_CHAR})", re.IGNORECASE)
    assert [s for s, _ in WordMatcher(["redis"], whole=True).spans(text)] == [
        m.start() for m in reference.finditer(text)
    ]


def test_not_after_keeps_a_match_out_of_an_entity():
    assert [s for s, _ in WordMatcher(["amp", "gt", "redis"]).spans("&amp;redis #redis", not_after="&#")] == [
        5
    ]


def test_the_pattern_made_for_a_query_holds_no_class_of_cjk_characters():
    """Compiling that class with IGNORECASE took 8 ms, paid by every search request for its snippets."""
    assert "\u4e00" not in WordMatcher(["redis", "cache"])._regex.pattern


def test_ignorecase_between_latin1_characters_is_lower():
    """Why WordMatcher may look for a word of Latin-1 characters with str.find in the lowered text:
    between Latin-1 characters, re's IGNORECASE takes two characters for the same exactly when their
    lower cases are equal, and each lowers to one Latin-1 character."""
    latin1 = [chr(i) for i in range(256)]
    assert all(len(c.lower()) == 1 and ord(c.lower()) < 256 for c in latin1)
    for a in latin1:
        pattern = re.compile(re.escape(a), re.IGNORECASE)
        assert [b for b in latin1 if pattern.fullmatch(b)] == [b for b in latin1 if b.lower() == a.lower()]


def _by_regex(patterns, **kwargs):
    matcher = WordMatcher(patterns, **kwargs)
    matcher._words = None  # every text through the regular expression, as before str.find
    return matcher


ALPHABET = "aAbBeEéÉçÇsSkKßÿµ_-.1 \n/&#ſKμ会话"


@pytest.mark.parametrize("seed", range(4))
def test_str_find_finds_what_the_regular_expression_found(seed):
    """Words of Latin-1 characters (as a query's patterns are written) are looked for with str.find in a
    Latin-1 text, not with a regular expression compiled for each query (0.2 ms of a search request's
    CPU); the spans are the same, whatever the text, `pos`, `before`, `not_after` and `whole`."""
    import random

    rng = random.Random(seed)
    for _ in range(2_000):
        words = ["".join(rng.choice(ALPHABET[:20]) for _ in range(rng.randint(1, 4))) for _ in range(3)]
        patterns = [re.escape(w) for w in words]
        # Half the texts Latin-1 (looked for with str.find), half not (the regular expression).
        letters = ALPHABET if rng.random() < 0.5 else ALPHABET[:26]
        text = "".join(rng.choice(letters[:18] if rng.random() < 0.7 else letters) for _ in range(60))
        pos, before = rng.randint(0, 30), rng.choice([None, rng.randint(0, 70)])
        whole, not_after = rng.random() < 0.3, rng.choice(["", "&#"])
        found = list(
            WordMatcher(patterns, whole=whole).spans(text, not_after=not_after, pos=pos, before=before)
        )
        reference = _by_regex(patterns, whole=whole).spans(text, not_after=not_after, pos=pos, before=before)
        assert found == list(reference), (patterns, text, pos, before, whole)


def test_a_matcher_of_latin1_words_compiles_no_regular_expression(monkeypatch):
    compiled = []
    compile_ = re.compile
    monkeypatch.setattr(re, "compile", lambda *args: compiled.append(args) or compile_(*args))
    matcher = WordMatcher([re.escape("latência"), re.escape("p95"), re.escape("ledger-service")])
    assert list(matcher.spans("A latência p95 do Ledger-Service subiu.")) == [(2, 10), (11, 14), (18, 32)]
    assert compiled == []
    # A text beyond Latin-1 (or a pattern that is not a word) is searched as before.
    assert list(matcher.spans("latência 会话")) == [(0, 8)]
    assert len(compiled) == 1
