"""The entry vector's function (vault/search_vectors.py) cuts an entry's identifiers with its own
statement instead of calling memory_identifier_parts: the same text, so the same vectors, and nothing
stored is computed again (the column's expression calls the function by name; CREATE OR REPLACE keeps
it). PostgreSQL before 18 planned memory_identifier_parts_cut's body again in each transaction that
called it from the PL/pgSQL function: about 0.2 ms of the database's CPU an entry write on 15
(docs/benchmarks.md). Going back leaves this definition: it gives the same vectors as 0030's.

The function is created again, then its calls of the search functions are qualified by their schema as
search 0014 did for every function before it (pg_restore computes the generated column with an empty
search_path).
"""

import importlib

from django.db import migrations

from vault.search_vectors import ENTRY_VECTOR_FUNCTION_SQL

_QUALIFIED = importlib.import_module("search.migrations.0014_functions_schema_qualified")


def qualify(apps, schema_editor):
    _QUALIFIED.qualify(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0032_tags_gin_pending_limit"),
        ("search", "0014_functions_schema_qualified"),
    ]

    operations = [
        migrations.RunSQL(ENTRY_VECTOR_FUNCTION_SQL, migrations.RunSQL.noop),
        migrations.RunPython(qualify, migrations.RunPython.noop),
    ]
