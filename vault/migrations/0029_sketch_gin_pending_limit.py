"""The sketch index (the duplicate check's near-duplicate candidates) keeps a pending list of at most
GIN_PENDING_KB (256 kB) like the search vectors' (0009): every search of a GIN index reads its whole
pending list, and with PostgreSQL's default of 4 MB the duplicate check of a large agent's write read
up to 512 pages of it. Only a storage parameter changes: set in place, no rebuild; the list already
pending is merged by the next insert that finds it over the limit, or by the next vacuum."""

import django.contrib.postgres.indexes
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0028_entries_written_from_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER INDEX vaultentry_sketch_gin SET (gin_pending_list_limit = 256);",
                    reverse_sql="ALTER INDEX vaultentry_sketch_gin RESET (gin_pending_list_limit);",
                )
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="vaultentry", name="vaultentry_sketch_gin"),
                migrations.AddIndex(
                    model_name="vaultentry",
                    index=django.contrib.postgres.indexes.GinIndex(
                        fields=["sketch"], gin_pending_list_limit=256, name="vaultentry_sketch_gin"
                    ),
                ),
            ],
        ),
    ]
