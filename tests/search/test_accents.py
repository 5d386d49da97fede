"""A query word matches the words that differ from it only by accents (search/query.py).

The stemmers keep accents, and Portuguese is often typed without them: "configuracao" did not find
"configuração", nor "Joao" "João" (two edits, or a word too short for typo correction)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from search.query import query_compile

pytestmark = pytest.mark.django_db


def _search(api, token, q):
    response = api.get("/search", token=token, q=q, mode="lexical", kinds="entries")
    assert response.status_code == 200, response.json()
    return response.json()["results"]


@pytest.mark.parametrize("q", ["configuracao", "Joao", "JOAO", "configuracao do Joao"])
def test_a_word_typed_without_accents_finds_the_accented_text(api, agent_a, token_a, make_entry, q):
    wanted = make_entry(agent_a, "A configuração do deploy é do João desde março")
    make_entry(agent_a, "Coffee before the standup keeps the team awake")
    assert [r["id"] for r in _search(api, token_a, q)] == [wanted.pk]


def test_a_word_typed_with_accents_finds_the_text_written_without(api, agent_a, token_a, make_entry):
    wanted = make_entry(agent_a, "Rollout owner is Joao, ask him about the configuracao")
    assert [r["id"] for r in _search(api, token_a, "João")] == [wanted.pk]
    assert [r["id"] for r in _search(api, token_a, "configuração")] == [wanted.pk]


def test_the_accented_word_found_is_highlighted(api, agent_a, token_a, make_entry):
    make_entry(agent_a, "Rollout owner is João; ask him before Friday")
    [result] = _search(api, token_a, "joao")
    assert "**João**" in result["snippet"]


def test_excluding_a_word_without_accents_excludes_the_accented_one(api, agent_a, token_a, make_entry):
    make_entry(agent_a, "Rollout owner is João")
    kept = make_entry(agent_a, "Rollout owner is Maria")
    assert [r["id"] for r in _search(api, token_a, "rollout -Joao")] == [kept.pk]


def test_only_accents_make_a_match_not_any_similar_word(agent_a, make_entry):
    make_entry(agent_a, "A configuração e a configuradora")
    term = query_compile("configuracao").terms[0].tsquery
    # The accented word's English lexeme (the English stemmer keeps the word whole) is an alternative;
    # "configuradora", as near in spelling but not an accent variant, is not.
    assert "'configuração'" in term
    assert "configurador" not in term


def test_the_accent_look_up_adds_no_statement(agent_a, make_entry):
    """It runs inside the statement that stems the words and finds their completions."""
    make_entry(agent_a, "A configuração do João")
    with CaptureQueriesContext(connection) as plain:
        query_compile("Rafa")
    with CaptureQueriesContext(connection) as folded:
        compiled = query_compile("Joao")
    assert "jo" in compiled.terms[0].tsquery and "'joã" in compiled.terms[0].tsquery
    assert len(folded.captured_queries) == len(plain.captured_queries)
