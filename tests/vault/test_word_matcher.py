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
