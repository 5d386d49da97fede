"""How a transactional test's database is emptied after it (every live-server, browser and MCP test).

Django's TransactionTestCase runs `flush`: a TRUNCATE of every table, then the post_migrate signal,
whose only receivers here (contrib.auth's and contrib.contenttypes') write back the content types and
permissions the TRUNCATE removed. That took 2.5 s a test on the loaded 2-core machine (1.3 s the
TRUNCATE of some 60 tables, 1.2 s the post_migrate rows). Here the content types and permissions are
kept (no test changes them: the rows post_migrate would write are the ones already there) and only the
tables that hold rows are emptied; the database ends as empty as flush leaves it.
"""

from django.db import connections, transaction
from django.test import TransactionTestCase

# What post_migrate writes back after flush: kept instead.
KEPT = frozenset({"django_content_type", "auth_permission"})

_django_teardown = TransactionTestCase._fixture_teardown


def tables_with_rows(connection) -> list[str]:
    """The project's tables (those flush empties) other than KEPT that hold at least one row."""
    tables = sorted(
        set(connection.introspection.django_table_names(only_existing=True, include_views=False)) - KEPT
    )
    if not tables:
        return []
    quote = connection.ops.quote_name
    query = " UNION ALL ".join(
        f"SELECT {number} WHERE EXISTS (SELECT 1 FROM {quote(table)})" for number, table in enumerate(tables)
    )
    with connection.cursor() as cursor:
        cursor.execute(query)
        return [tables[number] for (number,) in cursor.fetchall()]


def database_empty(connection) -> None:
    """DELETE the rows of the tables holding any, in one transaction. Not TRUNCATE: PostgreSQL truncates
    a table only with every table whose foreign key names it (most of them name vault_project), and each
    truncated table costs new files. Every foreign key here is DEFERRABLE INITIALLY DEFERRED with no ON
    DELETE action (Django's), so the order does not matter; no table has a DELETE trigger or rule."""
    tables = tables_with_rows(connection)
    if not tables:
        return
    quote = connection.ops.quote_name
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for table in tables:
            cursor.execute(f"DELETE FROM {quote(table)}")


def _fixture_teardown(self):
    if self.available_apps is not None or self.serialized_rollback:
        return _django_teardown(self)  # their own flush rules: Django's
    for db_name in self._databases_names(include_mirrors=False):
        database_empty(connections[db_name])


def install() -> None:
    TransactionTestCase._fixture_teardown = _fixture_teardown
