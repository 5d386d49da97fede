"""Workspace files' content is compressed with lz4 where the server has it.

A day's note grows by appends, and PostgreSQL stores each append as a new copy of the whole note,
compressed again. With the default pglz that compression was most of an append's cost: 28.6 -> 13.0 ms
for an append to a 514 KB note on PostgreSQL 15 (docs/benchmarks.md). lz4 compresses several times
faster for slightly larger values. Servers built without lz4 (the embedded PostgreSQL) keep pglz;
values already stored keep their compression until they are next written.
"""

from django.db import migrations

LZ4_AVAILABLE = (
    "EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals))"
)


def _if_lz4(statement: str) -> str:
    return f"DO $$ BEGIN IF {LZ4_AVAILABLE} THEN {statement}; END IF; END $$;"


FORWARD = _if_lz4("ALTER TABLE vault_workspacefile ALTER COLUMN content SET COMPRESSION lz4")
BACKWARD = _if_lz4("ALTER TABLE vault_workspacefile ALTER COLUMN content SET COMPRESSION default")


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0012_workspacefile_append_by_bytes"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
