"""The labelled quality sets must stay well-formed, or bench_quality reports figures over questions
whose answers do not exist. The command itself must report every set's groups, each on its own
corpus."""

import io
import json
from collections import Counter

import pytest
from django.core.management import call_command

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
    call_command("bench_quality", "--data", str(path), stdout=out)
    rows = {line.split("  ")[0].strip(): line for line in out.getvalue().splitlines()}
    assert "tiny: 2 questions over 5 entries" in out.getvalue()
    assert rows["tiny"].split()[1:3] == ["2", "1.000/1.000"]
    assert "tiny kind=keywords" in rows and "tiny lang=en" in rows
    assert "all" not in rows  # the original set's groups only come from quality.json
    assert not Project.objects.filter(slug="bench-quality-tiny").exists()
