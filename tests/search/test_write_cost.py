"""What the write path's indexes and triggers cost the database: no index written twice over."""

import pytest
from django.db import connection

from vault.search_vectors import GIN_PENDING_KB

pytestmark = pytest.mark.django_db

# Indexes of one table that index the same columns or expressions with the same operator classes,
# collations, predicate and access method: every write updates each, and a query can use only one.
SAME_DEFINITION = """
SELECT i.indrelid::regclass::text, array_agg(i.indexrelid::regclass::text ORDER BY 1)
FROM pg_index i
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_class x ON x.oid = i.indexrelid
WHERE t.relnamespace = current_schema()::regnamespace
GROUP BY i.indrelid, i.indkey::text, i.indclass::text, i.indcollation::text, i.indoption::text,
    coalesce(pg_get_expr(i.indexprs, i.indrelid), ''), coalesce(pg_get_expr(i.indpred, i.indrelid), ''),
    x.relam
HAVING count(*) > 1
"""


def test_no_table_keeps_two_indexes_of_one_definition():
    with connection.cursor() as cursor:
        cursor.execute(SAME_DEFINITION)
        assert cursor.fetchall() == []


def test_prefix_completion_still_reads_an_index_of_the_vocabulary(agent_a, make_entry):
    """search.query completes a prefix with `~>=~` and `~<~` (byte order): an index of the words in
    pattern order (the `..._like` one Django keeps beside the primary key) serves it. Checked by the
    index's definition and, on a table large enough for the planner to want it, by the plan (on a table
    of a few rows it may walk the primary key instead, as it did once in a full run)."""
    for word in ["karpenter", "karpathos", "karst"]:
        make_entry(agent_a, f"about {word}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'search_vocabularyword'")
        pattern_indexes = [
            d for d in (row[0] for row in cursor.fetchall()) if "(word varchar_pattern_ops)" in d
        ]
        assert len(pattern_indexes) == 1, pattern_indexes
        cursor.execute(
            "INSERT INTO search_vocabularyword (word)"
            " SELECT 'filler' || g FROM generate_series(1, 20000) g ON CONFLICT DO NOTHING"
        )
        cursor.execute("ANALYZE search_vocabularyword")
        cursor.execute(
            "EXPLAIN SELECT word FROM search_vocabularyword v"
            " WHERE v.word ~>=~ 'karp' AND v.word ~<~ ('karp' || chr(1114111))"
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(
            "SELECT word FROM search_vocabularyword v"
            " WHERE v.word ~>=~ 'karp' AND v.word ~<~ ('karp' || chr(1114111)) ORDER BY 1"
        )
        assert [row[0] for row in cursor.fetchall()] == ["karpathos", "karpenter"]
    assert "search_vocabularyword_word_" in plan and "_like" in plan and "Index Cond" in plan, plan


def test_every_gin_index_of_the_entries_keeps_a_short_pending_list():
    """Every search of a GIN index reads its whole pending list: the tags index kept PostgreSQL's 4 MB,
    which every tag filter read (vault 0032)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " JOIN pg_am a ON a.oid = c.relam"
            " WHERE i.indrelid = 'vault_vaultentry'::regclass AND a.amname = 'gin' ORDER BY 1"
        )
        indexes = dict(cursor.fetchall())
    assert set(indexes) == {"vaultentry_search_gin", "vaultentry_sketch_gin", "vaultentry_tags_gin"}
    for name, options in indexes.items():
        assert options == [f"gin_pending_list_limit={GIN_PENDING_KB}"], name
