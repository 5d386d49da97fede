"""The tags index keeps a pending list of at most GIN_PENDING_KB (256 kB) like the entries' other GIN
indexes (0009, 0029). With PostgreSQL's default of 4 MB (about 70,000 entries' tags at 1.5 tags an
entry) every tag filter (search's `tag=`, the entry list's) read the whole list: with 1.4 MB pending
(174 pages, 60,000 entries) a tag query cost the database 3.5 ms of CPU against 0.9 ms once merged, so up
to about 7 ms with a full list. An entry write costs no more (0.63 ms against 0.68 at 4 MB, measured
alternated). Only a storage parameter changes: set in place, no rebuild; the list already pending is
merged by the next insert that finds it over the limit, or by the next vacuum."""

import django.contrib.postgres.indexes
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0031_agent_consolidation_failures"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER INDEX vaultentry_tags_gin SET (gin_pending_list_limit = 256);",
                    reverse_sql="ALTER INDEX vaultentry_tags_gin RESET (gin_pending_list_limit);",
                )
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="vaultentry", name="vaultentry_tags_gin"),
                migrations.AddIndex(
                    model_name="vaultentry",
                    index=django.contrib.postgres.indexes.GinIndex(
                        fields=["tags"], gin_pending_list_limit=256, name="vaultentry_tags_gin"
                    ),
                ),
            ],
        ),
    ]
