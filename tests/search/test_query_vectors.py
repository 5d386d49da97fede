"""The query's embedding (search/semantic.py): computed once per (model, text) and kept in a bounded
cache, embedded in the background while the lexical arm runs, and a backend that cannot embed leaves
hybrid search with its lexical results."""

import time

import pytest

from memoryproject.embeddings import EmbeddingError
from search import semantic
from search.embedding_index import pgvector_installed


class CountingEmbedder:
    model_id = "counting/4"
    dimensions = 4

    def __init__(self, fail: bool = False):
        self.calls: list[str] = []
        self.fail = fail

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        if self.fail:
            raise EmbeddingError("the embeddings server is down")
        return [float(len(text)), 1.0, 0.0, 0.0]


@pytest.fixture
def counting(monkeypatch):
    embedder = CountingEmbedder()
    monkeypatch.setattr(semantic, "embedder_get", lambda: embedder)
    semantic.query_cache_clear()
    yield embedder
    semantic.query_cache_clear()


def test_a_repeated_query_is_embedded_once(counting):
    first = semantic.query_vector("where is the ledger")
    second = semantic.query_vector("where is the ledger")
    assert first == second == (19.0, 1.0, 0.0, 0.0)
    assert counting.calls == ["where is the ledger"]


def test_the_cache_is_bounded_and_drops_the_least_recently_used(counting, monkeypatch):
    monkeypatch.setattr(semantic, "QUERY_CACHE_SIZE", 2)
    semantic.query_vector("a")
    semantic.query_vector("b")
    semantic.query_vector("a")  # "a" is now the most recently used
    semantic.query_vector("c")  # evicts "b"
    assert len(semantic._query_cache) == 2
    semantic.query_vector("a")
    semantic.query_vector("b")
    assert counting.calls == ["a", "b", "c", "b"]


def test_a_cache_size_of_zero_turns_the_cache_off(counting, monkeypatch):
    monkeypatch.setattr(semantic, "QUERY_CACHE_SIZE", 0)
    semantic.query_vector("a")
    semantic.query_vector("a")
    assert counting.calls == ["a", "a"] and not semantic._query_cache


def test_the_background_embedding_gives_the_same_vector(counting):
    assert semantic.query_vector_start("kafka retention").result(timeout=10) == semantic.query_vector(
        "kafka retention"
    )
    assert counting.calls == ["kafka retention"]


def test_a_query_that_cannot_be_embedded_gives_none_and_is_not_cached(monkeypatch):
    embedder = CountingEmbedder(fail=True)
    monkeypatch.setattr(semantic, "embedder_get", lambda: embedder)
    monkeypatch.setattr(semantic, "QUERY_EMBED_PAUSE_SECONDS", 0.2)
    semantic.query_cache_clear()
    assert semantic.query_vector("x") is None
    assert semantic.query_vector("x") is None  # within the pause: not asked again
    assert embedder.calls == ["x"]
    time.sleep(0.25)
    assert semantic.query_vector("x") is None  # after it: asked again, the failure was not cached
    assert embedder.calls == ["x", "x"]


@pytest.mark.django_db
def test_hybrid_search_with_a_backend_down_answers_lexically(api, token_a, agent_a, make_entry, monkeypatch):
    if not pgvector_installed():
        pytest.skip("this database has no pgvector (the run on the embedded PostgreSQL 18 covers this)")
    semantic._pgvector_by_database.clear()
    embedder = CountingEmbedder(fail=True)
    monkeypatch.setattr(semantic, "embedder_get", lambda: embedder)
    make_entry(agent_a, "kafka retention is seven days")
    response = api.get("/search", q="kafka", mode="hybrid", token=token_a)
    assert response.status_code == 200
    assert [r["arms"] for r in response.json()["results"]] == [["lexical"]]
    assert embedder.calls == ["kafka"]


@pytest.mark.django_db
def test_context_embeds_once_scans_once_and_ranks_as_a_search_of_each_category(
    api, token_a, agent_a, make_entry, monkeypatch
):
    from search import fusion, selectors
    from search.embedding_index import embeddings_refresh
    from search.query import query_compile
    from search.ranking import SearchFilters
    from vault.models import WorkspaceFile

    if not pgvector_installed():
        pytest.skip("this database has no pgvector (the run on the embedded PostgreSQL 18 covers this)")
    semantic._pgvector_by_database.clear()
    semantic.query_cache_clear()
    for i in range(4):
        make_entry(agent_a, f"Invoices {i} are kept in the ledger database with nightly backups.")
        make_entry(agent_a, f"Lesson {i}: check the ledger backups before a migration.", category="lessons")
    make_entry(agent_a, "The billing documents live in PostgreSQL.", category="lessons")
    WorkspaceFile.objects.all().delete()
    embeddings_refresh()
    scans = []
    real_rows = fusion.semantic_rows
    monkeypatch.setattr(fusion, "semantic_rows", lambda *a, **k: scans.append(a) or real_rows(*a, **k))
    command = "where are the invoices and their backups kept?"
    found = selectors.entries_best_by_category(
        agent_a, compiled=query_compile(command), limits={"decisions": 3, "lessons": 2}, q=command
    )
    assert len(scans) == 1
    scope = selectors.SearchScope(agent_a.project_id, [agent_a.pk])
    for category, n in (("decisions", 3), ("lessons", 2)):
        alone = selectors.search_run(
            q=command, scope=scope, filters=SearchFilters(kinds=("entries",), category=category, limit=n)
        ).results
        assert [(r["id"], r["score"], r["arms"]) for r in found[category]] == [
            (r["id"], r["score"], r["arms"]) for r in alone
        ]
        assert len(found[category]) == n


@pytest.mark.django_db
def test_context_embeds_its_command_once_while_the_other_sections_are_read(
    counting, agent_a, make_entry, monkeypatch
):
    """The command is embedded in the background from the start of the build, and the ranked
    sections take that same embedding (not a second one: with the query cache off, a second
    request would embed again)."""
    from search import services

    if not pgvector_installed():
        pytest.skip("this database has no pgvector (the run on the embedded PostgreSQL 18 covers this)")
    semantic._pgvector_by_database.clear()
    monkeypatch.setattr(semantic, "QUERY_CACHE_SIZE", 0)
    make_entry(agent_a, "Invoices are kept in the ledger database with nightly backups.")
    order = []
    real_start, real_handoff = services.query_vector_start, services._handoff
    monkeypatch.setattr(services, "query_vector_start", lambda q: order.append("embed") or real_start(q))
    monkeypatch.setattr(services, "_handoff", lambda agent: order.append("handoff") or real_handoff(agent))
    command = "where are the invoices kept?"
    built = services.context_build(agent=agent_a, command=command)
    assert counting.calls == [command]
    assert order == ["embed", "handoff"]
    assert "Invoices are kept" in built["text"]
