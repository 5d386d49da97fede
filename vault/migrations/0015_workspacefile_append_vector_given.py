"""An append to a workspace file costs its tail, not the whole file again.

Two changes, measured on a 1 MB daily note on the embedded PostgreSQL 18 (docs/benchmarks.md): an append
took 33 ms, of which 10 ms in the search-vector trigger and 16 ms compressing the whole note with pglz.

- The writer of an append gives the new search vector itself (the stored one and the tail's lexemes) and
  says so with a transaction-local setting, VECTOR_GIVEN_SETTING below. The trigger then leaves it:
  finding the tail on its own meant reading the old content back from TOAST, comparing it with the new
  one and copying the new one to bytes, three passes over the whole file. Every other write, and an
  append after a word cut in two, is parsed by the trigger as before.
- Where the server has no lz4 (the embedded PostgreSQL), the content is stored uncompressed (STORAGE
  EXTERNAL): pglz compressed the whole note again on every append. Text about doubles in size on disk.
  Servers with lz4 keep it (migration 0013): it compresses several times faster.
"""

import importlib

from django.db import migrations

from vault.search_vectors import VECTOR_GIVEN_SETTING

# 0012's function (the one before this migration, and the way back) with one test first.
PREVIOUS_FUNCTION = importlib.import_module("vault.migrations.0012_workspacefile_append_by_bytes").FUNCTION
GIVEN = f"""BEGIN
    -- A NULL given vector (the stored one was NULL) is parsed whole below.
    IF TG_OP = 'UPDATE' AND current_setting('{VECTOR_GIVEN_SETTING}', true) = 'on'
        AND NEW.search_vector IS NOT NULL THEN
        RETURN NEW;
    END IF;
"""
assert PREVIOUS_FUNCTION.count("BEGIN\n") == 1
FUNCTION = PREVIOUS_FUNCTION.replace("BEGIN\n", GIVEN, 1)

_NO_LZ4 = (
    "NOT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression'"
    " AND 'lz4' = ANY(enumvals))"
)
STORAGE = (
    f"DO $$ BEGIN IF {_NO_LZ4} THEN"
    " ALTER TABLE vault_workspacefile ALTER COLUMN content SET STORAGE {storage};"
    " END IF; END $$;"
)


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0014_workspacefile_search_vector_external"),
    ]

    operations = [
        migrations.RunSQL(FUNCTION, PREVIOUS_FUNCTION),
        migrations.RunSQL(
            STORAGE.replace("{storage}", "EXTERNAL"), STORAGE.replace("{storage}", "EXTENDED")
        ),
    ]
