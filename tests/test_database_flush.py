"""tests/database_flush.py: a transactional test's database is left as flush leaves it, the content
types and permissions post_migrate would write back kept."""

from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test import TransactionTestCase

from tests import database_flush
from tests.factories import EntryFactory
from vault.models import VaultEntry


def test_it_is_the_teardown_of_transactional_tests():
    assert TransactionTestCase._fixture_teardown is database_flush._fixture_teardown


def test_it_empties_every_table_but_the_content_types_and_permissions(transactional_db, agent_a):
    EntryFactory(agent=agent_a, content="Written by a transactional test #flush")
    written = database_flush.tables_with_rows(connection)
    assert {"vault_project", "vault_agent", "vault_vaultentry"} <= set(written)
    database_flush.database_empty(connection)
    assert database_flush.tables_with_rows(connection) == []
    assert not VaultEntry.objects.exists()
    assert ContentType.objects.get_for_model(VaultEntry).model_class() is VaultEntry
    assert Permission.objects.filter(codename="add_vaultentry").exists()
