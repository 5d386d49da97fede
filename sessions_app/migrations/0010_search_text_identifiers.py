"""Messages and session archives: search parses identifiers, paths, hosts and addresses as their words
(vault/search_text.py, function created by vault migration 0017).

PostgreSQL cannot change a generated column's expression: each search vector is dropped and added again
and its GIN index rebuilt (large agents' own message indexes go with it; the hourly job rebuilds them).
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

from vault.search_vectors import GIN_PENDING_KB

SearchVector = django.contrib.postgres.search.SearchVector
SearchVectorField = django.contrib.postgres.search.SearchVectorField


def _searched(field: str) -> models.Func:
    return models.Func(models.F(field), function="memory_search_text", output_field=models.TextField())


def _bilingual(field: str, weight: str) -> list:
    return [
        SearchVector(_searched(field), config="english", weight=weight),
        SearchVector(_searched(field), config="portuguese", weight=weight),
    ]


def _scope(column: str, mark: str) -> models.Func:
    return models.Func(
        models.F(column),
        output_field=SearchVectorField(),
        template=f"('{mark}' || %(expressions)s::text)::tsvector",
    )


def _vector(*parts) -> models.GeneratedField:
    return models.GeneratedField(
        db_persist=True,
        expression=models.Func(
            *parts, arg_joiner=" || ", output_field=SearchVectorField(), template="(%(expressions)s)"
        ),
        output_field=SearchVectorField(),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_message_session_index_dropped"),
        ("vault", "0017_search_text_identifiers"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="message", name="message_search_gin"),
        migrations.RemoveField(model_name="message", name="search_vector"),
        migrations.AddField(
            model_name="message",
            name="search_vector",
            field=_vector(
                *_bilingual("text", "B"),
                *_bilingual("reply_to_text", "D"),
                _scope("agent_id", "#a"),
                _scope("project_id", "#p"),
            ),
        ),
        migrations.AddIndex(
            model_name="message",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], gin_pending_list_limit=GIN_PENDING_KB, name="message_search_gin"
            ),
        ),
        migrations.RemoveIndex(model_name="sessionarchive", name="session_archive_search_gin"),
        migrations.RemoveField(model_name="sessionarchive", name="search_vector"),
        migrations.AddField(
            model_name="sessionarchive", name="search_vector", field=_vector(*_bilingual("text", "B"))
        ),
        migrations.AddIndex(
            model_name="sessionarchive",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"],
                gin_pending_list_limit=GIN_PENDING_KB,
                name="session_archive_search_gin",
            ),
        ),
        # The new columns have no statistics until the next ANALYZE, and search estimates common words'
        # frequencies from them (search/bm25.py).
        migrations.RunSQL(
            "ANALYZE sessions_app_message, sessions_app_sessionarchive", migrations.RunSQL.noop
        ),
    ]
