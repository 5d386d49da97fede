"""bench_recall (benchmarks/locomo.py, benchmarks/realtalk.py and the command) on tiny conversation
sets in LoCoMo's and REALTALK's formats."""

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmarks.datasets import dataset_read
from benchmarks.locomo import (
    Scores,
    dataset_load,
    evidence_normalise,
    recall_at,
    reciprocal_rank,
    session_date,
)
from sessions_app.models import Message
from vault.models import Project

TINY = Path(__file__).parent / "fixtures" / "tiny_conversations.json"
TINY_REALTALK = Path(__file__).parent / "fixtures" / "tiny_realtalk"


def report_of(dataset: Path) -> tuple[str, dict[tuple[str, str], list[str]]]:
    """bench_recall's report on a dataset (in-process, project kept), and its rows by (method, category)."""
    out = io.StringIO()
    call_command("bench_recall", dataset=str(dataset), in_process=True, keep=True, stdout=out)
    report = out.getvalue()
    return report, {tuple(line.split()[:2]): line.split() for line in report.splitlines() if line.split()}


def test_evidence_ids_are_normalised_and_the_unknown_ones_counted():
    known = {"D8:6", "D9:17", "D11:26", "D30:5"}
    ids, fixed, dropped = evidence_normalise(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D99:1"], known)
    assert ids == ["D8:6", "D9:17", "D11:26", "D30:5"]
    assert fixed == 3
    assert dropped == ["D", "D99:1"]


def test_ranges_glued_ids_and_stray_punctuation_in_evidence_labels_are_repaired():
    known = {f"D12:{n}" for n in range(1, 20)} | {"D13:45", "D20:19", "D2:18", "D5:3"}
    ids, fixed, dropped = evidence_normalise(
        ["D12:3-D12:5", "D13:45:D20:19", "D 2:18", "D5:3.", "D12:1-D40:2", "D12:4"], known
    )
    assert ids == ["D12:3", "D12:4", "D12:5", "D13:45", "D20:19", "D2:18", "D5:3", "D12:1"]
    assert fixed == 5  # the last label was already canonical
    assert dropped == ["D40:2"]  # a range across sessions is taken as its two ends, not expanded


def test_the_dataset_loads_turns_with_their_session_dates_and_categories_1_to_4():
    data = dataset_load(TINY)
    first = data.conversations[0]
    assert data.turns == 10
    assert [t.dia_id for t in first.turns[:2]] == ["D1:1", "D1:2"]
    assert first.turns[0].when == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.turns[4].when == datetime(2023, 6, 20, 10, 5, tzinfo=UTC)
    assert first.turns[0].document.startswith("Ana: Hi Bruno")
    assert "a photo of a clay bowl" in first.turns[3].document
    assert [q.category for q in first.questions] == [
        4,
        1,
        2,
        3,
    ]  # category 5 and the no-evidence one left out
    assert first.questions[1].evidence == ["D1:3", "D1:1"]
    assert first.questions[2].evidence == ["D2:1"]
    assert data.questions_dropped == 1 and data.evidence_dropped == 2  # "D" and "D9:9"
    assert session_date("10:05 am on 20 June, 2023") == datetime(2023, 6, 20, 10, 5, tzinfo=UTC)


def test_metrics():
    assert recall_at(["a", "b", "c"], ["c", "z"], 2) == 0.0
    assert recall_at(["a", "b", "c"], ["c", "z"], 3) == 0.5
    assert reciprocal_rank(["a", "b", "c"], ["c"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a"], ["c"]) == 0.0
    scores = Scores()
    scores.add(4, ["a"], ["a"])
    scores.add(2, ["b"], ["a"])
    assert scores.row() == (2, 0.5, 0.5, 0.5)
    assert scores.row(4) == (1, 1.0, 1.0, 1.0)


@pytest.mark.django_db
def test_the_command_ingests_asks_and_reports_beside_bm25():
    report, lines = report_of(TINY)
    assert "2 conversations, 10 turns, 5 questions" in report
    assert "dropped: 2" in report
    bm25, search = lines[("bm25", "all")], lines[("search", "all")]
    assert bm25[2] == search[2] == "5"
    assert float(search[4]) >= 0.8  # R@10: every evidence turn of these questions is easy to find
    project = Project.objects.get(slug="bench-recall")
    messages = Message.objects.filter(project=project)
    assert messages.count() == 10
    dated = messages.get(agent__slug="conv-tiny-1", client_id="D2:1")
    assert dated.created_at == datetime(2023, 6, 20, 10, 5, tzinfo=UTC)
    assert dated.text.startswith("Ana: We drove to Lisbon")


@pytest.mark.django_db
def test_the_command_deletes_its_project_and_rejects_a_bad_file(tmp_path):
    call_command("bench_recall", dataset=str(TINY), in_process=True, stdout=io.StringIO())
    assert not Project.objects.filter(slug="bench-recall").exists()
    with pytest.raises(CommandError):
        call_command("bench_recall", dataset=str(tmp_path / "missing.json"), stdout=io.StringIO())
    bad = tmp_path / "bad.json"
    bad.write_text('[{"conversation": {}}]')
    with pytest.raises(CommandError):
        call_command("bench_recall", dataset=str(bad), in_process=True, stdout=io.StringIO())


def test_a_realtalk_folder_loads_with_each_message_dated_and_its_labels_repaired():
    data = dataset_read(TINY_REALTALK)
    assert dataset_read(TINY_REALTALK / "Chat_1_Rita_Tomas.json", "realtalk").turns == data.turns == 7
    (conv,) = data.conversations
    assert conv.sample_id == "Chat_1_Rita_Tomas" and conv.speakers == ("Rita", "tomas")
    assert [t.when for t in conv.turns[:3]] == [
        datetime(2023, 12, 29, 22, 42, 4, tzinfo=UTC),
        datetime(2023, 12, 29, 22, 45, 10, tzinfo=UTC),
        datetime(2023, 12, 30, 8, 1, tzinfo=UTC),
    ]
    vase = conv.turns[3]
    assert (vase.dia_id, vase.session) == ("D1:4", 2)  # the id's prefix need not be its session
    assert "a blue ceramic vase" in vase.document
    assert [q.evidence for q in conv.questions] == [["D1:1", "D1:2", "D1:3"], ["D2:1", "D2:3"], ["D1:4"]]
    assert (data.evidence_fixed, data.evidence_dropped, data.questions_dropped) == (3, 2, 1)


def test_the_format_is_told_by_shape_and_a_wrong_one_is_refused(tmp_path):
    assert len(dataset_read(TINY).conversations) == 2
    with pytest.raises(ValueError, match="folder"):
        dataset_read(TINY_REALTALK, "locomo")
    with pytest.raises(ValueError, match="not a REALTALK"):
        dataset_read(TINY, "realtalk")
    with pytest.raises(FileNotFoundError):
        dataset_read(tmp_path / "missing")
    (tmp_path / "odd.json").write_text('{"a": 1}')
    with pytest.raises(ValueError, match="neither"):
        dataset_read(tmp_path / "odd.json")
    with pytest.raises(ValueError, match="no REALTALK"):
        dataset_read(_empty(tmp_path), "realtalk")


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


@pytest.mark.django_db
def test_the_command_runs_a_realtalk_folder_with_each_message_at_its_own_time():
    report, lines = report_of(TINY_REALTALK)
    assert "1 conversations, 7 turns, 3 questions" in report
    assert lines[("bm25", "all")][2] == lines[("search", "all")][2] == "3"
    assert float(lines[("search", "all")][4]) >= 0.6
    messages = Message.objects.filter(project__slug="bench-recall")
    assert messages.count() == 7
    snow = messages.get(client_id="D2:2")
    assert snow.created_at == datetime(2024, 1, 5, 19, 4, tzinfo=UTC)
    assert (snow.role, messages.get(client_id="D2:3").role) == ("user", "assistant")  # "tomas" answers
    with pytest.raises(CommandError, match="known format"):
        call_command("bench_recall", dataset=str(TINY), format="realtalk", stdout=io.StringIO())


@pytest.mark.django_db
def test_the_command_is_not_stopped_by_the_api_rate_limit(settings):
    """One token asks every question: on a fast machine that is over MEMORY_API_RATE_LIMIT's default
    (a LoCoMo run was answered 429 after 3,000 requests in a minute). The benchmark's requests are
    counted under a limit they cannot reach; its server's environment carries the same limit, which
    the settings accept."""
    settings.MEMORY_API_RATE_LIMIT = "3/m"  # fewer than the tiny set's requests (10 turns, 5 questions)
    out = io.StringIO()
    call_command("bench_recall", dataset=str(TINY), in_process=True, stdout=out)
    assert "5 questions" in out.getvalue()

    import re

    from benchmarks.load import BENCH_RATE_LIMIT, bench_env

    assert bench_env(WEB_THREADS="4")["MEMORY_API_RATE_LIMIT"] == BENCH_RATE_LIMIT
    assert re.fullmatch(r"\d+/\d*[smhd]", BENCH_RATE_LIMIT)
