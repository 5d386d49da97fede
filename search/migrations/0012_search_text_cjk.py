"""Chinese, Japanese and Korean text searched by the pairs of its characters (vault/search_text.py).

`memory_search_text` now writes a run of CJK characters as its overlapping pairs. The stored vectors
of rows holding such a character are computed again, and only those: every other text parses as
before. Entries, messages and session archives have generated vectors, which PostgreSQL computes
again when the row is updated; workspace files' vectors are set by their trigger, so the statement
vault 0018 used for every file runs again for these files. The search app holds the migration
because it rewrites derived search data in both apps' tables, as its vocabulary triggers do.

Going back restores the previous function and computes those rows' vectors again with it.
"""

import importlib

from django.db import migrations

from vault.search_text import CJK_CLASS, FUNCTION_SQL

_FILES_VECTORS = importlib.import_module("vault.migrations.0018_identifier_parts").FILES_VECTORS
_HOLDS_CJK = f"~ '[{CJK_CLASS}]'"
_FILES_END = "    || ('#p' || project_id::text)::tsvector;\n"
assert _FILES_VECTORS.count(_FILES_END) == 1
FILES_VECTORS = _FILES_VECTORS.replace(
    _FILES_END,
    f"    || ('#p' || project_id::text)::tsvector\nWHERE path {_HOLDS_CJK} OR content {_HOLDS_CJK};\n",
)

VECTORS = f"""
UPDATE vault_vaultentry SET content = content WHERE content {_HOLDS_CJK};
UPDATE sessions_app_message SET text = text WHERE text {_HOLDS_CJK} OR reply_to_text {_HOLDS_CJK};
UPDATE sessions_app_sessionarchive SET text = text WHERE text {_HOLDS_CJK};
{FILES_VECTORS}
"""

# The function as vault 0017 created it.
PREVIOUS_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION memory_search_text(txt text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT regexp_replace(txt, '[/\\@:]|(?<=[A-Za-z0-9_])\.(?=[A-Za-z0-9_])', ' ', 'g') $$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0011_scope_length"),
        ("vault", "0022_entry_source_mcp"),
        ("sessions_app", "0013_reply_to_text_unicode_whitespace"),
    ]

    operations = [
        migrations.RunSQL(
            FUNCTION_SQL,
            PREVIOUS_FUNCTION_SQL + VECTORS + "DROP FUNCTION IF EXISTS memory_cjk_pairs(text);",
        ),
        migrations.RunSQL(VECTORS, migrations.RunSQL.noop),
    ]
