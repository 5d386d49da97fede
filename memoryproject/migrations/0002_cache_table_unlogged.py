"""The database cache table becomes UNLOGGED.

Every API request writes its rate-limit counter there (two statements, each its own commit). A commit
that changed a logged table waits for the write-ahead log to reach the disk (about 0.3 ms each here);
one that only changed an unlogged table does not. What that gives up is what a cache may lose: after a
crash of PostgreSQL the table comes back empty (counters restart at zero), and a streaming replica does
not hold it (the web processes write it on the primary). Applies on PostgreSQL 15 and 18 alike.
"""

from django.db import migrations


def _alter(schema_editor, persistence: str) -> None:
    from django.conf import settings

    table = settings.CACHE_TABLE
    with schema_editor.connection.cursor() as cursor:
        # The table is absent where REDIS_URL was set when 0001 ran (createcachetable made nothing).
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
        if cursor.fetchone()[0]:
            cursor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} SET {persistence}")


def unlogged(apps, schema_editor):
    _alter(schema_editor, "UNLOGGED")


def logged(apps, schema_editor):
    _alter(schema_editor, "LOGGED")


class Migration(migrations.Migration):
    dependencies = [("memoryproject", "0001_cache_table")]

    operations = [migrations.RunPython(unlogged, logged)]
