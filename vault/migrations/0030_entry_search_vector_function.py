"""An entry's search vector is computed by one PL/pgSQL function, `memory_entry_search_vector(tags,
content)` (vault/search_vectors.py), instead of an expression of ten SQL calls: the same vectors.

PostgreSQL plans a stored generated column's expression again at the start of every INSERT (prepared or
not), and 0018's expression inlined memory_search_text four times and memory_identifier_parts twice,
parsing their bodies on each entry write: about 0.4 ms of the database's CPU a write, against 0.3 ms
for the whole new vector. A PL/pgSQL function keeps its plans for the session, and cuts the content and
its identifiers' parts once each instead of twice.

PostgreSQL 15 cannot change a generated column's expression (17 can, but also rewrites the table): the
column is dropped and added again, as in 0018. Cost on a large vault: the table is rewritten under an
exclusive lock, every entry's vector computed once (about 0.3 ms an entry of 300 characters: some five
minutes a million entries), and its GIN index built again; large agents' own indexes
(search/agent_text_index.py) go with the column and are built again by their hourly job, searches of
those agents reading the shared index until then. The vectors are byte for byte those stored before
(tests/operations/test_upgrade_entry_vector_function.py).
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

from vault.search_vectors import ENTRY_VECTOR_FUNCTION_SQL, GIN_PENDING_KB

SearchVectorField = django.contrib.postgres.search.SearchVectorField


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


def _vector(*texts) -> models.GeneratedField:
    return models.GeneratedField(
        db_persist=True,
        expression=models.Func(
            *texts,
            _scope("agent_id", "#a"),
            _scope("project_id", "#p"),
            _scope("agent_id", "#a", epoch=True),
            _scope("project_id", "#p", epoch=True),
            arg_joiner=" || ",
            output_field=SearchVectorField(),
            template="(%(expressions)s)",
        ),
        output_field=SearchVectorField(),
    )


VECTOR = _vector(
    models.Func(
        models.F("tags"),
        models.F("content"),
        function="memory_entry_search_vector",
        output_field=SearchVectorField(),
    )
)


def _column_replaced(field: models.GeneratedField) -> list:
    return [
        migrations.RemoveIndex(model_name="vaultentry", name="vaultentry_search_gin"),
        migrations.RemoveField(model_name="vaultentry", name="search_vector"),
        migrations.AddField(model_name="vaultentry", name="search_vector", field=field),
        migrations.AddIndex(
            model_name="vaultentry",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], gin_pending_list_limit=GIN_PENDING_KB, name="vaultentry_search_gin"
            ),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0029_sketch_gin_pending_limit"),
    ]

    operations = [
        # Dropped on the way back, after 0018's column is restored (nothing else uses it).
        migrations.RunSQL(
            ENTRY_VECTOR_FUNCTION_SQL, "DROP FUNCTION IF EXISTS memory_entry_search_vector(varchar[], text);"
        ),
        *_column_replaced(VECTOR),
        # The new column has no statistics until the next ANALYZE, and search estimates common words'
        # frequencies from them (search/bm25.py).
        migrations.RunSQL("ANALYZE vault_vaultentry", migrations.RunSQL.noop),
    ]
