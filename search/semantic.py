"""Semantic search: nearest stored embeddings to the query's, cut by tenant in SQL.

The stable interface for the rest of search (fusion, context, the search page):

- semantic_enabled(): embeddings are configured (MEMORY_EMBEDDINGS is not off) and the database has
  pgvector. When False, search is lexical only and semantic_status() says why.
- semantic_search(project_id=, agent_id=, kinds=, query=, limit=) -> [SemanticHit], best first, with
  `.scope`: how similar the scope's embeddings are to the query (ScopeSimilarity).
- similarities(vector, items): the query's similarity to given items, read by id.
  Embeddings come from the background job, so an item written seconds ago, or edited, may be found
  only lexically (or by its previous text) until the job has embedded it.

Only vectors of the configured model are compared (after a model change, the items not yet
re-embedded are not found semantically). The scan is exact (the scope's rows through the btree
index, every distance computed) when the scope is small, and the HNSW index with pgvector's
iterative scan when it is large: see docs/benchmarks.md for where the two cross.
"""

import logging
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db import connection, connections, transaction

from memoryproject.embeddings import EmbeddingError, embedder_get
from search.embedding_index import embeddings_pending_count, pgvector_installed

logger = logging.getLogger(__name__)

# "entries"/"messages"/"files" (the names of /search's kinds) or the hits' own kind names.
_KIND_NAMES = {
    "entry": "entry",
    "entries": "entry",
    "message": "message",
    "messages": "message",
    "file": "file",
    "files": "file",
}
# Up to this many embeddings in the scope an exact scan is at least as fast as the filtered HNSW walk,
# and exact (docs/benchmarks.md: 8.8 ms against 11.6 at 20,000 rows); above it the index is walked. Module attributes so benchmarks can force either.
EXACT_SCAN_MAX_ROWS = settings.MEMORY_SEMANTIC_EXACT_MAX_ROWS
# Above this many rows the planner may split an exact scan among parallel workers: asked not to.
SERIAL_SCAN_MIN_ROWS = 10_000
# Scopes of at least this many embeddings have their count kept this long (see _scope_rows).
SCOPE_CACHE_MIN_ROWS = 1000
SCOPE_CACHE_SECONDS = 60.0
_scope_rows_cache: dict[tuple, tuple[float, int]] = {}
# Rows over-fetched per hit asked, so that several chunks of one file still leave `limit` items.
CHUNK_SLACK = 3
# Chunks whose similarity stands for a scope walked through the HNSW index (ScopeSimilarity).
STATS_SAMPLE_ROWS = 300
SAMPLE_CACHE_SECONDS = 600.0
# Pages sampled for a large scope's statistics: enough to hold this many times STATS_SAMPLE_ROWS chunks.
SAMPLE_PAGES_FACTOR = 2
_sample_cache: dict[tuple, tuple[float, list[int]]] = {}
HNSW_EF_SEARCH = settings.MEMORY_SEMANTIC_EF_SEARCH

NO_PGVECTOR = (
    "pgvector is not installed in this database: semantic search is off and search is lexical only "
    "(install the pgvector extension, then run `manage.py embed_backfill`)"
)

# Query vectors already computed, by (model, text): agents repeat queries, and context injection asks
# the same command once per section. Bounded, least recently used first out.
QUERY_CACHE_SIZE = settings.MEMORY_SEARCH_QUERY_CACHE
_query_cache: OrderedDict[tuple[str, str], tuple[float, ...]] = OrderedDict()
_query_cache_lock = threading.Lock()
# After a query the embedder could not embed (the remote server down, slow or answering nonsense),
# searches in this process are lexical for this long rather than each waiting for it again.
QUERY_EMBED_PAUSE_SECONDS = 30.0
_query_embed_paused_until = float("-inf")
_query_embed_error = ""  # why, for /healthz and /stats while the pause lasts
# The query is embedded on this one thread while the lexical arm waits on PostgreSQL (the engine
# releases the GIL). One thread per process, so the process has one team of OpenMP threads rather
# than one per request thread. Created on first use, so each forked web worker has its own.
_embed_pool: ThreadPoolExecutor | None = None
_embed_pool_lock = threading.Lock()

_pgvector_by_database: dict[str, bool] = {}
# /healthz is unauthenticated and polled; counting pending items reads every searchable row (md5 of
# its text against the stored hash), so its whole-database count is reused for this long.
PENDING_CACHE_SECONDS = 30.0
_pending_cache: dict[tuple[str, str], tuple[float, int]] = {}


@dataclass(frozen=True)
class SemanticHit:
    kind: str  # 'entry' | 'message' | 'file'
    object_id: int
    similarity: float  # cosine similarity, 1 = same direction


@dataclass(frozen=True)
class ScopeSimilarity:
    """How similar a scope's embeddings are to the query: the count, mean and standard deviation of
    the cosine similarity of its chunks (every chunk when the scope is scanned exactly, a sample of
    about STATS_SAMPLE_ROWS spread over the scope when the index is walked: _sample_ids). Hybrid
    search scales a hit's similarity by them (search/fusion.py): a cosine means little alone, its
    distance above the scope's usual one says how much a hit stands out."""

    count: int
    mean: float
    sd: float

    @staticmethod
    def pooled(parts: "list[ScopeSimilarity]") -> "ScopeSimilarity | None":
        """The statistics of several scopes together (a search over several agents)."""
        parts = [p for p in parts if p.count > 0]
        if not parts:
            return None
        count = sum(p.count for p in parts)
        mean = sum(p.count * p.mean for p in parts) / count
        variance = sum(p.count * (p.sd**2 + (p.mean - mean) ** 2) for p in parts) / count
        return ScopeSimilarity(count=count, mean=mean, sd=variance**0.5)


class SemanticHits(list):
    """semantic_search's hits, best first, with `scope`: the ScopeSimilarity of the scope searched
    (None when nothing was compared)."""

    scope: ScopeSimilarity | None = None


def _pgvector_ready() -> bool:
    name = connection.settings_dict["NAME"]
    if name not in _pgvector_by_database:
        _pgvector_by_database[name] = pgvector_installed()
    return _pgvector_by_database[name]


def semantic_enabled() -> bool:
    """Embeddings are configured and the database can store and search vectors."""
    return settings.MEMORY_EMBEDDINGS != "off" and _pgvector_ready()


def semantic_status(*, project_id: int | None = None, with_pending: bool = True) -> dict:
    """What /healthz and /stats report: {"backend", "model", "pending", "enabled"} plus "detail" when
    semantic search is off, and "query_error" while this process searches lexically because the
    embedder failed on a query (QUERY_EMBED_PAUSE_SECONDS). `pending` counts items of the project (or of every project, then counted
    at most every PENDING_CACHE_SECONDS by this process) waiting to be embedded."""
    embedder = embedder_get()
    status = {
        "backend": settings.MEMORY_EMBEDDINGS,
        "model": embedder.model_id if embedder else "",
        "pending": 0,
        "enabled": False,
    }
    if embedder is None:
        status["detail"] = "MEMORY_EMBEDDINGS is off: search is lexical only"
        return status
    if not _pgvector_ready():
        status["detail"] = NO_PGVECTOR
        return status
    status["enabled"] = True
    if time.monotonic() < _query_embed_paused_until:
        status["query_error"] = (
            f"searches of this web process are lexical for now: the last query could not be embedded "
            f"({_query_embed_error})"
        )
    if with_pending and project_id is not None:
        status["pending"] = embeddings_pending_count(project_id=project_id, model=embedder.model_id)
    elif with_pending:
        key = (connection.settings_dict["NAME"], embedder.model_id)
        counted_at, pending = _pending_cache.get(key, (float("-inf"), 0))
        if time.monotonic() - counted_at > PENDING_CACHE_SECONDS:
            pending = embeddings_pending_count(model=embedder.model_id)
            _pending_cache[key] = (time.monotonic(), pending)
        status["pending"] = pending
    return status


def query_vector(query: str, threads: int | None = None, *, timed: bool = True) -> tuple[float, ...] | None:
    """The configured model's vector of a search query, from the cache when it was asked before;
    None when embeddings are off or the query cannot be embedded (a remote backend that is down:
    the lexical arm still answers). `threads`: the local model's thread count, picked already;
    `timed=False` keeps its time from the thread chooser."""
    embedder = embedder_get()
    if embedder is None or not query.strip():
        return None
    key = (embedder.model_id, query)
    with _query_cache_lock:
        cached = _query_cache.get(key)
        if cached is not None:
            _query_cache.move_to_end(key)
            return cached
    global _query_embed_paused_until, _query_embed_error
    if time.monotonic() < _query_embed_paused_until:
        return None
    try:
        if threads:
            vector = tuple(embedder.embed_query(query, threads, timed=timed))
        else:
            vector = tuple(embedder.embed_query(query))
    except EmbeddingError as exc:
        # Every search would wait for the same slow or down server: asked again after a pause.
        _query_embed_paused_until = time.monotonic() + QUERY_EMBED_PAUSE_SECONDS
        _query_embed_error = str(exc)[:300]
        logger.warning(
            "semantic search skipped for %.0f s: the query could not be embedded: %s",
            QUERY_EMBED_PAUSE_SECONDS,
            exc,
        )
        return None
    if QUERY_CACHE_SIZE > 0:
        with _query_cache_lock:
            _query_cache[key] = vector
            _query_cache.move_to_end(key)
            while len(_query_cache) > QUERY_CACHE_SIZE:
                _query_cache.popitem(last=False)
    return vector


def background_submit(fn, *args) -> Future:
    """Run `fn(*args)` on the process's query-embed thread. One thread: tasks run one at a time, in
    the order they were submitted."""
    global _embed_pool
    if _embed_pool is None:
        with _embed_pool_lock:
            if _embed_pool is None:
                _embed_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-embed")
    return _embed_pool.submit(fn, *args)


def query_vector_start(query: str) -> Future:
    """Start embedding `query` in the background; the future's result is query_vector(query).

    The caller works meanwhile (context_build reads its other sections), so the local model embeds
    on one thread: a team of two beside the caller's work waits at each barrier for the thread the
    scheduler put aside (query_threads.py), and the one-thread time, taken beside other work, is not
    the thread chooser's to learn from."""
    if getattr(embedder_get(), "query_threads_pick", None) is not None:
        return background_submit(partial(query_vector, query, 1, timed=False))
    return background_submit(query_vector, query)


def query_vector_begin(query: str) -> Future:
    """The query's vector for a hybrid search, as a future. Embedded on this thread before the search's
    arms start when the local model would use more than one thread for it (query_threads_pick), else on
    the query-embed thread while the lexical arm runs. A team of threads needs every core it has: beside
    the lexical arm's statement two threads were no faster than one (33.8 against 33.9 ms in the server,
    14.8 against 23.7 alone), while embedding first and then running both arms at once took a hybrid
    search from 51-54 to 42-48 ms p50 (docs/benchmarks.md, twenty-seventh session)."""
    embedder = embedder_get()
    pick = getattr(embedder, "query_threads_pick", None)
    if pick is not None and query.strip() and not _query_cached(embedder.model_id, query):
        threads = pick()
        if threads > 1:
            done: Future = Future()
            done.set_result(query_vector(query, threads))
            return done
        return background_submit(query_vector, query, threads)
    return query_vector_start(query)


def _query_cached(model_id: str, query: str) -> bool:
    with _query_cache_lock:
        return (model_id, query) in _query_cache


def background_connections_close() -> None:
    """Close the query-embed thread's database connections (it keeps one, as a web process does, when
    it runs the semantic arm: search.fusion.semantic_rows_start). For tests, before their database is
    dropped."""
    if _embed_pool is not None:
        background_submit(connections.close_all).result()


def query_cache_clear() -> None:
    """Forget the cached query vectors and a pause after a failed query embedding."""
    global _query_embed_paused_until
    with _query_cache_lock:
        _query_cache.clear()
        _query_embed_paused_until = float("-inf")


def _scope_rows(cursor, *, project_id: int, agent_id: int | None, model: str, kinds: list[str]) -> int:
    """Embeddings in the scope, counted up to the exact-scan limit (an index-only scan). A count of
    SCOPE_CACHE_MIN_ROWS or more is kept SCOPE_CACHE_SECONDS in the process: it only chooses between
    the exact scan and the index, and a large scope's size moves slowly."""
    column, value = ("agent_id", agent_id) if agent_id is not None else ("project_id", project_id)
    key = (connection.settings_dict["NAME"], column, value, model, tuple(kinds), EXACT_SCAN_MAX_ROWS)
    now = time.monotonic()
    cached = _scope_rows_cache.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    cursor.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM search_embedding WHERE {column} = %s AND model = %s "
        f"AND kind = ANY(%s) LIMIT {EXACT_SCAN_MAX_ROWS + 1}) t",
        [value, model, kinds],
    )
    rows = cursor.fetchone()[0]
    if rows >= SCOPE_CACHE_MIN_ROWS:
        if len(_scope_rows_cache) > 10_000:
            _scope_rows_cache.clear()
        _scope_rows_cache[key] = (now + SCOPE_CACHE_SECONDS, rows)
    return rows


def semantic_search(
    *,
    project_id: int,
    agent_id: int | None,
    kinds: set[str],
    query: str,
    limit: int,
    vector: tuple[float, ...] | None = None,
) -> SemanticHits:
    """The `limit` items of the project (of one agent when agent_id is given) whose embedding is
    nearest the query's, best first; a file's best chunk stands for the file. [] when semantic
    search is off, the query is blank or cannot be embedded (a remote backend that is down). The
    caller has already checked the principal's scope. `vector` is query_vector(query) when the
    caller has it already."""
    wanted = sorted({_KIND_NAMES[kind] for kind in kinds if kind in _KIND_NAMES})
    if not wanted or not query.strip() or limit < 1 or not semantic_enabled():
        return SemanticHits()
    embedder = embedder_get()
    query_embedding = vector if vector is not None else query_vector(query)
    if query_embedding is None:
        return SemanticHits()
    vector = _vector_text(query_embedding)
    dimensions = int(embedder.dimensions)
    params = {
        "q": vector,
        "model": embedder.model_id,
        "project": project_id,
        "agent": agent_id,
        "kinds": wanted,
        "fetch": limit * CHUNK_SLACK,
        "limit": limit,
    }
    agent_filter = "AND agent_id = %(agent)s" if agent_id is not None else ""
    with connection.cursor() as cursor:
        scope_rows = (
            None  # HNSW indexes at most 2,000 dimensions: always exact
            if dimensions > 2000
            else _scope_rows(
                cursor, project_id=project_id, agent_id=agent_id, model=embedder.model_id, kinds=wanted
            )
        )
    exact = scope_rows is None or scope_rows <= EXACT_SCAN_MAX_ROWS
    scan_settings = {}
    if exact:
        # An expression the HNSW index does not serve: the planner takes the scope's btree index.
        distance = "(vector <=> %(q)s::vector)"
        if scope_rows is None or scope_rows > SERIAL_SCAN_MIN_ROWS:
            # In one process: parallel workers made a 50,000-row scan 1.2 times slower on 2
            # cores (docs/benchmarks.md); smaller scans are never parallel.
            scan_settings = {"max_parallel_workers_per_gather": "0"}
    else:
        distance = f"(vector::vector({dimensions}) <=> %(q)s::vector({dimensions}))"
        # pgvector 0.8: keep walking the graph until enough rows pass the tenant filter.
        scan_settings = {"hnsw.ef_search": str(int(HNSW_EF_SEARCH)), "hnsw.iterative_scan": "relaxed_order"}
    # A transaction only where SET LOCAL needs one: a small exact scan is a single statement, and so
    # is any scan on the semantic arm's own connection, which keeps the settings for the session.
    scope_where = (
        f"dimensions = {dimensions} AND model = %(model)s AND project_id = %(project)s {agent_filter}"
        " AND kind = ANY(%(kinds)s)"
    )
    local = bool(scan_settings) and not _session_settings_kept(scan_settings)
    with transaction.atomic() if local else nullcontext(), connection.cursor() as cursor:
        if local:
            cursor.execute("; ".join(f"SET LOCAL {name} = {value}" for name, value in scan_settings.items()))
        if exact:
            cursor.execute(_EXACT_SQL.format(distance=distance, where=scope_where), params)
            rows = cursor.fetchall()
            stats = rows[0][3:] if rows else (0, None, None)
        else:
            rows, stats = _walk_rows(cursor, distance, scope_where, params, scope_rows)
    hits = SemanticHits(SemanticHit(kind=row[0], object_id=row[1], similarity=1.0 - row[2]) for row in rows)
    count, mean_distance, sd = stats
    if count:
        hits.scope = ScopeSimilarity(count=int(count), mean=1.0 - float(mean_distance), sd=float(sd or 0.0))
    return hits


# The semantic arm's own connection (own_connection): the scan settings it keeps for its session,
# by the connection they were set on.
_own_connection = threading.local()
_session_settings: "weakref.WeakKeyDictionary[object, dict[str, str]]" = weakref.WeakKeyDictionary()
# Every setting a scan may ask for, set together on an own connection the first time (one statement).
_SESSION_SETTINGS = ("max_parallel_workers_per_gather", "hnsw.ef_search", "hnsw.iterative_scan")


@contextmanager
def own_connection():
    """Mark this thread's default connection, for the block, as the semantic arm's own
    (search.fusion.semantic_rows_start): a connection that runs nothing but the arm's statements, so
    the scan settings may stay set on its session instead of being SET LOCAL in a transaction of
    their own for every search (BEGIN, SET LOCAL, the scan, COMMIT: three round trips more on the
    arm's path, each a wait for the database's process when the cores are busy)."""
    _own_connection.active = True
    try:
        yield
    finally:
        _own_connection.active = False


def _session_settings_kept(wanted: dict[str, str]) -> bool:
    """On the arm's own connection outside a transaction: `wanted` is set for the session (all the
    scan settings at once, the first time or when one changed), and True. Elsewhere False: the caller
    sets them LOCAL. The other settings a scan does not ask for stay as they are: the exact scan
    ignores the HNSW ones, and the HNSW walk is never parallel."""
    if not getattr(_own_connection, "active", False) or connection.in_atomic_block:
        return False
    connection.ensure_connection()
    kept = _session_settings.get(connection.connection)
    full = {
        "max_parallel_workers_per_gather": "0",
        "hnsw.ef_search": str(int(HNSW_EF_SEARCH)),
        "hnsw.iterative_scan": "relaxed_order",
    }
    if any(full.get(name) != value for name, value in wanted.items()):
        return False  # a setting this module does not keep
    if kept != full:
        with connection.cursor() as cursor:
            cursor.execute("; ".join(f"SET {name} = {full[name]}" for name in _SESSION_SETTINGS))
        _session_settings[connection.connection] = full
    return True


def _walk_rows(cursor, distance: str, scope_where: str, params: dict, scope_rows: int) -> tuple[list, tuple]:
    """The HNSW walk's nearest rows and the statistics of a sample of the scope, or the exact scan's
    rows and statistics when the walk came back short (_walk_short_scanned)."""
    cursor.execute(_NEAREST_SQL.format(distance=distance, where=scope_where), params)
    rows = cursor.fetchall()
    if len(rows) < params["limit"]:
        rows = _walk_short_scanned(cursor, scope_where, params, found=len(rows))
        return rows, (rows[0][3:] if rows else (0, None, None))
    return rows, _sample_similarity(cursor, scope_where, params, scope_rows)


def _walk_short_scanned(cursor, scope_where: str, params: dict, found: int) -> list[tuple]:
    """The exact scan's rows, for an HNSW walk that brought back fewer items than asked. The scope is
    walked for holding more than EXACT_SCAN_MAX_ROWS chunks, so it has them (short of a few files cut
    into that many chunks, or a small scope where that limit is 0: scanned every time, and cheap for
    the small scope), and two things make a walk fall short:

    - the walk stops after hnsw.max_scan_tuples rows (pgvector 0.8's iterative scan), and other
      tenants' rows of a shared index can fill that quota before the scope's own come up;
    - a graph holding many copies of the same vectors (one text stored again and again, or rows
      deleted or rolled back and not yet vacuumed) can leave a newly added copy with no edge
      leading to it: it is in the index and never reached. pgvector's HNSW is not built for many
      identical vectors: after 300 rounds of three vectors and five others (2,400 rows), two of three
      copies added then were unreachable in one trial of two; after 500 rounds, in every question
      asked. The test suite's database, which stores the same texts thousands of times over, did it
      too (docs/benchmarks.md).

    The exact scan reads every row of the scope, so it finds them: slower, and only on this path."""
    logger.debug(
        "semantic search: the HNSW walk found %d of %d items asked; the scope is scanned exactly",
        found,
        params["limit"],
    )
    cursor.execute(_EXACT_SQL.format(distance="(vector <=> %(q)s::vector)", where=scope_where), params)
    return cursor.fetchall()


def _sample_similarity(cursor, scope_where: str, params: dict, rows_at_least: int) -> tuple:
    """(count, mean, sd) of the query's distance to a sample of the scope's chunks (`_sample_ids`),
    for a scope walked through the HNSW index, whose distances are not all computed. It was the
    first STATS_SAMPLE_ROWS chunks the scan met: the oldest, and all of one kind when the scope held
    that many entries (the index orders the kinds), so a search of messages was scaled by entries."""
    cursor.execute(
        "SELECT count(*), avg(d), stddev_pop(d) FROM (SELECT (vector <=> %(q)s::vector) AS d"
        " FROM search_embedding WHERE id = ANY(%(sample)s)) sample",
        {**params, "sample": _sample_ids(cursor, scope_where, params, rows_at_least)},
    )
    return cursor.fetchone()


def _sample_ids(cursor, scope_where: str, params: dict, rows_at_least: int) -> list[int]:
    """About STATS_SAMPLE_ROWS ids of the scope's chunks, spread over its whole history and its kinds,
    kept SAMPLE_CACHE_SECONDS in the process.

    Read from random pages of the table (TABLESAMPLE SYSTEM, with a fixed seed: the same pages while
    the table's layout stays), as many as should hold SAMPLE_PAGES_FACTOR x STATS_SAMPLE_ROWS of the
    scope's chunks given `rows_at_least` of them, then cut to the STATS_SAMPLE_ROWS whose id hashes
    lowest. Reading every chunk of the scope to choose cost 90-100 ms per cold search of a project of
    100,000 chunks; the pages cost a few. A scope whose chunks the pages missed (fewer than a third
    of the sample) is read whole once."""
    key = (
        connection.settings_dict["NAME"],
        params["model"],
        params["project"],
        params["agent"],
        tuple(params["kinds"]),
    )
    now = time.monotonic()
    cached = _sample_cache.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    share = min(100.0, 100.0 * SAMPLE_PAGES_FACTOR * STATS_SAMPLE_ROWS / max(rows_at_least, 1))
    pick = f"ORDER BY hashint8(id) LIMIT {int(STATS_SAMPLE_ROWS)}"
    cursor.execute(
        f"SELECT id FROM search_embedding TABLESAMPLE SYSTEM (%(share)s) REPEATABLE (0) WHERE {scope_where} {pick}",
        {**params, "share": share},
    )
    ids = [row[0] for row in cursor.fetchall()]
    if len(ids) < STATS_SAMPLE_ROWS // 3:
        cursor.execute(f"SELECT id FROM search_embedding WHERE {scope_where} {pick}", params)
        ids = [row[0] for row in cursor.fetchall()]
    if len(_sample_cache) > 10_000:
        _sample_cache.clear()
    _sample_cache[key] = (now + SAMPLE_CACHE_SECONDS, ids)
    return ids


# The nearest chunks, grouped by item (a file's best chunk stands for the file).
_NEAREST_SQL = """
    SELECT kind, object_id, min(distance) AS distance FROM (
        SELECT kind, object_id, {distance} AS distance
        FROM search_embedding WHERE {where}
        ORDER BY distance LIMIT %(fetch)s
    ) nearest
    GROUP BY kind, object_id
    ORDER BY distance, object_id DESC
    LIMIT %(limit)s
"""
# The same from an exact scan, whose distances of every chunk of the scope also give its statistics
# (computed once, read twice).
_EXACT_SQL = """
    WITH scored AS MATERIALIZED (
        SELECT kind, object_id, {distance} AS distance FROM search_embedding WHERE {where}
    ), nearest AS (
        SELECT kind, object_id, min(distance) AS distance FROM (
            SELECT kind, object_id, distance FROM scored ORDER BY distance LIMIT %(fetch)s
        ) t
        GROUP BY kind, object_id
        ORDER BY distance, object_id DESC
        LIMIT %(limit)s
    )
    SELECT n.kind, n.object_id, n.distance, s.count, s.mean, s.sd
    FROM nearest n CROSS JOIN (
        SELECT count(*) AS count, avg(distance) AS mean, stddev_pop(distance) AS sd FROM scored
    ) s
    ORDER BY n.distance, n.object_id DESC
"""


def similarities(vector: tuple[float, ...], items: list[tuple[str, int]]) -> dict[tuple[str, int], float]:
    """The query's cosine similarity to each (kind, object_id) item that has an embedding of the
    configured model (an item's best chunk), read by id: hybrid search completes the rows only the
    lexical arm found with it (search/fusion.py)."""
    embedder = embedder_get()
    if embedder is None or not items or not vector:
        return {}
    names = [_KIND_NAMES[kind] for kind, _ in items]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT e.kind, e.object_id, 1 - min(e.vector <=> %s::vector)
            FROM unnest(%s::text[], %s::bigint[]) AS i(kind, object_id)
            JOIN search_embedding e ON e.kind = i.kind AND e.object_id = i.object_id
            WHERE e.model = %s AND e.dimensions = {int(embedder.dimensions)}
            GROUP BY e.kind, e.object_id
            """,
            [_vector_text(vector), names, [object_id for _, object_id in items], embedder.model_id],
        )
        return {(kind, object_id): float(similarity) for kind, object_id, similarity in cursor.fetchall()}


def _vector_text(vector) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
