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


def test_an_entry_write_cuts_its_contents_identifiers_once():
    agent = AgentFactory()
    with connection.cursor() as cursor:
        # Calls of SQL and PL/pgSQL functions that are not inlined, counted in this transaction.
        cursor.execute("SET LOCAL track_functions = 'all'")
        services.entry_create(agent=agent, category="lessons", content="getUserById returns HTTPServerError")
        cursor.execute("SELECT pg_stat_get_xact_function_calls('memory_identifier_parts_cut'::regproc)")
        assert cursor.fetchone()[0] == 1
