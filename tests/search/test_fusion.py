"""Search modes (search/fusion.py): lexical, semantic and hybrid; which arm found each result; the
filters apply to semantic hits; without pgvector search stays lexical and says so."""

import threading

import pytest
from django.db import transaction
from django.utils import timezone

from search.embedding_index import embeddings_refresh, pgvector_installed
from search.fusion import fuse
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
