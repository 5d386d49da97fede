"""Thai, Lao, Myanmar and Khmer searched by the pairs of their characters, and a CJK run's last
character stored after the text (vault/search_text.py).

`memory_search_text` now cuts a run of those four scripts into its overlapping pairs, as search 0012
did for Chinese, Japanese and Korean, and follows the text with the last character of each CJK run
longer than one, so that a one-character query finds it (search/query.py). The stored vectors of the
rows holding a CJK run of two characters or more, or a character of those scripts, are computed
again, and only those, as search 0012 did.

Going back restores the function as search 0012 created it and computes those rows' vectors again
with it.
"""

import importlib

from django.db import migrations

from vault.search_text import CJK_CLASS, FUNCTION_SQL, UNSPACED_CLASS

_FILES_VECTORS = importlib.import_module("vault.migrations.0018_identifier_parts").FILES_VECTORS
_AFFECTED = f"~ '[{CJK_CLASS}]{{2}}|[{UNSPACED_CLASS}]'"
_FILES_END = "    || ('#p' || project_id::text)::tsvector;\n"
assert _FILES_VECTORS.count(_FILES_END) == 1
FILES_VECTORS = _FILES_VECTORS.replace(
    _FILES_END,
    f"    || ('#p' || project_id::text)::tsvector\nWHERE path {_AFFECTED} OR content {_AFFECTED};\n",
)

VECTORS = f"""
UPDATE vault_vaultentry SET content = content WHERE content {_AFFECTED};
UPDATE sessions_app_message SET text = text WHERE text {_AFFECTED} OR reply_to_text {_AFFECTED};
UPDATE sessions_app_sessionarchive SET text = text WHERE text {_AFFECTED};
{FILES_VECTORS}
"""

# The functions as search 0012 created them: CJK runs as their pairs only.
_PREVIOUS_RANGES = (
    (0x1100, 0x11FF),
    (0x3005, 0x3007),
    (0x3040, 0x309F),
    (0x30A0, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)
_PREVIOUS_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in _PREVIOUS_RANGES)
_SEPARATORS = r"[/\\@:]|(?<=[A-Za-z0-9_])\.(?=[A-Za-z0-9_])"
PREVIOUS_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION memory_cjk_pairs(txt text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
SELECT coalesce(string_agg(
    CASE WHEN length(r.run[1]) > 1 AND r.run[1] ~ '^[{_PREVIOUS_CLASS}]' THEN (
        SELECT string_agg(substr(r.run[1], i, 2), ' ' ORDER BY i)
        FROM generate_series(1, length(r.run[1]) - 1) AS i
    ) ELSE r.run[1] END,
    ' ' ORDER BY r.n), '')
FROM regexp_matches(txt, '[{_PREVIOUS_CLASS}]+|[^{_PREVIOUS_CLASS}]+', 'g') WITH ORDINALITY AS r(run, n)
$$;
CREATE OR REPLACE FUNCTION memory_search_text(txt text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN octet_length(txt) > length(txt) AND txt ~ '[{_PREVIOUS_CLASS}]'
    THEN memory_cjk_pairs(regexp_replace(txt, '{_SEPARATORS}', ' ', 'g'))
    ELSE regexp_replace(txt, '{_SEPARATORS}', ' ', 'g') END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("search", "0012_search_text_cjk")]

    operations = [
        migrations.RunSQL(FUNCTION_SQL, PREVIOUS_FUNCTION_SQL + VECTORS),
        migrations.RunSQL(VECTORS, migrations.RunSQL.noop),
    ]
