"""Identifiers are searched by their parts too: "getUserById" as get, user, id; "500ms" as 500, ms;
"v2.4.1" as v, 2, 4, 1 (vault/search_text.py), at weight D.

Creates `memory_identifier_parts(text)` and rebuilds the entries' search vector with the parts of the
content (PostgreSQL 15 cannot change a generated column's expression: the column is dropped and added
again, and its GIN index rebuilt; large agents' own indexes go with it and are rebuilt by the hourly
job). The workspace files' trigger adds the parts of the path and the content, and every file's vector
is recomputed once.
"""

import importlib

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

from vault.search_vectors import GIN_PENDING_KB, VECTOR_GIVEN_SETTING
from vault.search_text import PARTS_FUNCTION_SQL

SearchVector = django.contrib.postgres.search.SearchVector
SearchVectorField = django.contrib.postgres.search.SearchVectorField

_PREVIOUS = importlib.import_module("vault.migrations.0017_search_text_identifiers")
PREVIOUS_FILE_FUNCTION = _PREVIOUS.FILE_FUNCTION


def _parts(text: str, indent: int) -> str:
    pad = " " * indent
    return "\n".join(
        f"{pad}|| setweight(to_tsvector('{config}', memory_search_text({text})), 'D')"
        for config in ("english", "portuguese")
    )


# The parts are cut once per row (a variable), then parsed in both languages.
_WHOLE_TEXT = "COALESCE(NEW.path, '') || ' ' || COALESCE(NEW.content, '')"
_TAIL = "                    || setweight(to_tsvector('portuguese', memory_search_text(tail)), 'B');"
_WHOLE = (
    "        || setweight(to_tsvector('portuguese', memory_search_text(COALESCE(NEW.content, ''))), 'B')"
)
FILE_FUNCTION = PREVIOUS_FILE_FUNCTION
for _old, _new in {
    "    tail text;\n": "    tail text;\n    parts text;\n",
    "                NEW.search_vector := OLD.search_vector\n": (
        "                parts := memory_identifier_parts(tail);\n"
        "                NEW.search_vector := OLD.search_vector\n"
    ),
    _TAIL: f"{_TAIL[:-1]}\n{_parts('parts', 20)};",
    "    NEW.search_vector := setweight(to_tsvector('simple'": (
        f"    parts := memory_identifier_parts({_WHOLE_TEXT});\n"
        "    NEW.search_vector := setweight(to_tsvector('simple'"
    ),
    _WHOLE: f"{_WHOLE}\n{_parts('parts', 8)}",
}.items():
    assert FILE_FUNCTION.count(_old) == 1, _old
    FILE_FUNCTION = FILE_FUNCTION.replace(_old, _new)

FILES_VECTORS = f"""
SELECT set_config('{VECTOR_GIVEN_SETTING}', 'on', true);
UPDATE vault_workspacefile SET search_vector =
    setweight(to_tsvector('simple', memory_search_text(COALESCE(path, ''))), 'A')
    || setweight(to_tsvector('english', memory_search_text(COALESCE(content, ''))), 'B')
    || setweight(to_tsvector('portuguese', memory_search_text(COALESCE(content, ''))), 'B')
{_parts("memory_identifier_parts(COALESCE(path, '') || ' ' || COALESCE(content, ''))", 4)}
    || ('#a' || agent_id::text)::tsvector
    || ('#p' || project_id::text)::tsvector;
SELECT set_config('{VECTOR_GIVEN_SETTING}', '', true);
"""


def _searched(expression) -> models.Func:
    return models.Func(expression, function="memory_search_text", output_field=models.TextField())


def _bilingual(expression, weight: str) -> list:
    return [
        SearchVector(_searched(expression), config="english", weight=weight),
        SearchVector(_searched(expression), config="portuguese", weight=weight),
    ]


def _scope(column: str, mark: str, *, epoch: bool = False) -> models.Func:
    if not epoch:
        return models.Func(
            models.F(column),
            output_field=SearchVectorField(),
            template=f"('{mark}' || %(expressions)s::text)::tsvector",
        )
    return models.Func(
        models.F(column),
        models.F("id"),
        arg_joiner="::text || 'e' || (",
        output_field=SearchVectorField(),
        template=f"('{mark}' || %(expressions)s >> 13)::text)::tsvector",
    )


CONTENT_PARTS = models.Func(
    models.F("content"), function="memory_identifier_parts", output_field=models.TextField()
)


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0017_search_text_identifiers"),
    ]

    operations = [
        # Kept on the way back, like memory_search_text: harmless, and 0017's column does not use it.
        migrations.RunSQL(PARTS_FUNCTION_SQL, migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="vaultentry", name="vaultentry_search_gin"),
        migrations.RemoveField(model_name="vaultentry", name="search_vector"),
        migrations.AddField(
            model_name="vaultentry",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    SearchVector(models.Func("tags", function="memory_tags_text"), config="simple", weight="A"),
                    *_bilingual(models.F("content"), "B"),
                    *_bilingual(CONTENT_PARTS, "D"),
                    _scope("agent_id", "#a"),
                    _scope("project_id", "#p"),
                    _scope("agent_id", "#a", epoch=True),
                    _scope("project_id", "#p", epoch=True),
                    arg_joiner=" || ",
                    output_field=SearchVectorField(),
                    template="(%(expressions)s)",
                ),
                output_field=SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="vaultentry",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], gin_pending_list_limit=GIN_PENDING_KB, name="vaultentry_search_gin"
            ),
        ),
        # The new column has no statistics until the next ANALYZE, and search estimates common words'
        # frequencies from them (search/bm25.py).
        migrations.RunSQL("ANALYZE vault_vaultentry", migrations.RunSQL.noop),
        migrations.RunSQL(FILE_FUNCTION, PREVIOUS_FILE_FUNCTION),
        migrations.RunSQL(FILES_VECTORS, _PREVIOUS.FILES_VECTORS),
    ]
