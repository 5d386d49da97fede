"""memory_search takes what GET /search takes and answers what it answers, through a real client session."""

import pytest

from search.embedding_index import embeddings_refresh
from search.semantic import semantic_enabled
from tests.conftest import ApiClient
from tests.mcp import scenarios
from tests.mcp.conftest import http_session, run
from vault import services


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "semantic"])
def test_memory_search_takes_the_rest_apis_mode_and_says_which_arm_found_each_result(
    mcp_live_url, dev, dev_token, mode
):
    """memory_search had no `mode`: memory_search(mode="lexical") was refused as an unknown argument,
    where GET /search?mode= chooses the retrieval (an unknown mode a 422, semantic refused while off)."""
    services.entry_create(agent=dev, category="decisions", content="The ledger runs on PostgreSQL 18")
    if semantic_enabled():  # the embedded PostgreSQL 18 has pgvector; PostgreSQL 15 searches lexically
        embeddings_refresh()
    rest = ApiClient(dev_token).get("/search", q="ledger postgresql", mode=mode)

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            arguments = {"query": "ledger postgresql", "mode": mode}
            if rest.status_code != 200:
                return await scenarios.refused(session, "memory_search", **arguments)
            return await scenarios.call(session, "memory_search", **arguments)

    answer = run(body)
    if rest.status_code != 200:  # semantic search is off in this database
        assert rest.status_code == 422 and answer.startswith(rest.json()["detail"])
        return
    expected = [(r["kind"], r["id"], r["arms"]) for r in rest.json()["results"]]
    assert expected and [(r["kind"], r["id"], r["arms"]) for r in answer["results"]] == expected


def test_an_unknown_mode_is_refused_naming_it(mcp_live_url, dev, dev_token):
    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return await scenarios.refused(session, "memory_search", query="ledger", mode="fuzzy")

    refused = run(body)
    assert refused.startswith("Invalid input: mode:") and "'lexical'" in refused
