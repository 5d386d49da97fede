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


def test_memory_search_takes_the_rest_apis_status_tags_mode_and_offset(mcp_live_url, dev, dev_token):
    """memory_search refused status, tags_mode and offset as unknown arguments: an agent over MCP could
    never find an archived entry, ask for entries holding all of several tags, or page past its limit."""
    services.entry_create(agent=dev, category="decisions", content="The ledger ran on MySQL", tags=["db"])
    services.entry_create(
        agent=dev, category="decisions", content="The ledger ran on Oracle", tags=["db"], status="archived"
    )
    both = services.entry_create(
        agent=dev, category="decisions", content="The ledger runs on PostgreSQL", tags=["db", "prod"]
    )
    cases = [
        {"status": "archived"},
        {"status": "all"},
        {"tags": ["db", "prod"], "tags_mode": "all"},
        {"limit": 1, "offset": 1},
    ]
    rest_params = [
        {"status": "archived"},
        {"status": "all"},
        {"tag": ["db", "prod"], "tags_mode": "all"},
        {"limit": 1, "offset": 1},
    ]
    client = ApiClient(dev_token)
    expected = []
    for params in rest_params:
        response = client.get("/search", q="ledger", kinds="entries", mode="lexical", **params)
        assert response.status_code == 200, response.json()
        expected.append([r["id"] for r in response.json()["results"]])
    assert (
        len(expected[0]) == 1 and len(expected[1]) == 3 and expected[2] == [both.pk] and len(expected[3]) == 1
    )

    async def body():
        async with http_session(f"{mcp_live_url}/mcp", dev_token) as session:
            return [
                await scenarios.call(
                    session, "memory_search", query="ledger", kinds=["entries"], mode="lexical", **arguments
                )
                for arguments in cases
            ]

    answers = run(body)
    assert [[r["id"] for r in answer["results"]] for answer in answers] == expected
