"""Benchmark inputs must stay stable and sane, or latency and quality numbers stop being comparable
between runs. No database needed."""

import json
import re
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

from benchmarks.corpus import CATEGORIES, corpus_generate, corpus_queries, corpus_vocabulary
from search.typos import edit_distance_one

QUALITY = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "quality.json"
WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


@pytest.fixture(scope="module")
def sample() -> list[dict]:
    return list(corpus_generate(5000, agents=50, seed=3))


def test_same_seed_same_output():
    assert list(corpus_generate(300, seed=7)) == list(corpus_generate(300, seed=7))
    assert corpus_queries(50, seed=2) == corpus_queries(50, seed=2)


def test_different_seed_different_output():
    assert list(corpus_generate(50, seed=1)) != list(corpus_generate(50, seed=2))


def test_n_is_respected():
    assert sum(1 for _ in corpus_generate(0)) == 0
    assert sum(1 for _ in corpus_generate(1234)) == 1234
    assert len(corpus_queries(77)) == 77


def test_generator_is_lazy():
    assert len(list(islice(corpus_generate(10**12), 5))) == 5


def test_entry_shape(sample):
    for e in sample[:500]:
        assert set(e) == {"agent", "category", "content", "tags", "age_days", "importance"}
        assert isinstance(e["tags"], list) and all(isinstance(t, str) for t in e["tags"])
        assert 0 <= e["age_days"] <= 400
        assert 0.2 <= e["importance"] <= 0.9


def test_all_agents_and_categories_present(sample):
    agents = Counter(e["agent"] for e in sample)
    assert set(agents) == {f"agent-{i:02d}" for i in range(50)}
    assert set(Counter(e["category"] for e in sample)) == set(CATEGORIES)
    assert len({e["agent"] for e in corpus_generate(200, agents=3)}) == 3


def test_content_length_bounds(sample):
    lengths = [len(e["content"]) for e in sample]
    assert min(lengths) >= 120
    assert max(lengths) <= 1000
    typical = sum(150 <= n <= 700 for n in lengths) / len(lengths)
    assert typical >= 0.9


def test_both_languages_and_markdown(sample):
    text = "\n".join(e["content"] for e in sample)
    assert "decidimos" in text.lower() and "we decided" in text.lower()
    assert "- [ ]" in text and "[User]:" in text and "[Agent]:" in text
    assert re.search(r"(^|\s)#[a-z]", text)


def test_no_single_technical_word_dominates(sample):
    df = Counter()
    for e in sample:
        df.update(words(e["content"]))
    for term in ("postgresql", "redis", "kafka", "webhook", "cache", "pix", "kubernetes"):
        assert df[term] / len(sample) < 0.12, term


def test_query_words_come_from_corpus_vocabulary(sample):
    vocab = corpus_vocabulary()
    corpus_words = set().union(*(words(e["content"]) for e in sample))
    assert {w for w in corpus_words if not any(c.isdigit() for c in w)} <= vocab
    typos = 0
    for q in corpus_queries(400, seed=5):
        unknown = [w for w in words(q) if w not in vocab and not any(c.isdigit() for c in w)]
        assert len(unknown) <= 1, q
        if unknown:
            assert any(edit_distance_one(unknown[0], v) for v in vocab), q
            typos += 1
    assert 5 <= typos <= 80


def test_queries_mix_languages_and_shapes():
    queries = corpus_queries(300)
    assert sum(q.endswith("?") for q in queries) > 60
    assert any(q.startswith(("por que", "como", "qual", "o que")) for q in queries)
    assert any(q.startswith(("why", "how", "what")) for q in queries)


# --- labelled quality set -------------------------------------------------------------------


@pytest.fixture(scope="module")
def quality() -> dict:
    return json.loads(QUALITY.read_text(encoding="utf-8"))


def test_quality_entries(quality):
    entries = quality["entries"]
    keys = [e["key"] for e in entries]
    assert len(keys) == len(set(keys))
    assert 350 <= len(entries) <= 450
    assert {e["category"] for e in entries} == set(CATEGORIES)
    langs = Counter(e["lang"] for e in entries)
    assert 0.25 <= langs["pt"] / len(entries) <= 0.45
    for e in entries:
        assert e["content"].strip()
        assert 0 <= e["age_days"] <= 400 and 0.2 <= e["importance"] <= 0.9


def test_quality_questions(quality):
    by_key = {e["key"]: e for e in quality["entries"]}
    questions = quality["questions"]
    assert len(questions) >= 200
    assert len({q["q"].lower() for q in questions}) == len(questions)
    for q in questions:
        assert 1 <= len(q["answers"]) <= 3
        assert all(a in by_key for a in q["answers"]), q
    kinds = Counter(q["kind"] for q in questions)
    assert set(kinds) == {"question", "paraphrase", "typo", "keywords", "prefix"}
    assert kinds["typo"] >= 30 and kinds["paraphrase"] >= 30 and kinds["prefix"] >= 15
    langs = Counter(q["lang"] for q in questions)
    assert langs["en"] > 0 and langs["pt"] > 0


def test_quality_typos_are_one_edit_from_answer_words(quality):
    by_key = {e["key"]: e for e in quality["entries"]}
    real = 0
    for q in quality["questions"]:
        if q["kind"] != "typo":
            continue
        answer_words = words(" ".join(by_key[a]["content"] for a in q["answers"]))
        if any(
            edit_distance_one(w, a) for w in words(q["q"]) - answer_words for a in answer_words if len(a) >= 5
        ):
            real += 1
    assert real >= 30


def test_quality_prefix_and_keyword_questions_are_what_their_kind_says(quality):
    """The labelled set is edited as JSON: these are the rules each question kind must keep."""
    by_key = {e["key"]: e for e in quality["entries"]}
    for q in quality["questions"]:
        answer_words = words(" ".join(by_key[a]["content"] for a in q["answers"]))
        if q["kind"] == "prefix":
            assert any(
                len(w) >= 3 and a.startswith(w) for w in words(q["q"]) - answer_words for a in answer_words
            ), q
        if q["kind"] == "keywords":
            assert 2 <= len(q["q"].split()) <= 4, q
        assert len(set(q["answers"])) == len(q["answers"]), q
