"""Scope lexemes ('#a<agent id>', '#p<project id>') in the search vectors: the GIN index answers the
agent/project scope, the lexemes never reach results, snippets or the vocabulary, and no query can
produce them."""

import pytest
from django.db import connection

from search.models import VocabularyWord
from search.query import query_compile
from search.ranking import scope_tsquery
from search.selectors import SearchFilters, SearchScope, search_run
from sessions_app.models import Message
from vault import services
from vault.models import VaultEntry, WorkspaceFile

pytestmark = pytest.mark.django_db

TABLES = {"entries": VaultEntry, "messages": Message, "files": WorkspaceFile}


def scope_matches(model, tsquery: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {model._meta.db_table} WHERE search_vector @@ %s::tsquery",  # noqa: S608
            [tsquery],
        )
        return {row[0] for row in cursor.fetchall()}


def test_every_search_vector_carries_its_own_agent_and_project_lexemes(
    agent_a, agent_b, make_entry, make_message
):
    entry = make_entry(agent_a, "Kafka partitions are keyed by tenant")
    message = make_message(agent_a, "kafka again")
    services.file_write(agent=agent_a, path="memory/notes.md", content="kafka notes", changed_by="test")
    file_ids = set(WorkspaceFile.objects.filter(agent=agent_a).values_list("id", flat=True))
    own_agent = scope_tsquery(SearchScope(agent_a.project_id, [agent_a.pk]))
    other_agent = scope_tsquery(SearchScope(agent_b.project_id, [agent_b.pk]))
    project = scope_tsquery(SearchScope(agent_a.project_id, None))
    assert scope_matches(VaultEntry, own_agent) == {entry.pk}
    assert scope_matches(Message, own_agent) == {message.pk}
    assert scope_matches(WorkspaceFile, own_agent) == file_ids
    for model in TABLES.values():
        assert scope_matches(model, own_agent).isdisjoint(scope_matches(model, other_agent))
        assert scope_matches(model, own_agent) <= scope_matches(model, project)


def test_another_agents_entries_are_never_returned_even_when_they_flood_the_candidates(
    settings, agent_a, agent_b, make_entry, make_message
):
    settings.MEMORY_SEARCH_CANDIDATES = 50
    for i in range(80):
        make_entry(agent_b, f"Redis eviction policy note {i}: allkeys-lru for the session cache")
    mine = [make_entry(agent_a, f"Redis eviction for agent a, case {i}") for i in range(3)]
    make_message(agent_b, "redis eviction policy chatter")
    outcome = search_run(
        q="redis eviction policy",
        scope=SearchScope(agent_a.project_id, [agent_a.pk]),
        filters=SearchFilters(limit=100),
    )
    assert {(r["kind"], r["id"]) for r in outcome.results} == {("entry", e.pk) for e in mine}
    assert {r["agent"] for r in outcome.results} == {"agent-a"}


def test_project_scope_never_returns_another_projects_rows(
    api, admin_token, agent_a, outsider_agent, make_entry, outsider_token
):
    mine = make_entry(agent_a, "Grafana dashboards live in the ops folder")
    theirs = make_entry(outsider_agent, "Grafana dashboards live in the ops folder")
    response = api.get("/search", token=outsider_token, q="grafana dashboards", kinds="entries")
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["results"]] == [theirs.pk]
    response = api.get("/search", token=admin_token, q="grafana dashboards", kinds="entries")
    assert [r["id"] for r in response.json()["results"]] == [mine.pk]


@pytest.mark.parametrize("template", ["#a{a}", "a{a}", "#p{p}", "p{p}", '"#a{a}"', "#a{a}*", "a{a} OR p{p}"])
def test_queries_shaped_like_scope_lexemes_match_nothing(api, token_a, agent_a, make_entry, template):
    make_entry(agent_a, "Nothing here mentions any identifiers at all")
    q = template.format(a=agent_a.pk, p=agent_a.project_id)
    response = api.get("/search", token=token_a, q=q)
    if response.status_code == 422:  # nothing searchable left: fine, it cannot match either
        return
    assert response.status_code == 200, response.json()
    assert response.json()["results"] == []


def test_compiled_queries_never_contain_a_scope_prefix(db):
    for q in ["#a12 #p3", "a12 p3", "#a12*", "-#a12 kafka", '"#p3 x"']:
        try:
            compiled = query_compile(q)
        except Exception:  # noqa: BLE001 - nothing searchable is fine
            continue
        assert "'#" not in compiled.match
        assert "'#" not in compiled.match_all


def test_scope_lexemes_never_reach_snippets_text_or_vocabulary(
    api, token_a, agent_a, make_entry, make_message
):
    make_entry(agent_a, "Deploys go through the blue green pipeline")
    make_message(agent_a, "the blue green pipeline failed twice")
    response = api.get("/search", token=token_a, q="blue green pipeline")
    results = response.json()["results"]
    assert {r["kind"] for r in results} >= {"entry", "message"}
    for row in results:
        assert "#a" not in row["snippet"] and "#p" not in row["snippet"]
        assert f"a{agent_a.pk}" not in row["snippet"].split()
    words = set(VocabularyWord.objects.values_list("word", flat=True))
    assert not {w for w in words if w.startswith("#")}
    assert f"a{agent_a.pk}" not in words and f"p{agent_a.project_id}" not in words


def test_an_empty_agent_scope_returns_nothing(agent_a, make_entry):
    make_entry(agent_a, "Kafka partitions are keyed by tenant")
    outcome = search_run(q="kafka", scope=SearchScope(agent_a.project_id, []), filters=SearchFilters())
    assert outcome.results == []
