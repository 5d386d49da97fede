"""GIN indexes of their own for the search vectors of the largest agents.

An agent's search reads the shared GIN index of its table, cut to the agent by its scope lexeme
(`#a<id>`): for each query term PostgreSQL walks the term's rows in every agent's posting list and
keeps the agent's. At 1,000,000 entries that walk was most of a search of a large agent: counting a
term's rows for its weight took 1.4-6.1 ms per term, against 0.35-0.9 ms on an index holding only
the agent's rows (docs/benchmarks.md).

So an agent with more than MEMORY_SEARCH_AGENT_INDEX_ROWS rows in a table gets a partial GIN index
of that table's search vector, `WHERE agent_id + 0 = <id>`, built without blocking writes by the
hourly job `search: per-agent text indexes` (and by `bench_search`), and dropped when the agent falls
below half that size. A search of that one agent then names it as a literal (`agent_id + 0 = <id>`,
`agent_clause`), which the planner matches with the index's predicate. The clause repeats the scope's
own condition, so results never depend on whether the index exists. The cost: an agent's writes
update one GIN index more.
"""

import re
import time

from django.conf import settings
from django.db import connection

from search.embedding_index import index_drop, index_ensure
from vault.search_vectors import GIN_PENDING_KB

# Tables with a search vector searched per agent, and the short name of their agent indexes.
TABLES = {"vault_vaultentry": "vaultentry", "sessions_app_message": "message"}
INDEXED_CACHE_SECONDS = 60.0
_indexed: dict[tuple[str, str], tuple[float, frozenset[int]]] = {}


def index_name(table: str, agent_id: int) -> str:
    return f"{TABLES[table]}_search_gin_a{int(agent_id)}"


def _agent_indexes(table: str) -> dict[int, bool]:
    """The agents with an index of their own on `table`, and whether it is valid (an interrupted
    build leaves an invalid one, which the planner ignores)."""
    prefix = f"{TABLES[table]}_search_gin_a"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = to_regclass(%s) AND c.relname LIKE %s",
            [table, prefix + "%"],
        )
        rows = cursor.fetchall()
    found = {}
    for name, valid in rows:
        match = re.fullmatch(rf"{prefix}(\d+)", name)
        if match:
            found[int(match.group(1))] = bool(valid)
    return found


def _indexed_agents(table: str) -> frozenset[int]:
    """Agents with a valid index of their own on `table` (kept a minute in the process: a stale answer
    only adds or omits a clause that changes no result)."""
    key = (connection.settings_dict["NAME"], table)
    now = time.monotonic()
    cached = _indexed.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    agents = frozenset(agent for agent, valid in _agent_indexes(table).items() if valid)
    _indexed[key] = (now + INDEXED_CACHE_SECONDS, agents)
    return agents


def agent_clause(table: str, agent_ids) -> str | None:
    """`agent_id + 0 = <id>` when the search covers exactly one agent and that agent has an index of
    its own on `table` (see the module's docstring), else None."""
    if table not in TABLES or agent_ids is None or len(set(agent_ids)) != 1:
        return None
    agent_id = int(next(iter(agent_ids)))
    return f"agent_id + 0 = {agent_id}" if agent_id in _indexed_agents(table) else None


def agent_text_indexes_ensure() -> dict[str, dict[str, list[int]]]:
    """Build the missing indexes of agents above MEMORY_SEARCH_AGENT_INDEX_ROWS rows and drop those of
    agents below half of it, in every table of TABLES; returns the agents built and dropped per table.
    Counting goes through the agent b-tree (an index-only scan of the whole table)."""
    threshold = int(settings.MEMORY_SEARCH_AGENT_INDEX_ROWS)
    done: dict[str, dict[str, list[int]]] = {}
    for table in TABLES:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT agent_id, count(*) FROM {table} GROUP BY agent_id")
            counts = dict(cursor.fetchall())
        existing = set(_agent_indexes(table))
        built = sorted(agent for agent, rows in counts.items() if threshold and rows > threshold)
        for agent_id in built:
            index_ensure(
                index_name(table, agent_id),
                f"USING gin (search_vector) WITH (gin_pending_list_limit = {GIN_PENDING_KB})"
                f" WHERE agent_id + 0 = {int(agent_id)}",
                table=table,
            )
        dropped = sorted(agent for agent in existing if not threshold or counts.get(agent, 0) * 2 < threshold)
        for agent_id in dropped:
            index_drop(index_name(table, agent_id))
        done[table] = {"built": [a for a in built if a not in existing], "dropped": dropped}
    _indexed.clear()
    return done
