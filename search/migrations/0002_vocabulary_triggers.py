from django.db import migrations

from search.sql import DROP_TRIGGERS, TRIGGER_FUNCTIONS, VOCABULARY_ADD_FUNCTION, VOCABULARY_REBUILD


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0001_initial"),
        ("vault", "0002_workspace_files"),
        ("sessions_app", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(
            VOCABULARY_ADD_FUNCTION + TRIGGER_FUNCTIONS + VOCABULARY_REBUILD,
            reverse_sql=DROP_TRIGGERS,
        ),
    ]
