"""A common word's rows counted in the scope's newest epochs first (search.bm25._count_windows,
search.ranking.count_window): the same counts, with a window's scan instead of the scope's."""

import re

import pytest
from django.db import connection
from django.utils import timezone

from search import bm25, ranking
from search.selectors import SearchFilters, SearchScope, search_run
from vault.models import VaultEntry
from vault.search_vectors import SCOPE_EPOCH_SHIFT

pytestmark = pytest.mark.django_db

EPOCH = 1 << SCOPE_EPOCH_SHIFT
BASE = 20_000  # an epoch far above any id the sequence hands out in a test run


def put(agent, epoch, offset, content):
    now = timezone.now()
    VaultEntry.objects.bulk_create(
        [
            VaultEntry(
                id=(BASE + epoch) * EPOCH + offset,
                project=agent.project,
                agent=agent,
                category="decisions",
                content=content,
                created_at=now,
                updated_at=now,
            )
        ]
    )


def find(agent, q):
    outcome = search_run(
        q=q,
        scope=SearchScope(agent.project_id, [agent.pk]),
        filters=SearchFilters(kinds=("entries",), mode="lexical", limit=50),
    )
    return [(r["id"], r["score"]) for r in outcome.results]


@pytest.fixture
def counted(agent_a, agent_b, monkeypatch, settings):
    """agent_a: 'kafka' in 15 rows of each of its six epochs, 'ledger' in 5 rows of its first; agent_b:
    'ledger' in 200 rows (common in the table's statistics). The cap: 13 rows (a quarter of 50, plus
    one), scopes of 10 rows or more counted to it. Returns the term counts and the windows of each
    search's counts statement."""
    monkeypatch.setattr(bm25, "_scope_cache", {})
    monkeypatch.setattr(bm25, "_common_cache", {})
    monkeypatch.setattr(ranking, "_count_basis", {})
    monkeypatch.setattr(bm25, "CACHE_MIN_ROWS", 10)
    settings.MEMORY_SEARCH_CANDIDATES = 50
    for epoch in range(6):
        for i in range(15):
            put(agent_a, epoch, i, f"kafka topic note {epoch} {i}")
    for i in range(5):
        put(agent_a, 0, 100 + i, f"ledger entry {i}")
    for i in range(200):
        put(agent_b, 0, 200 + i, f"ledger of agent b {i}")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE vault_vaultentry")  # the lexeme statistics the windows are sized by
    seen = {"counts": [], "windows": []}
    fetch, finish = ranking._fetch, bm25._term_stats_finish

    def fetch_seen(sql, params):
        if "%(dw0)s" in sql:
            slots = [k for k in params if re.fullmatch(r"w\d+", k)]
            seen["windows"].append({k: params[f"d{k}"] for k in slots if params[k]})
        return fetch(sql, params)

    monkeypatch.setattr(ranking, "_fetch", fetch_seen)
    monkeypatch.setattr(
        bm25, "_term_stats_finish", lambda *a: seen["counts"].append(dict(a[8])) or finish(*a)
    )
    return seen


def test_a_common_word_is_counted_in_the_newest_epochs_first_and_counts_the_same(agent_a, counted):
    first = find(agent_a, "kafka ledger")  # the scope's newest id and size not known yet: no window
    assert counted["windows"] == []
    bm25._scope_cache.clear()  # counted again, every term with it
    assert find(agent_a, "kafka ledger") == first
    (windows,) = counted["windows"]
    # 'kafka' and 'ledger' (common in the table) in the agent's newest epochs expected to hold twice
    # the cap of each; agent_a has no 'ledger' there.
    for slot, word in (("w0", "( ( 'kafka' | 'kafk' ) )"), ("w1", "( ( 'ledger' | 'ledg' ) )")):
        assert windows[slot].startswith(f"{word} & ( '#a{agent_a.pk}e")
        assert windows[slot].endswith(f" '#a{agent_a.pk}e{BASE + 5}' )")
    # 'kafka' counted to the cap in its window; 'ledger' past its window, in the whole scope: 5 rows.
    assert counted["counts"] == [{0: 13, 1: 5}, {0: 13, 1: 5}]


def test_without_the_windows_a_search_ranks_the_same(agent_a, counted, monkeypatch):
    find(agent_a, "kafka ledger topic")
    bm25._scope_cache.clear()
    windowed = find(agent_a, "kafka ledger topic")
    assert counted["windows"][-1]
    bm25._scope_cache.clear()
    monkeypatch.setattr(ranking, "count_window", lambda scope: None)
    assert find(agent_a, "kafka ledger topic") == windowed
    assert counted["counts"][-1] == counted["counts"][-2]


def test_the_window_is_the_newest_epochs_that_should_hold_the_rows_asked_for(monkeypatch):
    monkeypatch.setattr(ranking, "_count_basis", {})
    scope = SearchScope(1, [7])
    assert ranking.count_window(scope) is None  # the scope not searched yet
    newest = 12 * EPOCH + EPOCH // 4  # a quarter of epoch 12; from epoch 2, 0.1 row an id
    ranking.count_basis_keep(scope, newest, 2 * EPOCH, int((newest - 2 * EPOCH + 1) * 0.1))
    window = ranking.count_window(scope)
    assert window(100) == "( '#a7e12' )"  # 205 rows in the newest quarter epoch
    assert window(300) == "( '#a7e11' | '#a7e12' )"
    assert window(3000) == "( '#a7e8' | '#a7e9' | '#a7e10' | '#a7e11' | '#a7e12' )"
    assert window(3500) == "( '#a7e7' | '#a7e8' | '#a7e9' | '#a7e10' | '#a7e11' | '#a7e12' )"
    assert window(4500) is None  # more epochs than a window's
    ranking.count_basis_keep(scope, newest, 9 * EPOCH, int((newest - 9 * EPOCH + 1) * 0.1))
    assert ranking.count_window(scope)(3000) is None  # every epoch of the scope (9-12)
    ranking.count_basis_keep(scope, newest, 2 * EPOCH, 900)  # a scope counted exactly
    assert ranking.count_window(scope) is None
