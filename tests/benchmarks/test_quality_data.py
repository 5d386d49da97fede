"""The labelled quality sets must stay well-formed, or bench_quality reports figures over questions
whose answers do not exist. The command itself must report every set's groups, each on its own
corpus."""

import io
import json
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from benchmarks.management.commands.bench_quality import QUALITY, data_files
from vault.models import Category, Project

FILES = data_files()
PARAPHRASE = QUALITY.with_name("quality_paraphrase.json")


def load(path):
    return json.loads(path.read_text())


def test_every_quality_file_is_found_original_first():
    assert FILES[0] == QUALITY
    assert PARAPHRASE in FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_quality_file_is_well_formed(path):
    data = load(path)
    entries, questions = data["entries"], data["questions"]
    keys = [e["key"] for e in entries]
    assert len(keys) == len(set(keys)), "duplicate entry keys"
    for e in entries:
        assert e["agent"] and e["content"].strip()
        assert e["category"] in Category.values
        assert e.get("lang") in ("en", "pt")
    assert questions
    for q in questions:
        assert q["q"].strip() and q["kind"] and q["lang"]
        assert q["answers"] and set(q["answers"]) <= set(keys), q
    asked = Counter(q["q"].lower() for q in questions)
    assert asked.most_common(1)[0][1] == 1, "a question is asked twice"


def test_extra_files_name_distinct_groups():
    groups = [load(path).get("group") for path in FILES[1:]]
    assert all(groups), "every extra quality file names its group"
    assert len(groups) == len(set(groups))


def test_paraphrase_set_is_large_and_crosses_languages():
    data = load(PARAPHRASE)
    lang = {e["key"]: e["lang"] for e in data["entries"]}
    questions = data["questions"]
    assert len(questions) >= 100
    assert {q["kind"] for q in questions} == {"paraphrase", "crosslang"}
    for q in questions:
        answer_langs = {lang[key] for key in q["answers"]}
        if q["kind"] == "crosslang":
            assert q["lang"] not in answer_langs, q
        else:
            assert answer_langs == {q["lang"]}, q
    # Both directions: Portuguese questions for English entries and English for Portuguese.
    assert {q["lang"] for q in questions if q["kind"] == "crosslang"} == {"en", "pt"}


TINY_PARAPHRASE = {
    "group": "para",
    "entries": [
        {
            "key": "answer",
            "agent": "ops",
            "category": "decisions",
            "lang": "en",
            "content": "Our invoices are stored in PostgreSQL with nightly backups.",
        },
        {
            "key": "cat",
            "agent": "ops",
            "category": "lessons",
            "lang": "en",
            "content": "The cat sleeps on the sofa.",
        },
        {
            "key": "ball",
            "agent": "ops",
            "category": "tasks",
            "lang": "en",
            "content": "We play football on Sundays.",
        },
    ],
    "questions": [
        {
            "q": "which database keeps the billing documents?",
            "answers": ["answer"],
            "lang": "en",
            "kind": "paraphrase",
        }
    ],
}


@pytest.mark.django_db
def test_bench_quality_embeds_its_corpus_and_measures_every_mode(tmp_path):
    from search import semantic
    from search.embedding_index import pgvector_installed

    if not pgvector_installed():
        pytest.skip("this database has no pgvector (the run on the embedded PostgreSQL 18 covers this)")
    semantic._pgvector_by_database.clear()
    path = tmp_path / "quality_para.json"
    path.write_text(json.dumps(TINY_PARAPHRASE))
    out = io.StringIO()
    call_command("bench_quality", "--data", str(path), stdout=out)
    text = out.getvalue()
    assert "para: embedded 3 items" in text
    tables = {}
    for block in text.split("\nmode=")[1:]:
        mode, *lines = block.splitlines()
        tables[mode] = {line.split("  ")[0].strip(): line.split()[1:5] for line in lines[1:]}
    assert set(tables) == {"hybrid", "lexical", "semantic"}
    # No word shared with the answer: lexical finds nothing, the model finds it first.
    assert tables["lexical"]["para"][1].startswith("0.000/")
    assert tables["semantic"]["para"][1:] == ["1.000/0.000", "1.000/0.000", "1.000/0.000"]
    assert tables["hybrid"]["para"][1].startswith("1.000/")


@pytest.mark.django_db
def test_bench_quality_without_pgvector_says_semantic_modes_are_unavailable(tmp_path):
    from search.embedding_index import pgvector_installed

    if pgvector_installed():
        pytest.skip("this database has pgvector (the run on PostgreSQL 15 covers this)")
    path = tmp_path / "quality_para.json"
    path.write_text(json.dumps(TINY_PARAPHRASE))
    out, err = io.StringIO(), io.StringIO()
    call_command("bench_quality", "--data", str(path), stdout=out, stderr=err)
    assert "mode=lexical" in out.getvalue() and "mode=hybrid" not in out.getvalue()
    with pytest.raises(CommandError, match="No mode left"):
        call_command("bench_quality", "--data", str(path), "--mode", "semantic", stdout=out, stderr=err)
    assert "not available" in err.getvalue() and "pgvector" in err.getvalue()


@pytest.mark.django_db
def test_bench_quality_reports_each_set_under_its_group(tmp_path):
    tiny = {
        "group": "tiny",
        "entries": [
            {
                "key": "t1",
                "agent": "ops",
                "category": "lessons",
                "lang": "en",
                "content": "The nightly backup to object storage was restored in a drill.",
            },
            {
                "key": "t2",
                "agent": "ops",
                "category": "decisions",
                "lang": "en",
                "content": "Invoices are numbered without gaps per tenant.",
            },
        ]
        # BM25's idf is zero for a word in half the documents: unrelated entries keep it positive.
        + [
            {
                "key": f"f{i}",
                "agent": "ops",
                "category": "tasks",
                "lang": "en",
                "content": f"Unrelated chore {i}.",
            }
            for i in range(3)
        ],
        "questions": [
            {"q": "backup restored drill", "answers": ["t1"], "lang": "en", "kind": "keywords"},
            {"q": "invoices numbered", "answers": ["t2"], "lang": "en", "kind": "keywords"},
        ],
    }
    path = tmp_path / "quality_tiny.json"
    path.write_text(json.dumps(tiny))
    out = io.StringIO()
    call_command("bench_quality", "--data", str(path), "--mode", "lexical", stdout=out)
    rows = {line.split("  ")[0].strip(): line for line in out.getvalue().splitlines()}
    assert "tiny mode=lexical: 2 questions over 5 entries" in out.getvalue()
    assert "mode=hybrid" not in out.getvalue()
    assert rows["tiny"].split()[1:3] == ["2", "1.000/1.000"]
    assert "tiny kind=keywords" in rows and "tiny lang=en" in rows
    assert "all" not in rows  # the original set's groups only come from quality.json
    assert not Project.objects.filter(slug="bench-quality-tiny").exists()
