"""A database upgraded across vault 0030 (an entry's search vector computed by one PL/pgSQL function)
keeps every entry's vector byte for byte: rolled back to 0029's expression and migrated again, each
row's vector is what it was."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.vault.test_entry_search_vector import TEXTS
from vault import services
from vault.models import Project

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("vault", "0029_sketch_gin_pending_limit")]


def vectors() -> dict[int, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, search_vector::text FROM vault_vaultentry ORDER BY id")
        return dict(cursor.fetchall())


def test_the_vectors_before_and_after_the_function_are_the_same(migrator):
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    project = Project.objects.create(slug="acme", name="Acme")
    agent = services.agent_ensure(project=project, slug="dev")
    for number, text in enumerate(TEXTS):
        services.entry_create(agent=agent, category="lessons", content=text, tags=[f"t{number}"])
    today = vectors()
    assert len(today) == len(TEXTS)

    migrator.apply_tested_migration(BEFORE)
    assert vectors() == today

    migrator.apply_tested_migration(latest)
    assert vectors() == today
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'vaultentry_search_gin'")
        assert "gin_pending_list_limit='256'" in cursor.fetchone()[0]
