"""Messages and session archives: identifiers are searched by their parts too, at weight D
(vault/search_text.py, function created by vault migration 0018).

PostgreSQL 15 cannot change a generated column's expression: each search vector is dropped and added
again and its GIN index rebuilt (large agents' own message indexes go with it; the hourly job rebuilds
them).
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

from vault.search_vectors import GIN_PENDING_KB

SearchVector = django.contrib.postgres.search.SearchVector
SearchVectorField = django.contrib.postgres.search.SearchVectorField


def _searched(expression) -> models.Func:
    return models.Func(expression, function="memory_search_text", output_field=models.TextField())


def _bilingual(expression, weight: str) -> list:
    return [
        SearchVector(_searched(expression), config="english", weight=weight),
        SearchVector(_searched(expression), config="portuguese", weight=weight),
    ]


def _parts(field: str) -> list:
    return _bilingual(
        models.Func(models.F(field), function="memory_identifier_parts", output_field=models.TextField()), "D"
    )


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
        ("sessions_app", "0010_search_text_identifiers"),
        ("vault", "0018_identifier_parts"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="message", name="message_search_gin"),
        migrations.RemoveField(model_name="message", name="search_vector"),
        migrations.AddField(
            model_name="message",
            name="search_vector",
            field=_vector(
                *_bilingual(models.F("text"), "B"),
                *_bilingual(models.F("reply_to_text"), "D"),
                *_parts("text"),
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
            model_name="sessionarchive",
            name="search_vector",
            field=_vector(*_bilingual(models.F("text"), "B"), *_parts("text")),
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
