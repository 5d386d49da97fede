"""vault.trust's reading of a text: the ASCII word pattern, the hash and word set read together, and
the sketch similarity, each against its definition."""

import pytest

from vault import trust


def test_it_finds_the_same_words_in_ascii_text_as_the_full_word_pattern():
    for code in range(128):
        ch = chr(code)
        for text in (ch, f"a{ch}b", f"a{ch}{ch}b", f"{ch}x1{ch}", f"9{ch}Z {ch}"):
            assert trust._ASCII_WORD_RE.findall(text) == trust._WORD_RE.findall(text), repr(text)


@pytest.mark.parametrize(
    "text",
    [
        "We decided to use Redis for sessions, not Memcached (v2.1, C++ and C#).",
        "Decidimos usar o PostgreSQL para a base de dados: não o MySQL.",
        "Ｐｏｒｔ ５４３２ is the ＡＰＩ port",
        "使用PostgreSQL作为主数据库",
        "Maße und Masse, año y ano, bán và bạn",
        "ข้าวและข่าว",
        "",
    ],
)
def test_the_hash_and_word_set_read_together_are_those_read_apart(text):
    assert trust.content_hash_and_words(text) == (trust.content_hash(text), trust.word_set(text))


def _similarity_by_definition(a: list[int], b: list[int]) -> float:
    if not a or not b:
        return 0.0
    union_bottom = sorted(set(a) | set(b))[: trust.SKETCH_SIZE]
    return sum(1 for h in union_bottom if h in a and h in b) / len(union_bottom)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8]),
        ([1, 2, 3, 4, 5, 6, 7, 8], [2, 3, 4, 5, 6, 7, 8, 9]),
        ([1, 3, 5, 7, 9, 11, 13, 15], [9, 11, 13, 15, 17, 19, 21, 23]),
        ([-5, 0, 5], [-5, 5, 10, 20]),
        ([1], [2]),
        ([], [1, 2]),
    ],
)
def test_the_sketch_similarity_is_the_share_of_the_unions_bottom_in_both(a, b):
    assert trust.sketch_similarity(a, b) == _similarity_by_definition(a, b)
    assert trust.sketch_similarity(b, a) == _similarity_by_definition(b, a)
    assert trust.sketch_similarities(a, [b, a, []]) == [
        _similarity_by_definition(a, b),
        _similarity_by_definition(a, a),
        0.0,
    ]
