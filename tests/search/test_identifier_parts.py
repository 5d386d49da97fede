"""Identifiers written as one word are searched by their parts too (vault/search_text.py).

Before, "getUserById", "HTTPServerError", "500ms" or "v2.4.1" were one lexeme each: a search for
"user by id", get_user_by_id, "500 ms" or "2.4.1" did not find the memory that held them."""

import random

import pytest
from django.db import connection

from search.query import query_compile
from vault import services
from vault.search_text import identifier_parts, split_identifiers

pytestmark = pytest.mark.django_db


def _sql_parts(texts: list[str]) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT memory_identifier_parts(t) FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n",
            [texts],
        )
        return [row[0] for row in cursor.fetchall()]


def test_the_python_rule_and_the_database_function_agree():
    """Queries are cut in Python, stored text in SQL: any difference would make a query miss its text."""
    fixed = [
        "getUserById",
        "call getUserById() from src/UserService.ts",
        "HTTPServerError XMLHttpRequest fetchJSON",
        "v2.4.1 took 500ms on python3 and x86_64",
        "IDs URLs TODO plain words",
        "a3f9c2e 550e8400-e29b-41d4-a716-446655440000 k8s e2e",
        "ÁguaFria naïveBayes",
        "",
    ]
    rng = random.Random(20261127)
    alphabet = "aZbY09 x_./-:\tÉé\u00a0Mm12ABcd"
    generated = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) for _ in range(3000)]
    texts = fixed + generated
    assert [identifier_parts(t) for t in texts] == _sql_parts(texts)
    assert identifier_parts(fixed[1]) == "get User By Id() src/User Service.ts"
    assert identifier_parts(fixed[2]) == "HTTP Server Error XML Http Request fetch JSON"
    assert identifier_parts(fixed[3]) == "v 2.4.1 500 ms python 3 x 86_64"
    # No cut in words of one case, plurals of acronyms, or ids that alternate letters and digits.
    assert identifier_parts(fixed[4]) == ""
    assert identifier_parts("a3f9c2e k8s e2e") == ""


@pytest.mark.parametrize("q", ["user by id", "get user", "getUserById", "get_user_by_id", "GetUserByID"])
def test_a_camel_case_name_is_found_by_its_words(api, agent_a, token_a, make_entry, q):
    wanted = make_entry(agent_a, "The N+1 query came from getUserById inside the serializer loop")
    make_entry(agent_a, "Coffee before the standup keeps the team awake")
    response = api.get("/search", token=token_a, q=q, mode="lexical", kinds="entries")
    assert response.status_code == 200, response.json()
    assert [r["id"] for r in response.json()["results"]] == [wanted.pk], q


def test_a_camel_case_query_finds_the_snake_case_name(api, agent_a, token_a, make_entry):
    wanted = make_entry(agent_a, "Never call get_user_by_id in a loop: batch the ids")
    make_entry(agent_a, "The user asked to get the report by Friday")  # the words, apart and out of order
    response = api.get("/search", token=token_a, q="getUserById", mode="lexical", kinds="entries")
    assert [r["id"] for r in response.json()["results"]] == [wanted.pk]


@pytest.mark.parametrize(
    ("stored", "q"),
    [
        ("Upgrade to v2.4.1 fixed the leak", "2.4.1"),
        ("Upgrade to 2.4.1 fixed the leak", "v2.4.1"),
        ("Upgrade to 2.4.1 fixed the leak", '"upgrade to V2.4.1"'),
        ("Upgrade to v2.4.1 fixed the leak", "V2.4.1"),
        ("We moved from MySQL 5.7 to PostgreSQL 16 in March", "PostgreSQL16"),
        ("The p95 went up to 500ms after the deploy", "500 ms"),
        ("The p95 went up to 500 ms after the deploy", "500ms"),
        ("Retry on HTTPServerError only", "server error"),
        ("Hash passwords with sha256 and a salt", "sha 256"),
    ],
)
def test_versions_units_and_acronyms_match_either_way(api, agent_a, token_a, make_entry, stored, q):
    wanted = make_entry(agent_a, stored)
    make_entry(agent_a, "Nothing to see in this unrelated note about lunch")
    response = api.get("/search", token=token_a, q=q, mode="lexical", kinds="entries")
    assert [r["id"] for r in response.json()["results"]] == [wanted.pk], (stored, q)


def test_a_version_asked_with_its_v_is_still_that_version_only(api, agent_a, token_a, make_entry):
    """ "v2.4.1" asked finds "2.4.1" stored, but not another version that shares its first numbers, nor
    a "v2" that is no version."""
    wanted = make_entry(agent_a, "Pin the client to 2.4.1 until the retry bug is fixed")
    make_entry(agent_a, "The client 2.4.0 had the retry bug")
    make_entry(agent_a, "The v2 dashboard shows 4 panels and 1 chart")
    response = api.get("/search", token=token_a, q="v2.4.1", mode="lexical", kinds="entries")
    assert [r["id"] for r in response.json()["results"]] == [wanted.pk]
    # A word that only ends like a version keeps its "v": "nv2.4" is not version 2.4.
    alternatives = [a.strip(" ()") for a in query_compile("nv2.4").terms[0].tsquery.split("|")]
    assert "'nv' <-> '2' <-> '4'" in alternatives and "'2' <-> '4'" not in alternatives
    assert "'2' <-> '4' <-> '1'" in query_compile("v2.4.1").terms[0].tsquery


def test_a_word_of_its_own_outranks_the_same_word_inside_an_identifier(api, agent_a, token_a, make_entry):
    """The parts weigh a quarter of the text's own words: a memory about Java comes before one that
    only mentions JavaScript, and both are found."""
    inside = make_entry(agent_a, "The dashboard is written in JavaScript with a small bundle")
    own = make_entry(agent_a, "The billing service is written in Java with a small heap")
    response = api.get("/search", token=token_a, q="java", mode="lexical", kinds="entries")
    assert [r["id"] for r in response.json()["results"]] == [own.pk, inside.pk]
    # The whole name typed in lower case still finds it whole.
    response = api.get("/search", token=token_a, q="javascript", mode="lexical", kinds="entries")
    assert [r["id"] for r in response.json()["results"]] == [inside.pk]


def test_a_stopword_part_does_not_turn_a_name_into_its_other_part():
    """ "iPhone" cut is "i Phone"; "i" is a stopword, so the parts' phrase would be any "phone": the
    query keeps the whole word only. "getUserById" keeps get <-> user <2> id beside the whole word."""
    assert split_identifiers("iPhone") == "i Phone"
    assert query_compile("iPhone").terms[0].tsquery == "'iphon'"
    tsquery = query_compile("getUserById").terms[0].tsquery
    assert "'getuserbyid'" in tsquery and "'get' <-> 'user' <2> 'id'" in tsquery


def test_messages_and_workspace_files_hold_the_parts(api, agent_a, token_a, make_message):
    message = make_message(agent_a, "The flaky test is testRetryOnTimeout, skip it for now")
    make_message(agent_a, "Lunch is at noon")
    services.file_write(agent=agent_a, path="notes/PaymentGateway.md", content="Owner: ana\n", changed_by="t")
    services.file_append(
        agent=agent_a,
        path="notes/PaymentGateway.md",
        text="Timeout: refundRequestTimeout is 30s\n",
        changed_by="t",
    )
    found = api.get("/search", token=token_a, q="retry on timeout", mode="lexical", kinds="messages").json()
    assert [r["id"] for r in found["results"]] == [message.pk]
    for q in ("payment gateway", "refund request", "30 s"):
        results = api.get("/search", token=token_a, q=q, mode="lexical", kinds="files").json()["results"]
        assert [r["path"] for r in results] == ["notes/PaymentGateway.md"], q


def test_a_text_without_identifiers_does_not_call_the_cut():
    """The function the vectors call is inlined by PostgreSQL into a regular-expression test, so the cut
    (a function call with a set-returning scan) runs only for texts that hold a case or digit change."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN VERBOSE SELECT memory_identifier_parts(content) FROM vault_vaultentry")
        plan = " ".join(row[0] for row in cursor.fetchall())
    assert "CASE WHEN" in plan and "memory_identifier_parts_cut" in plan
    assert _sql_parts(["plain words", "getUserById", None]) == ["", "get User By Id", ""]
