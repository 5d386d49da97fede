"""The index the duplicate check reads its near-duplicate candidates through (the entries' MinHash
sketches, a GIN index) keeps its pending list short: every search of a GIN index reads the whole list,
and the duplicate check searches it on every write of a large agent."""

import json

import pytest
from django.db import connection

from tests.factories import AgentFactory, EntryFactory
from vault.models import VaultEntry

pytestmark = pytest.mark.django_db

# Rows whose sketches fill about 80 pages of a GIN index's pending list: ten times the limit
# vault.search_vectors.GIN_PENDING_KB sets, far below PostgreSQL's default of 4 MB.
ROWS = 3000


def _sketch_scan_pages(sketch: list[int]) -> int:
    """The pages a search of the sketch index reads (its pending list and its tree), forced to use it."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id FROM vault_vaultentry WHERE sketch && %s::integer[]",
            [sketch],
        )
        plan = cursor.fetchone()[0]
    plan = plan if isinstance(plan, list) else json.loads(plan)
    node = plan[0]["Plan"]
    while node["Node Type"] != "Bitmap Index Scan":
        node = node["Plans"][0]
    assert node["Index Name"] == "vaultentry_sketch_gin"
    return node["Shared Hit Blocks"] + node["Shared Read Blocks"]


def test_the_duplicate_checks_sketch_index_reads_a_short_pending_list():
    agent = AgentFactory()
    entry = EntryFactory(agent=agent, category="lessons", content="A lesson about caching")
    columns = [
        field.column
        for field in VaultEntry._meta.concrete_fields
        if field.column not in ("id", "search_vector")
    ]
    values = {
        "content_hash": "md5(i::text)",
        "sketch": "ARRAY(SELECT i * 8 + k FROM generate_series(0, 7) AS k)",
    }
    selected = ", ".join(values.get(column, column) for column in columns)
    with connection.cursor() as cursor:
        # Entries stored one by one, as writes store them, each with a sketch of its own.
        cursor.execute(
            f"""DO $$ BEGIN
              FOR i IN 1..{ROWS} LOOP
                INSERT INTO vault_vaultentry ({", ".join(columns)})
                SELECT {selected} FROM vault_vaultentry WHERE id = {entry.pk};
              END LOOP;
            END $$"""
        )
    assert _sketch_scan_pages([-1]) <= 40
