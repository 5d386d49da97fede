"""Search parses identifiers, paths, hosts and addresses as their words (vault/search_text.py).

Creates `memory_search_text(text)` and rebuilds the entries' search vector with it (PostgreSQL cannot
change a generated column's expression: the column is dropped and added again, and its GIN index
rebuilt; large agents' own indexes go with it and are rebuilt by the hourly job). The workspace files'
trigger parses through it too, and every file's vector is recomputed once.
"""

import importlib

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

from vault.search_vectors import GIN_PENDING_KB, VECTOR_GIVEN_SETTING
from vault.search_text import FUNCTION_SQL

# 0015's trigger function, for the way back, and this one: the same with every text parsed through
# memory_search_text.
PREVIOUS_FILE_FUNCTION = importlib.import_module(
    "vault.migrations.0015_workspacefile_append_vector_given"
).FUNCTION
_REPLACEMENTS = {
    "to_tsvector('english', tail)": "to_tsvector('english', memory_search_text(tail))",
    "to_tsvector('portuguese', tail)": "to_tsvector('portuguese', memory_search_text(tail))",
    "to_tsvector('simple', COALESCE(NEW.path, ''))": "to_tsvector('simple', memory_search_text(COALESCE(NEW.path, '')))",
    "to_tsvector('english', COALESCE(NEW.content, ''))": "to_tsvector('english', memory_search_text(COALESCE(NEW.content, '')))",
    "to_tsvector('portuguese', COALESCE(NEW.content, ''))": "to_tsvector('portuguese', memory_search_text(COALESCE(NEW.content, '')))",
}
FILE_FUNCTION = PREVIOUS_FILE_FUNCTION
for _old, _new in _REPLACEMENTS.items():
    assert FILE_FUNCTION.count(_old) == 1, _old
    FILE_FUNCTION = FILE_FUNCTION.replace(_old, _new)


def _files_vectors(expression_of) -> str:
    """Recompute every stored file's vector (the trigger keeps a given vector: VECTOR_GIVEN_SETTING)."""
    return f"""
SELECT set_config('{VECTOR_GIVEN_SETTING}', 'on', true);
UPDATE vault_workspacefile SET search_vector =
    setweight(to_tsvector('simple', {expression_of("COALESCE(path, '')")}), 'A')
    || setweight(to_tsvector('english', {expression_of("COALESCE(content, '')")}), 'B')
    || setweight(to_tsvector('portuguese', {expression_of("COALESCE(content, '')")}), 'B')
    || ('#a' || agent_id::text)::tsvector
    || ('#p' || project_id::text)::tsvector;
SELECT set_config('{VECTOR_GIVEN_SETTING}', '', true);
"""


FILES_VECTORS = _files_vectors(lambda text: f"memory_search_text({text})")
FILES_VECTORS_PREVIOUS = _files_vectors(lambda text: text)


def _searched(field: str) -> models.Func:
    return models.Func(models.F(field), function="memory_search_text", output_field=models.TextField())


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0016_queued_note_appends"),
    ]

    operations = [
        # Kept on the way back: the typo vocabulary's functions call it too (search.sql).
        migrations.RunSQL(FUNCTION_SQL, migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="vaultentry", name="vaultentry_search_gin"),
        migrations.RemoveField(model_name="vaultentry", name="search_vector"),
        migrations.AddField(
            model_name="vaultentry",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    django.contrib.postgres.search.SearchVector(
                        models.Func("tags", function="memory_tags_text"), config="simple", weight="A"
                    ),
                    django.contrib.postgres.search.SearchVector(
                        _searched("content"), config="english", weight="B"
                    ),
                    django.contrib.postgres.search.SearchVector(
                        _searched("content"), config="portuguese", weight="B"
                    ),
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
                    models.Func(
                        models.F("agent_id"),
                        models.F("id"),
                        arg_joiner="::text || 'e' || (",
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                        template="('#a' || %(expressions)s >> 13)::text)::tsvector",
                    ),
                    models.Func(
                        models.F("project_id"),
                        models.F("id"),
                        arg_joiner="::text || 'e' || (",
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                        template="('#p' || %(expressions)s >> 13)::text)::tsvector",
                    ),
                    arg_joiner=" || ",
                    output_field=django.contrib.postgres.search.SearchVectorField(),
                    template="(%(expressions)s)",
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="vaultentry",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], gin_pending_list_limit=GIN_PENDING_KB, name="vaultentry_search_gin"
            ),
        ),
        # The new column has no statistics until the next ANALYZE, and search estimates common words'
        # frequencies from them (search/bm25.py): without this, until autovacuum got round to the table.
        migrations.RunSQL("ANALYZE vault_vaultentry", migrations.RunSQL.noop),
        migrations.RunSQL(FILE_FUNCTION, PREVIOUS_FILE_FUNCTION),
        migrations.RunSQL(FILES_VECTORS, FILES_VECTORS_PREVIOUS),
    ]
