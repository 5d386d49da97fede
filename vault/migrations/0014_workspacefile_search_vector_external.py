"""Workspace files' search vectors are stored without compression (STORAGE EXTERNAL).

A tsvector (sorted lexemes with their positions) does not compress: a 514 KB daily note's vector is
83,846 bytes, and pglz gave up on it and stored 83,842. But it tried on every append, over the whole
vector, before giving up. Stored EXTERNAL, the vector takes the same space and an append skips that
attempt (docs/benchmarks.md). Vectors already stored are unchanged until their file is next written.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0013_workspacefile_content_lz4"),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE vault_workspacefile ALTER COLUMN search_vector SET STORAGE EXTERNAL",
            "ALTER TABLE vault_workspacefile ALTER COLUMN search_vector SET STORAGE EXTENDED",
        )
    ]
