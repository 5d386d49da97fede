"""Recency windows of entry search (search.ranking._epoch_windows): rows matching any term are
looked for among the newest ids, rows matching every term in a window twice as wide, and the whole
scope only when that gives less than a page."""

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from search import ranking, selectors
from search.selectors import SearchFilters, SearchScope, search_run
from vault.models import VaultEntry
from vault.search_vectors import SCOPE_EPOCH_SHIFT

pytestmark = pytest.mark.django_db

EPOCH = 1 << SCOPE_EPOCH_SHIFT
BASE = 10_000  # an epoch far above any id the sequence hands out in a test run


def put(agent, epoch, offset, content, category="decisions"):
    now = timezone.now()
    return VaultEntry.objects.bulk_create(
        [
            VaultEntry(
                id=(BASE + epoch) * EPOCH + offset,
                project=agent.project,
                agent=agent,
                category=category,
                content=content,
                created_at=now,
                updated_at=now,
            )
        ]
    )[0]


@pytest.fixture
def history(agent_a, agent_b, settings, monkeypatch):
    settings.MEMORY_SEARCH_RECENT_IDS = EPOCH  # near: epochs 8-10 here; wide (twice as many ids): 7-10
    # The windows apply when the query's terms match more rows than the candidate cap and none is
    # rare (test_bm25.py covers rare terms): make every term count as common here.
    real_stats = selectors._term_stats

    def all_common(table, where, compiled, params, scope, **kwargs):
        stats = real_stats(table, where, compiled, params, scope, **kwargs)
        params.pop("q_rare", None)
        stats.rare, stats.exhaustive = [], False
        return stats

    monkeypatch.setattr(selectors, "_term_stats", all_common)
    made = {
        "old_any": put(agent_a, 0, 1, "kafka retention is seven days"),
        "old_all": put(agent_a, 7, 1, "the kafka ledger topic is compacted"),
        "recent": [put(agent_a, 9, 10 + i, f"ledger note number {i}") for i in range(12)],
        "other_agent": put(agent_b, 9, 100, "kafka ledger of agent b"),
    }
    return made


def find(agent, q, **filters):
    filters.setdefault("kinds", ("entries",))
    filters.setdefault("mode", "lexical")  # the windows belong to the lexical arm
    outcome = search_run(
        q=q, scope=SearchScope(agent.project_id, [agent.pk]), filters=SearchFilters(**filters)
    )
    return [r["id"] for r in outcome.results]


def test_entry_vectors_carry_their_scope_epochs(agent_a, history):
    entry = history["old_all"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_vector::text FROM vault_vaultentry WHERE id = %s", [entry.pk])
        (vector,) = cursor.fetchone()
    epoch = entry.pk >> SCOPE_EPOCH_SHIFT
    assert f"'#a{agent_a.pk}e{epoch}'" in vector and f"'#p{agent_a.project_id}e{epoch}'" in vector


def test_windows_follow_the_newest_id_and_the_scope(agent_a, history):
    windows = selectors._epoch_windows(SearchScope(agent_a.project_id, [agent_a.pk]))
    top_epoch = BASE + 9
    assert f"'#a{agent_a.pk}e{top_epoch}'" in windows.near
    assert f"'#a{agent_a.pk}e{top_epoch + 1}'" in windows.near  # rows written during the search
    assert f"'#a{agent_a.pk}e{BASE + 7}'" not in windows.near
    assert f"'#a{agent_a.pk}e{BASE + 7}'" in windows.wide
    assert f"'#a{agent_a.pk}e{BASE + 6}'" not in windows.wide
    project_wide = selectors._epoch_windows(SearchScope(agent_a.project_id, None))
    assert f"'#p{agent_a.project_id}e{top_epoch}'" in project_wide.near and "#a" not in project_wide.near


def test_rows_matching_every_term_are_found_in_the_wide_window(agent_a, history):
    found = find(agent_a, "kafka ledger")
    assert found[0] == history["old_all"].pk  # both terms: ranks first though older
    assert set(found[1:]) <= {e.pk for e in history["recent"]}
    assert history["other_agent"].pk not in found


def test_it_reads_the_newest_id_with_the_term_counts(agent_a, history, monkeypatch):
    """The windows' newest id comes in the statement that counts the terms: each statement is a round
    trip to the database (0.3-1 ms on a loaded 2-core machine), and a windowed search paid one more."""
    statements = []
    execute = psycopg.Cursor.execute

    def counted(cursor, query, params=None, *args, **kwargs):
        statements.append(str(query))
        return execute(cursor, query, params, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    assert find(agent_a, "kafka ledger")[0] == history["old_all"].pk  # through the windows
    newest = [sql for sql in statements if "max(id)" in sql]
    assert newest and all("count(*)" in sql for sql in newest)


def test_older_rows_matching_one_term_wait_behind_a_full_recent_page(agent_a, history, settings):
    assert history["old_any"].pk not in find(agent_a, "kafka ledger", limit=10)
    # a page the windows cannot fill (20 > 13 candidates) brings the whole history in
    assert history["old_any"].pk in find(agent_a, "kafka ledger", limit=20)
    settings.MEMORY_SEARCH_RECENT_IDS = 0  # windows off: the whole history is ranked
    assert history["old_any"].pk in find(agent_a, "kafka ledger", limit=20)


def test_the_whole_scope_is_searched_when_the_windows_give_less_than_a_page(agent_a, history):
    assert find(agent_a, "retention") == [history["old_any"].pk]
    # both found (their order is BM25's: the shorter one first)
    assert sorted(find(agent_a, "kafka")) == sorted([history["old_all"].pk, history["old_any"].pk])


def test_windows_give_the_same_page_as_the_whole_table_when_recent_rows_answer(agent_a, history, settings):
    windowed = find(agent_a, "ledger note", limit=5)
    settings.MEMORY_SEARCH_RECENT_IDS = 0
    assert windowed == find(agent_a, "ledger note", limit=5)
    assert len(windowed) == 5


def test_context_sections_use_the_windows_too(agent_a, history):
    from search.query import query_compile

    best = selectors.entries_best_by_category(
        agent_a, compiled=query_compile("kafka ledger"), limits={"decisions": 3, "lessons": 2}
    )
    assert best["decisions"][0]["id"] == history["old_all"].pk
    assert best["lessons"] == []


def _entry_reads_besides_the_scans(agent, q, monkeypatch, **filters) -> tuple[list[int], list[str]]:
    """The page of an entry search, and the reads of entry rows its ranking statement makes to score
    the candidates (the `texted` CTE of EXPLAIN ANALYZE) other than the candidate scans themselves."""
    statements = []
    fetch = selectors._fetch

    def recorded(sql, params):
        statements.append((sql, dict(params)))
        return fetch(sql, params)

    monkeypatch.setattr(selectors, "_fetch", recorded)
    page = find(agent, q, **filters)
    sql, params = next((s, p) for s, p in statements if "texted" in s)
    with psycopg.ClientCursor(connection.connection) as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the scans as on a large table: the GIN index
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        ((plan,),) = cursor.fetchall()

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    texted = next(n for n in nodes(plan[0]["Plan"]) if n.get("Subplan Name") == "CTE texted")
    reads = [
        f"{n['Node Type']} {n.get('Index Name', '')}".strip()
        for n in nodes(texted)
        if n.get("Relation Name") == "vault_vaultentry" and n["Node Type"] != "Bitmap Heap Scan"
    ]
    return page, reads


@pytest.mark.parametrize("shape", ["windows", "capped", "every match"])
def test_each_candidate_row_is_read_once(agent_a, history, settings, monkeypatch, shape):
    """The candidate scans visit each row's heap page to check the scope and status; the ranking
    takes the row's columns from there, not by fetching the row again by primary key for every
    candidate (up to several hundred a search: a third of the ranking statement's buffers at
    100,000 entries)."""
    if shape != "windows":
        settings.MEMORY_SEARCH_RECENT_IDS = 0
    if shape == "every match":
        monkeypatch.setattr(selectors, "_term_stats", ranking._term_stats)  # every match a candidate
    page, reads = _entry_reads_besides_the_scans(agent_a, "kafka ledger", monkeypatch, limit=3)
    assert len(page) == 3 and page[0] == history["old_all"].pk
    assert reads == []


def test_rows_matching_every_term_are_picked_from_the_rare_terms_rows(
    agent_a, history, settings, monkeypatch
):
    """With a rare term (every row holding it is a candidate, `rareq`), a row matching every term
    holds it too: the wide window's every-term candidates are picked from those rows by their
    vectors, not by walking every term's posting lists in the GIN index again (1.2-1.4 ms of the
    database's CPU for a five-term question at 100,000 entries)."""
    monkeypatch.setattr(selectors, "_term_stats", ranking._term_stats)  # the counts as they come
    # "ledger" (13 rows) overflows a cap of 8, so the windows apply; "kafka" (2 rows) is rare.
    settings.MEMORY_SEARCH_CANDIDATES = 8
    statements = []
    fetch = selectors._fetch

    def recorded(sql, params):
        statements.append((sql, dict(params)))
        return fetch(sql, params)

    monkeypatch.setattr(selectors, "_fetch", recorded)
    page = find(agent_a, "kafka ledger", limit=3)
    assert page[0] == history["old_all"].pk  # every term, in the wide window only
    assert history["other_agent"].pk not in page
    sql, params = next((s, p) for s, p in statements if "texted" in s)
    assert "q_rare" in params and "q_wide" in params
    with psycopg.ClientCursor(connection.connection) as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the scans as on a large table: the GIN index
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        ((plan,),) = cursor.fetchall()

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    every_term = next(n for n in nodes(plan[0]["Plan"]) if n.get("Subplan Name") == "CTE allq")
    assert every_term["Actual Rows"] == 1
    assert [n["Node Type"] for n in nodes(every_term) if n.get("Relation Name") == "vault_vaultentry"] == []
