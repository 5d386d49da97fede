"""Search modes (search/fusion.py): lexical, semantic and hybrid; which arm found each result; the
filters apply to semantic hits; without pgvector search stays lexical and says so."""

import threading

import pytest
from django.db import transaction
from django.utils import timezone

from search.embedding_index import embeddings_refresh, pgvector_installed
from search.fusion import fuse
from search.selectors import search_run
from vault.models import WorkspaceFile
from vault.workspace_templates import DEFAULT_WORKSPACE_FILES

pytestmark = pytest.mark.django_db


@pytest.fixture
def semantic_on(db):
    from search import semantic

    if not pgvector_installed():
        pytest.skip("this database has no pgvector (the run on the embedded PostgreSQL 18 covers this)")
    semantic._pgvector_by_database.clear()


def embed_all():
    WorkspaceFile.objects.filter(path__in=[path for path, _, _ in DEFAULT_WORKSPACE_FILES]).update(
        deleted_at=timezone.now()
    )
    embeddings_refresh()


def test_an_unknown_mode_is_refused(api, token_a):
    response = api.get("/search", q="kafka", mode="fuzzy", token=token_a)
    assert response.status_code == 422


def test_lexical_mode_says_which_arm_found_each_result(api, token_a, agent_a, make_entry):
    make_entry(agent_a, "kafka retention is seven days")
    results = api.get("/search", q="kafka", mode="lexical", token=token_a).json()["results"]
    assert [r["arms"] for r in results] == [["lexical"]]


def test_without_pgvector_search_is_lexical_and_semantic_mode_says_why(api, token_a, agent_a, make_entry):
    if pgvector_installed():
        pytest.skip("this database has pgvector (the run on PostgreSQL 15 covers this)")
    make_entry(agent_a, "kafka retention is seven days")
    default = api.get("/search", q="kafka", token=token_a).json()["results"]
    assert [r["arms"] for r in default] == [["lexical"]]
    assert api.get("/search", q="kafka", mode="hybrid", token=token_a).status_code == 200
    refused = api.get("/search", q="kafka", mode="semantic", token=token_a)
    assert refused.status_code == 422 and "pgvector" in refused.json()["detail"]


def test_fusion_marks_both_arms_and_applies_the_factors():
    lexical = [
        {"kind": "entry", "id": 1, "score": 4.0, "factor": 2.0, "text": "a"},
        {"kind": "entry", "id": 2, "score": 1.0, "factor": 1.0, "text": "b"},
    ]
    semantic = [
        {"kind": "entry", "id": 2, "similarity": 0.9, "factor": 1.0, "text": "b"},
        {"kind": "message", "id": 3, "similarity": 0.5, "factor": 1.0, "text": "c"},
    ]
    for method in ("minmax", "rrf"):
        fused = {(r["kind"], r["id"]): r for r in fuse(lexical, semantic, method)}
        assert fused[("entry", 1)]["arms"] == ["lexical"]
        assert fused[("entry", 2)]["arms"] == ["lexical", "semantic"]
        assert fused[("message", 3)]["arms"] == ["semantic"]
    minmax = {(r["kind"], r["id"]): r["score"] for r in fuse(lexical, semantic, "minmax")}
    # entry 1: best lexical (text score 2 of 2: 1.0 x 0.5) x its factor 2; entry 2: text score 1 of
    # 2 (0.5 x 0.5) + best semantic (1.0 x 0.5); message: lowest semantic, min-max 0
    assert minmax[("entry", 1)] == pytest.approx(1.0)
    assert minmax[("entry", 2)] == pytest.approx(0.75)
    assert minmax[("message", 3)] == pytest.approx(0.0)


@pytest.mark.usefixtures("semantic_on")
def test_a_paraphrase_with_no_shared_word_is_found_in_hybrid_mode(api, token_a, agent_a, make_entry):
    answer = make_entry(agent_a, "Our invoices are stored in PostgreSQL with nightly backups.")
    make_entry(agent_a, "The cat sleeps on the sofa all afternoon.")
    make_entry(agent_a, "We play football every Sunday morning.")
    embed_all()
    question = "which database keeps the billing documents?"
    lexical = api.get("/search", q=question, mode="lexical", kinds="entries", token=token_a).json()["results"]
    assert answer.pk not in [r["id"] for r in lexical]
    hybrid = api.get("/search", q=question, kinds="entries", token=token_a).json()["results"]
    assert hybrid[0]["id"] == answer.pk and hybrid[0]["arms"] == ["semantic"]
    semantic = api.get("/search", q=question, mode="semantic", kinds="entries", token=token_a).json()
    assert semantic["results"][0]["id"] == answer.pk


@pytest.mark.usefixtures("semantic_on")
def test_filters_apply_to_semantic_hits(api, token_a, agent_a, make_entry):
    make_entry(agent_a, "Our invoices are stored in PostgreSQL with nightly backups.", category="lessons")
    decision = make_entry(agent_a, "Billing documents live in the ledger database.", category="decisions")
    embed_all()
    question = "which database keeps the billing documents?"
    found = api.get(
        "/search", q=question, mode="semantic", kinds="entries", category="decisions", token=token_a
    ).json()["results"]
    assert [r["id"] for r in found] == [decision.pk]
    past = api.get(
        "/search", q=question, mode="semantic", kinds="entries", until="2000-01-01T00:00:00Z", token=token_a
    ).json()["results"]
    assert past == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("semantic_on")
def test_outside_a_transaction_the_semantic_arm_runs_beside_the_lexical_one(
    api, token_a, agent_a, make_entry, monkeypatch
):
    """With no transaction open, the semantic arm runs on the query-embed thread and its own database
    connection while the lexical arm runs on the request's; inside one, on the request's connection
    (which alone sees the transaction's rows). The same results either way, for search and for context."""
    from search import fusion

    answer = make_entry(agent_a, "Our invoices are stored in PostgreSQL with nightly backups.")
    make_entry(agent_a, "The cat sleeps on the sofa all afternoon.", category="lessons")
    make_entry(agent_a, "Invoices are numbered per year, and the database keeps every one.")
    embed_all()
    threads = []
    semantic_rows = fusion.semantic_rows

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return semantic_rows(*args, **kwargs)

    monkeypatch.setattr(fusion, "semantic_rows", recorded)
    question = "which database keeps the billing documents?"
    command = {"command": "where are the invoices kept?", "budget_tokens": 2000}

    beside = api.get("/search", q=question, kinds="entries", token=token_a).json()["results"]
    context_beside = api.post("/agents/agent-a/context", command, token=token_a).json()
    assert [name.startswith("query-embed") for name in threads] == [True, True]
    with transaction.atomic():
        inside = api.get("/search", q=question, kinds="entries", token=token_a).json()["results"]
        context_inside = api.post("/agents/agent-a/context", command, token=token_a).json()
    assert threads[2:] == [threading.current_thread().name] * 2
    found = {r["id"]: r["arms"] for r in beside}
    assert found[answer.pk] == ["semantic"] and ["lexical", "semantic"] in found.values()
    # (The first search counted an access of each result, so the scores, not the order, move.)
    assert [(r["id"], r["arms"]) for r in beside] == [(r["id"], r["arms"]) for r in inside]
    assert context_beside["text"] == context_inside["text"] and "nightly backups" in context_beside["text"]


def test_zscore_fusion_scales_each_arm_and_gives_a_missing_score_the_arms_floor():
    """The default fusion: BM25 as standard scores among the lexical rows (the arm's unused depth
    counted as rows of score 0), similarity as standard scores against the whole scope's
    (ScopeSimilarity), averaged with the lexical share the evidence gives (here the best row scores a
    tenth of what the query could: 0.3 / 0.7), then scaled to 0..1 before the factors."""
    from search.fusion import FUSION_DEPTH, SemanticRows, lexical_weight
    from search.semantic import ScopeSimilarity

    lexical = [
        {"kind": "entry", "id": 1, "score": 6.0, "factor": 1.0, "text": "a", "idf_total": 60.0},
        {"kind": "entry", "id": 2, "score": 4.0, "factor": 1.0, "text": "b", "idf_total": 60.0},
        {"kind": "entry", "id": 3, "score": 2.0, "factor": 1.0, "text": "c", "idf_total": 60.0},
    ]
    semantic = SemanticRows(
        [
            {"kind": "entry", "id": 4, "similarity": 0.94, "factor": 1.0, "text": "d"},
            {"kind": "entry", "id": 3, "similarity": 0.86, "factor": 1.0, "text": "c"},
        ]
    )
    # The scope's usual similarity to this query is 0.80 +- 0.02: entry 4 stands out by 7 deviations.
    semantic.scope = ScopeSimilarity(count=500, mean=0.80, sd=0.02)
    scores = {r["id"]: r["score"] for r in fuse(lexical, semantic, "zscore")}
    # Lexical: 6, 4, 2 and 47 zeros; entry 4, which no term matched, takes the z of a 0.
    values = [6.0, 4.0, 2.0] + [0.0] * (FUSION_DEPTH - 3)
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    lex = {1: (6 - mean) / sd, 2: (4 - mean) / sd, 3: (2 - mean) / sd, 4: -mean / sd}
    # Semantic: 4 -> 7, 3 -> 3; entries 1 and 2 (no stored vector to read here) take the floor, 3.
    sem = {1: 3.0, 2: 3.0, 3: 3.0, 4: 7.0}
    w = lexical_weight(0.1)
    assert w == pytest.approx(0.3)
    fused = {k: w * lex[k] + (1 - w) * sem[k] for k in lex}
    # Scaled above a row of no evidence: BM25 0, the scope's usual similarity (z 0).
    base, high = w * (-mean / sd), max(fused.values())
    for k, value in fused.items():
        assert scores[k] == pytest.approx((value - base) / (high - base), abs=1e-6), k
    assert max(scores, key=scores.get) == 4 and min(scores, key=scores.get) == 3
    # With the semantic arm silent, the relevance is BM25 / its best, as in the min-max fusion.
    alone = {r["id"]: r["score"] for r in fuse(lexical, SemanticRows(), "zscore")}
    assert alone == pytest.approx({1: 1.0, 2: 4 / 6, 3: 2 / 6})
    # Against the arm's own rows instead (no scope known), the same hit stands out much less.
    semantic.scope = None
    own = {r["id"]: r["score"] for r in fuse(lexical, semantic, "zscore")}
    assert max(own, key=own.get) == 1


def test_the_lexical_share_follows_the_strength_of_its_evidence():
    """A query whose words a memory holds all (its best BM25 row scores what the query could) keeps
    that memory first; the same arms when the best row matched only a word or two of a long question
    (a paraphrase's chance match) let the memory that stands out semantically lead."""
    from search.fusion import (
        ZSCORE_EVIDENCE_FULL,
        ZSCORE_LEXICAL_WEIGHT,
        ZSCORE_LEXICAL_WEIGHT_MIN,
        SemanticRows,
        lexical_weight,
    )
    from search.semantic import ScopeSimilarity

    def ranked(idf_total):
        lexical = [
            {"kind": "entry", "id": 1, "score": 6.0, "factor": 1.0, "text": "a", "idf_total": idf_total},
            {"kind": "entry", "id": 2, "score": 4.0, "factor": 1.0, "text": "b", "idf_total": idf_total},
        ]
        semantic = SemanticRows(
            [
                {"kind": "entry", "id": 4, "similarity": 0.94, "factor": 1.0, "text": "d"},
                {"kind": "entry", "id": 1, "similarity": 0.86, "factor": 1.0, "text": "a"},
            ]
        )
        semantic.scope = ScopeSimilarity(count=500, mean=0.80, sd=0.02)
        rows = fuse(lexical, semantic, "zscore")
        assert all("idf_total" not in row for row in rows)
        return [row["id"] for row in rows]

    assert ranked(idf_total=6.0)[0] == 1  # every term matched: the keyword match leads
    assert ranked(idf_total=100.0)[0] == 4  # 6 % of the query: the semantic standout leads
    assert lexical_weight(0.0) == ZSCORE_LEXICAL_WEIGHT_MIN
    assert lexical_weight(ZSCORE_EVIDENCE_FULL) == lexical_weight(1.0) == ZSCORE_LEXICAL_WEIGHT
    assert lexical_weight(None) == ZSCORE_LEXICAL_WEIGHT  # rows that do not say: the full share
    assert ZSCORE_LEXICAL_WEIGHT_MIN < lexical_weight(ZSCORE_EVIDENCE_FULL / 2) < ZSCORE_LEXICAL_WEIGHT


@pytest.mark.usefixtures("semantic_on")
def test_a_search_measures_its_lexical_evidence_against_what_the_query_could_score(
    agent_a, make_entry, monkeypatch
):
    """The lexical rows carry the most their query could score in their table (the sum of its terms'
    idf), and the fusion weighs the lexical arm by the best row's share of it: a memory holding both
    words of the query is strong evidence, one word of five is weak."""
    from search import fusion
    from search.ranking import SearchFilters, SearchScope

    make_entry(agent_a, "Kafka keeps events for seven days.")
    make_entry(agent_a, "The cat sleeps on the sofa all afternoon.")
    embed_all()
    seen = []
    weight = fusion.lexical_weight
    monkeypatch.setattr(fusion, "lexical_weight", lambda evidence: seen.append(evidence) or weight(evidence))

    def evidence(q):
        seen.clear()
        results = search_run(
            q=q,
            scope=SearchScope(agent_a.project_id, [agent_a.pk]),
            filters=SearchFilters(kinds=("entries",)),
        ).results
        assert results and all("idf_total" not in row for row in results)
        return seen[0]

    strong = evidence("kafka events")
    weak = evidence("kafka offsets lagging partitions consumers")
    assert 0 < weak < fusion.ZSCORE_EVIDENCE_FULL < strong <= 1.0


def test_zscore_fusion_gives_a_lone_exact_match_its_full_lexical_weight():
    """One lexical row is not "the mean of one" (z 0): against the arm's unused depth it stands out,
    so a keyword only one memory holds still wins over the semantic arm's mild preferences."""
    from search.fusion import SemanticRows
    from search.semantic import ScopeSimilarity

    lexical = [{"kind": "entry", "id": 1, "score": 9.0, "factor": 1.0, "text": "Turborepo monorepo"}]
    semantic = SemanticRows(
        [
            {"kind": "entry", "id": 2, "similarity": 0.86, "factor": 1.0, "text": "b"},
            {"kind": "entry", "id": 1, "similarity": 0.85, "factor": 1.0, "text": "Turborepo monorepo"},
        ]
    )
    semantic.scope = ScopeSimilarity(count=300, mean=0.80, sd=0.02)
    ranked = [r["id"] for r in fuse(lexical, semantic, "zscore")]
    assert ranked == [1, 2]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("semantic_on")
def test_the_lexical_rows_similarity_is_read_on_the_request_thread_while_the_scan_runs(
    api, token_a, agent_a, make_message, monkeypatch
):
    """Outside a transaction, the request's thread reads the similarity of its lexical rows as soon as
    the query's vector is known, while the semantic scan runs on the query-embed thread: one statement
    a search, none left for the fusion, and the same scores as when the fusion read them itself."""
    from search import fusion, semantic

    for n in range(12):
        make_message(agent_a, f"Release {n}: the deploy script copies the build to the servers.")
    make_message(agent_a, "Our invoices are stored in PostgreSQL with nightly backups.")
    embed_all()
    monkeypatch.setattr(fusion, "FUSION_DEPTH", 3)  # the arm returns 3 of the 13: most rows are lexical only
    reads, read_done, scan_saw_read = [], threading.Event(), []
    scan = fusion.semantic_rows

    def scan_after_the_read(*args, **kwargs):
        # The scan waits for the read (at most 5 s): had the read waited for the scan, it would not come.
        scan_saw_read.append(read_done.wait(timeout=5))
        return scan(*args, **kwargs)

    def recorded(vector, items):
        reads.append((threading.current_thread().name, sorted(items)))
        similarity = semantic.similarities(vector, items)
        read_done.set()
        return similarity

    monkeypatch.setattr(fusion, "semantic_rows", scan_after_the_read)
    monkeypatch.setattr(fusion, "similarities", recorded)
    query = {"q": "deploy script for the billing database", "kinds": "messages", "limit": 3}
    early = api.get("/search", token=token_a, **query).json()["results"]
    assert [name for name, _ in reads] == [threading.current_thread().name]
    assert scan_saw_read == [True]
    lexical_keys = reads[0][1]
    assert len(lexical_keys) == 3 and all(kind == "message" for kind, _ in lexical_keys)

    reads.clear()
    monkeypatch.setattr(fusion, "lexical_similarities", lambda arm, rows: {})
    late = api.get("/search", token=token_a, **query).json()["results"]
    # Without the early read, the fusion reads the rows the semantic arm did not return, itself.
    assert len(reads) == 1 and set(reads[0][1]) <= set(lexical_keys)
    assert [(r["id"], r["arms"]) for r in early] == [(r["id"], r["arms"]) for r in late]
    assert [r["score"] for r in early] == pytest.approx([r["score"] for r in late], rel=1e-4)


@pytest.mark.django_db(transaction=True)
def test_a_semantic_arm_that_fails_before_its_vector_does_not_leave_the_search_waiting(agent_a, monkeypatch):
    from search import fusion
    from search.ranking import SearchFilters, SearchScope

    def broken(q):
        raise RuntimeError("the model is gone")

    monkeypatch.setattr(fusion, "query_vector", broken)
    arm = fusion.semantic_rows_start(
        "anything",
        SearchScope(agent_a.project_id, [agent_a.pk]),
        SearchFilters(kinds=("entries",)),
        ["entries"],
        5,
    )
    assert arm.vector(timeout=10) is None
    assert fusion.lexical_similarities(arm, [{"kind": "entry", "id": 1}]) == {}
    with pytest.raises(RuntimeError, match="the model is gone"):
        arm.result()


@pytest.mark.usefixtures("semantic_on")
def test_the_scope_statistics_and_a_lexical_rows_similarity_come_from_the_stored_vectors(
    agent_a, make_entry, monkeypatch
):
    from django.db import connection

    from search import semantic
    from search.fusion import semantic_rows
    from search.ranking import SearchFilters, SearchScope

    for text in (
        "Our invoices are stored in PostgreSQL with nightly backups.",
        "The cat sleeps on the sofa all afternoon.",
        "We play football every Sunday morning.",
        "Kafka keeps events for seven days.",
    ):
        make_entry(agent_a, text)
    embed_all()
    question = "which database keeps the billing documents?"
    vector = semantic.query_vector(question)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), avg(1 - (vector <=> %s::vector)), stddev_pop(vector <=> %s::vector)"
            " FROM search_embedding WHERE agent_id = %s AND kind = 'entry'",
            [semantic._vector_text(vector)] * 2 + [agent_a.pk],
        )
        count, mean, sd = cursor.fetchone()
    scope = SearchScope(agent_a.project_id, [agent_a.pk])
    filters = SearchFilters(kinds=("entries",))
    # The exact scan, then the index walk and its sample. (What the walk itself finds in a table of
    # four rows, among the test run's dead ones, is pgvector's business: only the statistics here.)
    rows = []
    for exact_max in (1_000_000, 0):
        monkeypatch.setattr(semantic, "EXACT_SCAN_MAX_ROWS", exact_max)
        semantic._scope_rows_cache.clear()
        walked = semantic_rows(question, scope, filters, ["entries"], depth=1)
        rows = walked if exact_max else rows
        assert walked.vector == vector
        assert walked.scope.count == count == 4
        assert walked.scope.mean == pytest.approx(mean, abs=1e-6)
        assert walked.scope.sd == pytest.approx(sd, abs=1e-6)
    assert len(rows) == 1
    # The entries the arm did not return (depth 1) get their own similarity, read by id.
    others = [("entry", pk) for pk in agent_a.entries.exclude(pk=rows[0]["id"]).values_list("pk", flat=True)]
    read = semantic.similarities(vector, others)
    assert set(read) == set(others) and all(value < rows[0]["similarity"] for value in read.values())


@pytest.mark.usefixtures("semantic_on")
def test_semantic_mode_keeps_its_own_min_max_scale(api, token_a, agent_a, make_entry, monkeypatch):
    """With one arm there is nothing to put on a common scale: semantic mode ranks by the similarity
    min-max over its own rows (the z-scale let the factors reorder bench_quality's semantic answers),
    while hybrid mode uses the configured fusion."""
    from search import fusion

    make_entry(agent_a, "Our invoices are stored in PostgreSQL with nightly backups.")
    make_entry(agent_a, "The cat sleeps on the sofa all afternoon.")
    embed_all()
    methods = []
    fuse_real = fusion.fuse

    def recorded(lexical, semantic, method=None, **kwargs):
        methods.append(method)
        return fuse_real(lexical, semantic, method, **kwargs)

    monkeypatch.setattr(fusion, "fuse", recorded)
    question = "which database keeps the billing documents?"
    for mode in ("semantic", "hybrid"):
        response = api.get("/search", q=question, mode=mode, kinds="entries", token=token_a)
        assert response.status_code == 200 and response.json()["results"]
    assert methods == ["minmax", None]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("semantic_on")
def test_the_semantic_arms_own_connection_keeps_its_scan_settings_instead_of_a_transaction_a_search(
    agent_a, make_entry, monkeypatch
):
    """On the query-embed thread's own connection the scan's settings (no parallel workers for a large
    exact scan; the HNSW walk's ef_search and iterative scan) are set once for the session, not SET
    LOCAL in a transaction of the scan's own on every search (three round trips more on the arm's
    path). Inside a transaction the arm runs on the request's connection and keeps SET LOCAL. The
    hits are the same either way."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from search import fusion, semantic
    from search.ranking import SearchFilters, SearchScope

    for text in (
        "Our invoices are stored in PostgreSQL with nightly backups.",
        "The cat sleeps on the sofa all afternoon.",
        "Kafka keeps events for seven days.",
    ):
        make_entry(agent_a, text)
    embed_all()
    monkeypatch.setattr(semantic, "SERIAL_SCAN_MIN_ROWS", 0)  # every exact scan asks for its setting
    statements = []
    search = fusion.semantic_search

    def recorded(**kwargs):
        with CaptureQueriesContext(connection) as queries:
            hits = search(**kwargs)
        statements.extend(q["sql"] for q in queries.captured_queries)
        return hits

    monkeypatch.setattr(fusion, "semantic_search", recorded)
    scope, filters = SearchScope(agent_a.project_id, [agent_a.pk]), SearchFilters(kinds=("entries",))

    def arm(q):
        return [
            (r["id"], r["similarity"])
            for r in fusion.semantic_rows_start(q, scope, filters, ["entries"], 3).result()
        ]

    for exact_max, setting in ((1_000_000, "max_parallel_workers_per_gather"), (0, "hnsw.ef_search")):
        monkeypatch.setattr(semantic, "EXACT_SCAN_MAX_ROWS", exact_max)
        semantic._scope_rows_cache.clear()
        # A connection of the thread's opened by an earlier test could pass DATABASE_CONN_MAX_AGE
        # between the two arms, and its successor would set the setting again: a new one here.
        semantic.background_connections_close()
        statements.clear()
        own = [arm("where are the invoices kept?"), arm("which queue keeps events?")]
        assert not [sql for sql in statements if "SET LOCAL" in sql]
        assert len([sql for sql in statements if f"SET {setting} =" in sql]) <= 1
        statements.clear()
        with transaction.atomic():
            local = [arm("where are the invoices kept?"), arm("which queue keeps events?")]
        assert len([sql for sql in statements if f"SET LOCAL {setting} =" in sql]) == 2
        assert own == local and own[0], (exact_max, own, local)
