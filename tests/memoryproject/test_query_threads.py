"""The thread count a search query is embedded on, chosen by measurement (memoryproject/query_threads.py)."""

import pytest

from memoryproject import query_threads
from memoryproject.query_threads import ThreadsChooser, candidates_for


def run(chooser: ThreadsChooser, times: dict[int, float], queries: int) -> list[int]:
    """`queries` picks, each recorded as taking times[threads] ms a token."""
    picked = []
    for _ in range(queries):
        threads = chooser.pick()
        chooser.record(threads, times[threads] / 1000 * 10, 10)
        picked.append(threads)
    return picked


def test_candidates_are_one_thread_and_half_the_cores():
    assert candidates_for(1) == (1,)
    assert candidates_for(None) == (1,)
    assert candidates_for(2) == (1, 2)
    assert candidates_for(4) == (1, 2)
    assert candidates_for(16) == (1, 8)


def test_each_candidate_is_tried_in_turn_then_the_faster_is_kept():
    chooser = ThreadsChooser((1, 2))
    picked = run(chooser, {1: 1.6, 2: 0.8}, 40)
    assert picked[:6] == [1, 2, 1, 2, 1, 2]
    assert set(picked[6:]) == {2}
    assert chooser.best() == 2


def test_one_thread_is_kept_where_it_is_faster():
    # An earlier machine: two threads slower for short queries.
    chooser = ThreadsChooser((1, 2))
    picked = run(chooser, {1: 1.4, 2: 1.6}, 40)
    assert set(picked[6:]) == {1}


def test_more_threads_must_be_clearly_faster():
    chooser = ThreadsChooser((1, 2))
    picked = run(chooser, {1: 1.0, 2: 0.9}, 40)  # 10 % faster: not worth a core more
    assert set(picked[6:]) == {1}


def test_the_other_count_is_tried_now_and_then_and_a_change_of_load_is_followed(monkeypatch):
    monkeypatch.setattr(query_threads, "EXPLORE_EVERY", 10)
    chooser = ThreadsChooser((1, 2))
    quiet = {1: 1.4, 2: 0.8}
    picked = run(chooser, quiet, 30)
    assert [i + 1 for i, threads in enumerate(picked) if threads == 1][3:] == [10, 20, 30]
    # The cores get busy: two threads now wait for each other at every barrier.
    busy = {1: 2.4, 2: 7.0}
    picked = run(chooser, busy, 10)
    assert picked[-1] == 1 and chooser.best() == 1


def test_a_far_slower_count_is_tried_less_often(monkeypatch):
    monkeypatch.setattr(query_threads, "EXPLORE_EVERY", 10)
    monkeypatch.setattr(query_threads, "EXPLORE_EVERY_SLOW", 40)
    chooser = ThreadsChooser((1, 2))
    picked = run(chooser, {1: 2.4, 2: 7.0}, 86)
    assert picked[6:].count(2) == 2  # the 40th and 80th picks, not every 10th


def test_a_single_candidate_is_always_picked():
    chooser = ThreadsChooser((1,))
    assert run(chooser, {1: 1.0}, 10) == [1] * 10
    chooser.record(3, 1.0, 10)  # not a candidate: ignored
    assert chooser.state() == {1: pytest.approx(1.0)}
