import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

# Existing messages get their parent's text (the end of it, whitespace collapsed), as new ones do
# (sessions_app.services._reply_context), before the search vector is rebuilt once with it.
BACKFILL = r"""
UPDATE sessions_app_message m
SET reply_to_text = right(btrim(regexp_replace(p.text, '\s+', ' ', 'g')), 300)
FROM sessions_app_message p
WHERE m.parent_id = p.id AND p.text <> ''
"""


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_search_gin_pending_limit"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="reply_to_text",
            field=models.TextField(blank=True, default="", editable=False),
        ),
        # PostgreSQL cannot alter a generated column's expression: drop and re-add it (the GIN index
        # goes with the column and is rebuilt).
        migrations.RemoveIndex(model_name="message", name="message_search_gin"),
        migrations.RemoveField(model_name="message", name="search_vector"),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AddField(
            model_name="message",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    django.contrib.postgres.search.SearchVector("text", config="english", weight="B"),
                    django.contrib.postgres.search.SearchVector("text", config="portuguese", weight="B"),
                    django.contrib.postgres.search.SearchVector("reply_to_text", config="english", weight="D"),
                    django.contrib.postgres.search.SearchVector("reply_to_text", config="portuguese", weight="D"),
                    models.Func(
                        models.F("agent_id"),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                        template="('#a' || %(expressions)s::text)::tsvector",
                    ),
                    models.Func(
                        models.F("project_id"),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                        template="('#p' || %(expressions)s::text)::tsvector",
                    ),
                    arg_joiner=" || ",
                    output_field=django.contrib.postgres.search.SearchVectorField(),
                    template="(%(expressions)s)",
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="message",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], gin_pending_list_limit=256, name="message_search_gin"
            ),
        ),
    ]
