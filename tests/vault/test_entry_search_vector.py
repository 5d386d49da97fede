"""An entry's search vector (vault/search_vectors.py's memory_entry_search_vector): its tags, content and
identifiers' parts as the expression of vault 0018 made them, with the content cut once a write."""

import pytest
from django.db import connection

from tests.factories import AgentFactory
from vault import services
from vault.models import VaultEntry

pytestmark = pytest.mark.django_db

TEXTS = [
    "Use SSE, not WebSockets #sse: getUserById in src/worker/queue_runner.py returns 500ms late",
    "Combinado com a Priya: a notificação push do sms-gateway fica atrás de uma flag (v2.4.1)",
    "我们决定使用Redis作为会话缓存。一只猫",
    "เราซื้อข้าว HTTPServerError python3",
    "plain words only",
]

# Vault 0018's expression of the text part of the column (the scope lexemes follow it in both).
FORMER_EXPRESSION = """
    setweight(to_tsvector('simple', COALESCE(memory_tags_text(tags), '')), 'A')
    || setweight(to_tsvector('english', COALESCE(memory_search_text(content), '')), 'B')
    || setweight(to_tsvector('portuguese', COALESCE(memory_search_text(content), '')), 'B')
    || setweight(to_tsvector('english', COALESCE(memory_search_text(memory_identifier_parts(content)), '')), 'D')
    || setweight(to_tsvector('portuguese', COALESCE(memory_search_text(memory_identifier_parts(content)), '')), 'D')
    || ('#a' || agent_id::text)::tsvector || ('#p' || project_id::text)::tsvector
    || ('#a' || agent_id::text || 'e' || (id >> 13)::text)::tsvector
    || ('#p' || project_id::text || 'e' || (id >> 13)::text)::tsvector
"""


def test_an_entrys_vector_is_the_one_the_former_expression_gave():
    agent = AgentFactory()
    for number, text in enumerate(TEXTS):
        services.entry_create(agent=agent, category="lessons", content=text, tags=["infra", f"t{number}"])
    services.entry_create(agent=agent, category="lessons", content="no tags at all")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, search_vector::text, ({FORMER_EXPRESSION})::text FROM vault_vaultentry ORDER BY id"
        )
        rows = cursor.fetchall()
    assert len(rows) == VaultEntry.objects.count() == len(TEXTS) + 1
    for pk, stored, former in rows:
        assert stored == former, pk


def test_an_entry_write_cuts_its_contents_identifiers_once_without_calling_a_sql_function():
    agent = AgentFactory()
    with connection.cursor() as cursor:
        # Calls of SQL and PL/pgSQL functions that are not inlined, counted in this transaction. The
        # vector's function cuts the identifiers itself (vault 0033): a SQL function called from it was
        # planned again in each transaction before PostgreSQL 18.
        cursor.execute("SET LOCAL track_functions = 'all'")
        services.entry_create(agent=agent, category="lessons", content="getUserById returns HTTPServerError")
        cursor.execute(
            "SELECT pg_stat_get_xact_function_calls('memory_identifier_parts_cut'::regproc),"
            " pg_stat_get_xact_function_calls('memory_entry_search_vector'::regproc)"
        )
        assert cursor.fetchone() == (None, 1)
        vector = VaultEntry.objects.filter(agent=agent).values_list("search_vector", flat=True).get()
        assert "'server':" in vector and "'id':" in vector  # the parts of HTTPServerError and getUserById


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x",
        "getUserById",
        "HTTPServerError2 and ab12cd 34ef, v2.4.1 x86_64",
        "a.b/c:d e@f.g it's",
        "IDs β3 naïveCamelCase ÉtéCase",
        "PostgreSQL作为主数据库 fooBar",
        "line\nbreak\tTabbedWord camelCase\rend",
    ],
)
def test_the_vector_function_gives_the_former_expressions_text_part(text):
    former = FORMER_EXPRESSION.split("|| ('#a'")[0]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT memory_entry_search_vector(tags, content)::text, ({former})::text"
            " FROM (SELECT %s::text AS content, ARRAY['t1', 'Infra']::varchar[] AS tags) v",
            [text],
        )
        new, old = cursor.fetchone()
    assert new == old
