"""The search functions name the functions they call with their schema, so that a backup restores.

The stored generated columns (entries', messages' and archived sessions' search vectors) call
memory_search_text, memory_identifier_parts and memory_entry_search_vector, which call
memory_cjk_pairs, memory_identifier_parts_cut and memory_tags_text by their bare names. pg_restore
computes those columns again as it loads each table, with an empty search_path (pg_dump's dump sets
it so), where a bare name finds nothing: `pg_restore` of the README's `pg_dump --format=custom` backup
failed with "function memory_cjk_pairs(text) does not exist" and left the tables empty.

Each of this schema's SQL and PL/pgSQL functions that calls a memory_* function by its bare name is
defined again (CREATE OR REPLACE: same function, same results, still inlined into the generated columns,
which a `SET search_path` clause would prevent) with that call qualified by the schema the database's
tables are in. The statement is read from PostgreSQL (pg_get_functiondef), so whatever an earlier
migration defined is kept as it is, but for the names. Cost: a few catalogue updates, no table rewritten.
"""

import re

from django.db import migrations

# A call of one of the server's functions by its bare name: not after a schema's dot, a letter or a quote.
_BARE_CALL = re.compile(r'(?<![.\w"])(memory_\w+)(\s*\()')

_FUNCTIONS = """
SELECT p.oid, pg_get_functiondef(p.oid)
FROM pg_proc p
JOIN pg_language l ON l.oid = p.prolang
WHERE p.pronamespace = current_schema()::regnamespace
  AND l.lanname IN ('sql', 'plpgsql')
  AND p.prokind = 'f'
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
ORDER BY p.oid
"""


def _body_start(definition: str) -> int:
    """Where the function's body starts in pg_get_functiondef's statement (after its header, which
    names the function itself with its schema)."""
    return definition.index("\nAS ") if "\nAS " in definition else definition.index("\nBEGIN ATOMIC")


def _functions_rewrite(schema_editor, rewrite) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT quote_ident(current_schema())")
        schema = cursor.fetchone()[0]
        cursor.execute(_FUNCTIONS)
        for _oid, definition in cursor.fetchall():
            start = _body_start(definition)
            body = rewrite(definition[start:], schema)
            if body != definition[start:]:
                cursor.execute(definition[:start] + body)


def _qualify(body: str, schema: str) -> str:
    return _BARE_CALL.sub(lambda m: f"{schema}.{m.group(1)}{m.group(2)}", body)


def _unqualify(body: str, schema: str) -> str:
    return re.sub(rf"(?<![.\w\"]){re.escape(schema)}\.(memory_\w+)(\s*\()", r"\1\2", body)


def qualify(apps, schema_editor):
    _functions_rewrite(schema_editor, _qualify)


def unqualify(apps, schema_editor):
    _functions_rewrite(schema_editor, _unqualify)


class Migration(migrations.Migration):
    # After the last migrations that define these functions (search's, and vault's entry vector).
    dependencies = [
        ("search", "0013_search_text_unspaced"),
        ("vault", "0030_entry_search_vector_function"),
    ]

    operations = [migrations.RunPython(qualify, unqualify)]
