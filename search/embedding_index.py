"""Keeping embeddings of entries, messages and workspace files up to date, off the request path.

Nothing here runs when an item is written (writes stay as fast as before, and no signal is needed):
the django-q2 job (search.tasks.embeddings_refresh_scheduled) and `manage.py embed_backfill` find
items whose embedding is missing or stale and embed them in batches. An item is stale when md5 of
its embedded text differs from the stored `source_hash` (it was edited) or its vectors were made by
another model than the configured one (the operator changed the model: everything re-embeds in the
background, and until then semantic search sees only the items already re-embedded). Embeddings of
deleted items are removed by the same job.

The embedded text and its hash are computed by PostgreSQL (DOCUMENTS), so what is compared and what
is embedded can never disagree.
"""

import hashlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction

from memoryproject.embeddings import Embedder, EmbeddingError, embedder_get

logger = logging.getLogger(__name__)

# Any two processes embedding at once would do the same work twice: one runner at a time.
ADVISORY_LOCK_KEY = 0x656D6265  # "embe"
# Two processes building the same index would wait on each other: one builder at a time.
INDEX_LOCK_KEY = 0x76696478  # "vidx"
# When this process last looked for agents that need an HNSW index of their own: after every run that
# embedded or removed something, else once an hour (an agent can only cross the size by a change, but
# a server upgraded with large agents already stored must find them once).
_agent_indexes_checked = float("-inf")
AGENT_INDEXES_CHECK_SECONDS = 3600
# A run's result (the admin's Background jobs) lists at most this many reasons items were refused.
MAX_ERRORS_REPORTED = 5

VECTOR_STORAGE_SQL = """
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')
       AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS vector;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'pgvector is available but this role may not create it: semantic search stays off';
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        ALTER TABLE search_embedding ADD COLUMN IF NOT EXISTS vector vector;
    END IF;
END
$$;
"""


@dataclass(frozen=True)
class Document:
    kind: str  # EmbeddingKind value
    table: str
    text_sql: str  # the embedded text, over alias d
    live_sql: str  # which rows are embedded


DOCUMENTS = (
    Document("entry", "vault_vaultentry", "d.content", "true"),
    # Tool output and system prompts are found lexically; embedding them would cost the most and
    # help the least.
    Document("message", "sessions_app_message", "d.text", "d.role IN ('user', 'assistant') AND d.text <> ''"),
    Document("file", "vault_workspacefile", "d.path || E'\\n\\n' || d.content", "d.deleted_at IS NULL"),
)


@dataclass
class RefreshOutcome:
    embedded: int = 0  # items
    chunks: int = 0  # chunks embedded
    reused: int = 0  # chunks whose text was unchanged: their vectors were kept
    removed: int = 0  # embeddings of deleted or no longer embedded items
    pending: int = 0  # items still waiting when the run stopped
    seconds: float = 0.0
    skipped: str = ""  # why the run did nothing (another process refreshing), for whoever reports it
    failed: int = 0  # items the server refused to embed, even alone: left pending, tried again next run
    errors: list[str] = field(default_factory=list)  # the first few reasons they were refused


def pgvector_installed() -> bool:
    """Whether this database can store vectors (the extension and the column exist)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AND EXISTS ("
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'search_embedding' "
            "AND column_name = 'vector' AND table_schema = current_schema())"
        )
        return bool(cursor.fetchone()[0])


def vector_storage_ensure() -> bool:
    """Create the extension and the vector column where pgvector became available after migrating,
    and the indexes for the configured dimension; return whether vectors can be stored."""
    if not pgvector_installed():
        with connection.cursor() as cursor:
            cursor.execute(VECTOR_STORAGE_SQL)
        if not pgvector_installed():
            return False
    embedder = embedder_get()
    if embedder is not None:
        vector_indexes_ensure(embedder.dimensions)
    return True


# HNSW indexes at most 2,000 dimensions.
HNSW_MAX_DIMENSIONS = 2000
# A b-tree entry holds at most about 2,700 bytes: a vector of up to 512 dimensions (2 kB) fits.
SCOPE_INDEX_MAX_DIMENSIONS = 512


def vector_indexes_ensure(dimensions: int) -> None:
    """The partial indexes of one dimension (a column of mixed dimensions cannot be indexed whole),
    built without blocking writes when not inside a transaction (the job and the command are not):

    - the HNSW index, walked for scopes above MEMORY_SEMANTIC_EXACT_MAX_ROWS;
    - a b-tree on (agent, model, kind) holding the vectors themselves, so that the exact scan of an
      agent's embeddings reads that agent's index pages only (an index-only scan) instead of one
      table page per row: an agent's rows are spread over the table in the order they were embedded.
      At 100,000 entries it made the scan of an 8,700-row agent 1.8 times as fast and of a
      1,700-row agent 3 times (docs/benchmarks.md), for about as much disk again as the vectors."""
    dimensions = int(dimensions)
    if dimensions <= HNSW_MAX_DIMENSIONS:
        index_ensure(
            f"search_embedding_hnsw_{dimensions}",
            f"USING hnsw ((vector::vector({dimensions})) vector_cosine_ops) WHERE dimensions = {dimensions}",
        )
    if dimensions <= SCOPE_INDEX_MAX_DIMENSIONS:
        index_ensure(
            f"search_embedding_scope_{dimensions}",
            f"(agent_id, model, kind) INCLUDE (project_id, object_id, vector) WHERE dimensions = {dimensions}",
        )


def agent_indexes_due(outcome: RefreshOutcome, now: float) -> bool:
    """Whether a refresh run should look for agents that need an HNSW index of their own (or no
    longer do): after it embedded or removed vectors, else once an hour (see _agent_indexes_checked)."""
    return (
        bool(outcome.embedded or outcome.removed)
        or now - _agent_indexes_checked > AGENT_INDEXES_CHECK_SECONDS
    )


def agent_index_name(dimensions: int, agent_id: int) -> str:
    return f"search_embedding_hnsw_{int(dimensions)}_a{int(agent_id)}"


def agent_vector_indexes_ensure(dimensions: int, model: str) -> None:
    """An HNSW index of its own for each agent holding more than MEMORY_SEMANTIC_EXACT_MAX_ROWS vectors
    of the model (the size above which its semantic search walks a graph instead of scanning), and
    none for an agent left with less than half that many.

    Walking the shared index for one agent among many, pgvector's filtered iterative scan visits
    every other tenant's vectors on its way: at 1,000,000 entries agents of 47,000 and 87,000 vectors
    took 39 and 54 ms a query (p50), against 4 and 6 ms on an index of their own, which also found
        more of the exact nearest neighbours (docs/benchmarks.md). The search's statement names the agent
    as a literal, so the planner takes the agent's partial index by itself. Agents are counted as the
    search counts them, by the model's vectors (an index-only scan: 35 ms at 1,000,000)."""
    dimensions = int(dimensions)
    if dimensions > HNSW_MAX_DIMENSIONS:
        return
    threshold = int(settings.MEMORY_SEMANTIC_EXACT_MAX_ROWS)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT agent_id, count(*) FROM search_embedding WHERE model = %s GROUP BY agent_id", [model]
        )
        counts = dict(cursor.fetchall())
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'search_embedding' AND indexname LIKE %s",
            [f"search_embedding_hnsw_{dimensions}_a%"],
        )
        named = (
            re.fullmatch(rf"search_embedding_hnsw_{dimensions}_a(\d+)", name) for (name,) in cursor.fetchall()
        )
        existing = [int(match.group(1)) for match in named if match]
    for agent_id in sorted(agent for agent, rows in counts.items() if rows > threshold):
        index_ensure(
            agent_index_name(dimensions, agent_id),
            f"USING hnsw ((vector::vector({dimensions})) vector_cosine_ops)"
            f" WHERE dimensions = {dimensions} AND agent_id = {int(agent_id)}",
        )
    for agent_id in existing:
        if counts.get(agent_id, 0) * 2 < threshold:
            index_drop(agent_index_name(dimensions, agent_id))


def index_drop(name: str) -> None:
    with connection.cursor() as cursor:
        concurrently = "" if connection.in_atomic_block else "CONCURRENTLY"
        cursor.execute(f"DROP INDEX {concurrently} IF EXISTS {name}")


def _index_valid(cursor, name: str) -> bool | None:
    """Whether the index is usable; None when it does not exist. An interrupted CREATE INDEX
    CONCURRENTLY leaves an invalid index behind, which the planner ignores."""
    cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
    row = cursor.fetchone()
    return None if row is None else bool(row[0])


def index_ensure(name: str, definition: str, table: str = "search_embedding") -> None:
    """Build the index unless a valid one exists; one left invalid by an interrupted build is dropped
    and built again. One builder at a time (an index being built is not valid yet either)."""
    with connection.cursor() as cursor:
        if _index_valid(cursor, name):
            return
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [INDEX_LOCK_KEY])
        if not cursor.fetchone()[0]:
            return  # another process is building it
        try:
            valid = _index_valid(cursor, name)
            if valid:
                return
            concurrently = "" if connection.in_atomic_block else "CONCURRENTLY"
            if valid is False:
                logger.warning("index %s was left invalid by an interrupted build: building it again", name)
                cursor.execute(f"DROP INDEX {concurrently} IF EXISTS {name}")
            cursor.execute(f"CREATE INDEX {concurrently} IF NOT EXISTS {name} ON {table} {definition}")
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [INDEX_LOCK_KEY])


def _stale_sql(document: Document) -> str:
    return f"""
        FROM {document.table} d
        WHERE {document.live_sql} AND NOT EXISTS (
            SELECT 1 FROM search_embedding x
            WHERE x.kind = '{document.kind}' AND x.object_id = d.id AND x.chunk = 0
              AND x.model = %(model)s AND x.source_hash = md5({document.text_sql})
        )"""


def embeddings_pending_count(*, project_id: int | None = None, model: str | None = None) -> int:
    """Items whose embedding is missing or stale (all projects, or one). 0 when embeddings are off."""
    if model is None:
        embedder = embedder_get()
        if embedder is None:
            return 0
        model = embedder.model_id
    total = 0
    with connection.cursor() as cursor:
        for document in DOCUMENTS:
            scope = " AND d.project_id = %(project)s" if project_id is not None else ""
            cursor.execute(
                f"SELECT count(*) {_stale_sql(document)}{scope}", {"model": model, "project": project_id}
            )
            total += cursor.fetchone()[0]
    return total


def chunks_split(text: str, size: int, max_chunks: int) -> list[str]:
    """Cut text into pieces of about `size` characters, at a paragraph, line or word break when one
    falls in the second half of the piece."""
    text = text.strip()
    chunks: list[str] = []
    while text and len(chunks) < max_chunks:
        if len(text) <= size:
            chunks.append(text)
            break
        cut = -1
        for separator in ("\n\n", "\n", ". ", " "):
            cut = text.rfind(separator, size // 2, size)
            if cut > 0:
                cut += len(separator)
                break
        if cut <= 0:
            cut = size
        chunks.append(text[:cut].strip())
        text = text[cut:].strip()
    return [chunk for chunk in chunks if chunk] or [""]


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _pending_page(document: Document, model: str, limit: int, below_id: int | None) -> list[tuple]:
    """The next `limit` pending items below `below_id`, newest first: each page continues where the
    last stopped, so a backfill walks the table once rather than once per batch."""
    below = " AND d.id < %(below)s" if below_id is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            # Only what chunking can use is read (the hash covers the whole text).
            f"SELECT d.id, d.project_id, d.agent_id, left({document.text_sql}, %(chars)s), "
            f"md5({document.text_sql}){_stale_sql(document)}{below} ORDER BY d.id DESC LIMIT %(limit)s",
            {
                "model": model,
                "limit": limit,
                "below": below_id,
                "chars": settings.MEMORY_EMBEDDINGS_CHUNK_CHARS * settings.MEMORY_EMBEDDINGS_MAX_CHUNKS,
            },
        )
        return cursor.fetchall()


def _stored_chunks(document: Document, embedder: Embedder, object_ids: list[int]) -> dict[tuple, str]:
    """The vectors (as text) already stored for these items by the configured model, by (item, md5 of
    the chunk's text)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT object_id, chunk_hash, vector::text FROM search_embedding WHERE kind = %s"
            " AND object_id = ANY(%s) AND model = %s AND dimensions = %s AND chunk_hash <> ''",
            [document.kind, object_ids, embedder.model_id, embedder.dimensions],
        )
        return {(object_id, chunk_hash): vector for object_id, chunk_hash, vector in cursor.fetchall()}


def _batch_store(document: Document, embedder: Embedder, rows: list[tuple]) -> tuple[int, int]:
    """Embed the rows' chunks in one model call and replace their stored embeddings; a chunk whose
    text is unchanged keeps its vector (a day's note that grew re-embeds its last chunks, not all of
    them). Returns (chunks embedded, chunks reused)."""
    pieces: list[tuple[tuple, int, str, str]] = []
    for row in rows:
        chunks = chunks_split(
            row[3], settings.MEMORY_EMBEDDINGS_CHUNK_CHARS, settings.MEMORY_EMBEDDINGS_MAX_CHUNKS
        )
        pieces.extend(
            (row, number, chunk, hashlib.md5(chunk.encode(), usedforsecurity=False).hexdigest())
            for number, chunk in enumerate(chunks)
        )
    stored = _stored_chunks(document, embedder, [row[0] for row in rows])
    new = [piece for piece in pieces if (piece[0][0], piece[3]) not in stored]
    made, errors = passages_embed(embedder, [chunk for _, _, chunk, _ in new]) if new else ([], [])
    refused = {piece[0][0] for piece, vector in zip(new, made, strict=True) if vector is None}
    if refused:  # those items keep what they had and stay pending; the rest of the batch is stored
        pieces = [piece for piece in pieces if piece[0][0] not in refused]
        rows = [row for row in rows if row[0] not in refused]
    made = iter(vector for piece, vector in zip(new, made, strict=True) if piece[0][0] not in refused)
    vectors = [
        stored.get((row[0], chunk_hash)) or _vector_literal(next(made)) for row, _, _, chunk_hash in pieces
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM search_embedding WHERE kind = %s AND object_id = ANY(%s)",
            [document.kind, [row[0] for row in rows]],
        )
        cursor.executemany(
            "INSERT INTO search_embedding (kind, object_id, chunk, project_id, agent_id, model, dimensions,"
            " source_hash, chunk_hash, embedded_at, vector)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, now(), %s::vector)",
            [
                (
                    document.kind,
                    row[0],
                    number,
                    row[1],
                    row[2],
                    embedder.model_id,
                    embedder.dimensions,
                    row[4],
                    chunk_hash,
                    vector,
                )
                for (row, number, _, chunk_hash), vector in zip(pieces, vectors, strict=True)
            ],
        )
    embedded = len([piece for piece in new if piece[0][0] not in refused])
    return embedded, len(pieces) - embedded, len(refused), errors


def passages_embed(embedder: Embedder, texts: list[str]) -> tuple[list[list[float] | None], list[str]]:
    """The vectors of `texts` in one call, and when the server refuses what it was sent (a text too
    long for its model, an answer it cannot give for one of them) each text alone: None for a text it
    refuses alone, with the reasons. Without this one such text failed its batch on every run and, the
    job going newest first, no older item was ever embedded. A server that is down or refuses
    everything (a wrong key or model; no text of the batch embeds alone) raises EmbeddingError: the
    run stops and the items wait for the next."""
    try:
        return embedder.embed_passages(texts), []
    except EmbeddingError as exc:
        if not exc.of_input:
            raise
        if len(texts) == 1:
            return [None], [str(exc)]
    vectors: list[list[float] | None] = []
    errors: list[str] = []
    for text in texts:
        try:
            vectors.append(embedder.embed_passages([text])[0])
        except EmbeddingError as exc:
            if not exc.of_input:
                raise
            vectors.append(None)
            errors.append(str(exc))
            logger.warning("a text was not embedded (it stays pending): %s", exc)
    if all(vector is None for vector in vectors):
        raise EmbeddingError(f"no text of the batch could be embedded alone either: {errors[0]}")
    return vectors, errors


def embeddings_orphans_remove() -> int:
    """Delete embeddings whose item was deleted or is no longer embedded (a file deleted softly)."""
    removed = 0
    with connection.cursor() as cursor:
        for document in DOCUMENTS:
            cursor.execute(
                f"""DELETE FROM search_embedding x WHERE x.kind = %s AND NOT EXISTS (
                        SELECT 1 FROM {document.table} d WHERE d.id = x.object_id AND {document.live_sql})""",
                [document.kind],
            )
            removed += cursor.rowcount
    return removed


def embeddings_stale_remove(kind: str, *, project_id: int, agent_ids: list[int] | None = None) -> int:
    """Delete the embeddings of a project's (or those agents') items of `kind` whose text changed since
    they were embedded. The refresh job embeds them again; until then semantic search must not find a
    text a forget erased (a daily note's exchange) by its old meaning. Returns the rows deleted."""
    document = next(d for d in DOCUMENTS if d.kind == kind)
    agents = " AND d.agent_id = ANY(%(agents)s)" if agent_ids is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""DELETE FROM search_embedding x USING {document.table} d
                WHERE x.kind = %(kind)s AND x.object_id = d.id AND d.project_id = %(project)s{agents}
                  AND x.source_hash <> md5({document.text_sql})""",
            {"kind": kind, "project": project_id, "agents": agent_ids},
        )
        return cursor.rowcount


def embeddings_refresh(
    *,
    max_seconds: float | None = None,
    batch_size: int | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> RefreshOutcome:
    """Embed items whose embedding is missing or stale, newest first, in batches, until none is left
    or max_seconds have passed; remove embeddings of deleted items. `progress(done, total)` is
    called after each batch. With dry_run nothing is embedded or removed: the outcome's `pending`
    says how many items would be. Does nothing when embeddings are off, pgvector is missing, or
    another process is already refreshing."""
    started = time.perf_counter()
    outcome = RefreshOutcome()
    embedder = embedder_get()
    if embedder is None:
        return outcome
    if dry_run:
        outcome.pending = embeddings_pending_count(model=embedder.model_id)
        return outcome
    if not vector_storage_ensure():
        return outcome
    batch_size = batch_size or settings.MEMORY_EMBEDDINGS_BATCH

    def out_of_time() -> bool:
        return max_seconds is not None and time.perf_counter() - started > max_seconds

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_LOCK_KEY])
        if not cursor.fetchone()[0]:
            logger.info("embeddings refresh skipped: another process is refreshing")
            outcome.skipped = (
                "another process is embedding now (the background job or another embed_backfill)"
            )
            return outcome
    try:
        outcome.removed = embeddings_orphans_remove()
        total = embeddings_pending_count(model=embedder.model_id)
        if progress:
            progress(0, total)
        for document in DOCUMENTS:
            below_id = None
            while not out_of_time():
                page = _pending_page(document, embedder.model_id, max(batch_size * 16, 256), below_id)
                if not page:
                    break
                below_id = page[-1][0]
                for start in range(0, len(page), batch_size):
                    if out_of_time():
                        break
                    rows = page[start : start + batch_size]
                    embedded, reused, failed, errors = _batch_store(document, embedder, rows)
                    outcome.chunks += embedded
                    outcome.reused += reused
                    outcome.embedded += len(rows) - failed
                    outcome.failed += failed
                    outcome.errors = (outcome.errors + errors)[:MAX_ERRORS_REPORTED]
                    if progress:
                        progress(outcome.embedded, total)
        outcome.pending = max(total - outcome.embedded, 0)
        # Not inside a caller's transaction: an index is built without blocking writes only outside one.
        if agent_indexes_due(outcome, time.monotonic()) and not connection.in_atomic_block:
            agent_vector_indexes_ensure(embedder.dimensions, embedder.model_id)
            global _agent_indexes_checked
            _agent_indexes_checked = time.monotonic()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK_KEY])
    outcome.seconds = time.perf_counter() - started
    return outcome
