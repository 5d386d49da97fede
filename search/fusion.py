"""Hybrid retrieval: the lexical arm (BM25 in SQL, search/ranking.py) fused with the semantic arm
(embeddings, search/semantic.py), then the recency/importance/access factors.

Each arm gives its best FUSION_DEPTH rows (per kind for the lexical arm). The default fusion
(MEMORY_SEARCH_FUSION=zscore) turns each arm's scores into standard scores: the BM25 text scores
(before the factors) against the arm's own rows and its unused depth (rows of score 0), the cosine
similarities against the whole scope searched (how far a hit stands out from the agent's usual
similarity to this query), with the rows only the lexical arm found given their own similarity, read
by id. The two are averaged, the lexical arm's share following the strength of its evidence (its
best row's text score over the most the query could score: a paraphrase's chance word match counts
less than a keyword's), and scaled to 0..1 above a row of no evidence. Semantic mode alone keeps
min-max (search/selectors.py). `minmax` (BM25 / its best, similarity min-max over the arm's rows,
averaged 0.5 / 0.5, a row one arm did not find getting 0 from it) and `rrf` (reciprocal rank fusion)
remain. A message then gains a share of its best found neighbour's relevance
(search/conversation.py, off by default), and the result is multiplied by the row's factors, as a
lexical score is. Every result says which arm(s) found it (`arms`). The semantic arm's rows are read
with the same scope and filters (category, tags, status, since, until, internal, deleted) as the
lexical ones: a semantic hit the filters exclude is dropped.

Measured on LoCoMo, REALTALK and bench_quality (docs/benchmarks.md): z-scores against min-max (the
default until 2026-11-26) and reciprocal rank fusion.
"""

from collections.abc import Callable
from concurrent.futures import Future

from django.conf import settings
from django.db import close_old_connections, connection

from memoryproject.errors import InvalidInput
from search import ranking
from search.conversation import neighbours_spread
from search.semantic import (
    ScopeSimilarity,
    background_submit,
    own_connection,
    query_vector,
    query_vector_start,
    semantic_enabled,
    semantic_search,
    semantic_status,
    similarities,
)

MODES = ("hybrid", "lexical", "semantic")
FUSION_DEPTH = 50
LEXICAL_WEIGHT = 0.5  # min-max fusion
# Z-score fusion (the default): the lexical arm's share follows the strength of its evidence, its best
# row's BM25 text score over the most the query could score (every term matched, the sum of their
# idf): ZSCORE_LEXICAL_WEIGHT from a strength of ZSCORE_EVIDENCE_FULL up, down to
# ZSCORE_LEXICAL_WEIGHT_MIN at none. A paraphrase shares only chance words with its answer (strength
# 0.04 at the median of bench_quality's paraphrase-xl questions, 0.14 of its paraphrase group), a
# keyword question all of them (1.0); LoCoMo's questions sit at 0.43. A fixed share had to choose:
# LoCoMo wanted 0.5-0.6, the paraphrases 0.2-0.3 (0.4 was the compromise until 2026-11-26).
# Chosen on LoCoMo and bench_quality, checked on REALTALK (docs/benchmarks.md, twelfth session).
ZSCORE_LEXICAL_WEIGHT = 0.5
ZSCORE_LEXICAL_WEIGHT_MIN = 0.1
ZSCORE_EVIDENCE_FULL = 0.2
RRF_K = 10


def resolve_mode(mode: str | None) -> str:
    """The mode asked for, or the default: hybrid when semantic search is available, else lexical.
    Hybrid asked for without semantic search is lexical; semantic alone is refused."""
    if mode is not None and mode not in MODES:
        raise InvalidInput(
            f"Unknown mode {mode!r}; use {', '.join(MODES)}.", [{"loc": ["mode"], "msg": "unknown"}]
        )
    enabled = semantic_enabled()
    if mode is None:
        return "hybrid" if enabled else "lexical"
    if mode == "semantic" and not enabled:
        detail = semantic_status(with_pending=False).get("detail", "semantic search is off")
        raise InvalidInput(f"mode=semantic is not available: {detail}", [{"loc": ["mode"], "msg": "off"}])
    if mode == "hybrid" and not enabled:
        return "lexical"
    return mode


_KIND_OF = {"entries": "entry", "messages": "message", "files": "file"}


class SemanticRows(list):
    """The semantic arm's rows, with what the z-score fusion needs: `scope`, how similar the scope's
    embeddings are to the query (semantic.ScopeSimilarity, None when unknown), and `vector`, the
    query's embedding (for the similarity of rows only the lexical arm found)."""

    scope: ScopeSimilarity | None = None
    vector: tuple[float, ...] | None = None

    def like(self, rows: list[dict]) -> "SemanticRows":
        """`rows` (a part of these) with the same scope and vector."""
        part = SemanticRows(rows)
        part.scope, part.vector = self.scope, self.vector
        return part


def semantic_rows(q: str, scope, filters, kinds: list[str], depth: int, vector=None) -> SemanticRows:
    """The semantic arm: the nearest items of the scope, read with the search's filters, each with
    `similarity` and its score `factor`. `vector` is the query's embedding when already computed."""
    agents = scope.agent_ids if scope.agent_ids is not None else [None]
    vector = vector if vector is not None else query_vector(q)
    hits, scopes = [], []
    for agent_id in agents:
        found = semantic_search(
            project_id=scope.project_id,
            agent_id=agent_id,
            kinds=set(kinds),
            query=q,
            limit=depth,
            vector=vector,
        )
        hits += found
        if found.scope is not None:
            scopes.append(found.scope)
    similarity = {(hit.kind, hit.object_id): hit.similarity for hit in hits}
    rows = SemanticRows()
    rows.scope, rows.vector = ScopeSimilarity.pooled(scopes), vector
    for kind in kinds:
        ids = [object_id for (hit_kind, object_id) in similarity if hit_kind == _KIND_OF[kind]]
        if ids:
            rows += rows_by_ids(kind, ids, scope, filters)
    for row in rows:
        row["similarity"] = similarity[(row["kind"], row["id"])]
    return rows


class SemanticArm:
    """The semantic arm started beside the lexical one (semantic_rows_start). `result()` gives its rows;
    `vector()` the query's embedding as soon as it is known, before the arm's scan has finished, so the
    caller can read the similarity of its lexical rows (lexical_similarities) while the scan runs."""

    def __init__(self, rows: Callable[[], list[dict]], vector: Callable[..., tuple | None]):
        self._rows = rows
        self._vector = vector

    def result(self) -> list[dict]:
        return self._rows()

    def vector(self, timeout: float | None = None) -> tuple[float, ...] | None:
        return self._vector(timeout)


def _on_own_connection(compute: Callable[[], list[dict]]) -> list[dict]:
    """Run `compute` on this (background) thread's database connection, handled as a request handles
    its own: closed before use when broken or past DATABASE_CONN_MAX_AGE, kept otherwise."""
    close_old_connections()
    try:
        with own_connection():
            return compute()
    finally:
        close_old_connections()


def semantic_rows_start(
    q: str, scope, filters, kinds: list[str], depth: int, embedding: Future | None = None
) -> SemanticArm:
    """Start the semantic arm (semantic_rows) while the caller runs the lexical one. `embedding` is
    query_vector_start(q) when the caller started it already.

    When the caller's connection has no transaction open, the query is embedded and the arm's
    statements run on the query-embed thread and its own connection, so the two arms' SQL runs at
    once: one after the other, they were 16.5 and 8.5 ms p50 at 1,000,000 entries (docs/benchmarks.md).
    Inside a transaction the arm must read through the caller's connection, which may hold rows no
    other connection sees yet (uncommitted writes; each test's transaction): the query is embedded in
    the background and the arm runs when its result is asked for."""

    def rows(vector) -> list[dict]:
        return semantic_rows(q, scope, filters, kinds, depth, vector=vector) if vector else SemanticRows()

    if connection.in_atomic_block:
        embedding = embedding or query_vector_start(q)
        return SemanticArm(lambda: rows(embedding.result()), embedding.result)
    vector_known: Future = Future()

    def compute() -> list[dict]:
        # An `embedding` future was submitted to the same one-thread pool earlier, so it is done by
        # the time this task starts: waiting on it here cannot block.
        vector = embedding.result() if embedding else query_vector(q)
        vector_known.set_result(vector)
        return rows(vector)

    def task() -> list[dict]:
        try:
            return _on_own_connection(compute)
        finally:
            if not vector_known.done():  # failed before the vector was known: the arm raises
                vector_known.set_result(None)

    arm = background_submit(task)
    return SemanticArm(arm.result, vector_known.result)


def lexical_similarities(arm: SemanticArm | None, lexical: list[dict]) -> dict[tuple, float]:
    """The query's similarity to each of the lexical arm's rows, read by id (semantic.similarities) as
    soon as the query's embedding is known, on the caller's connection while the semantic arm's scan
    runs on its own: the z-score fusion needs it for the rows only the lexical arm found, and reading
    it here takes that statement off the search's critical path. {} without an arm or a vector, and
    for the other fusions, which do not use it."""
    if arm is None or not lexical or settings.MEMORY_SEARCH_FUSION != "zscore":
        return {}
    vector = arm.vector()
    if vector is None:
        return {}
    return similarities(vector, [(row["kind"], row["id"]) for row in lexical])


def rows_by_ids(kind: str, ids: list[int], scope, filters) -> list[dict]:
    """Rows of one kind by id, within the scope and filters, with the display columns of a search
    result and their score factor."""
    params = ranking._common_params_plain(filters, scope)
    params["ids"] = ids
    if kind == "entries":
        where = ranking.entry_where(scope, filters, params)
        sql = f"""
            SELECT e.id, a.slug AS agent, e.category, e.content AS text, e.tags, e.status, e.importance,
                   e.access_count, e.created_at, e.updated_at, e.source, e.created_by, e.confidence,
                   e.source_session_id, e.supersedes_id AS supersedes,
                   (SELECT s.id FROM vault_vaultentry s WHERE s.supersedes_id = e.id) AS superseded_by,
                   {ranking._entry_factor_sql("e")} AS factor
            FROM (SELECT * FROM vault_vaultentry WHERE id = ANY(%(ids)s) AND {" AND ".join(where)}) e
            JOIN vault_agent a ON a.id = e.agent_id
        """
    elif kind == "messages":
        where = ranking._scope_where(scope, filters) + ["NOT internal"]
        sql = f"""
            SELECT m.id, a.slug AS agent, m.role, m.text, m.archived, s.external_id AS session,
                   m.session_id, m.parent_id, m.created_at, {ranking._recency_factor_sql("m.created_at", "messages")} AS factor
            FROM (SELECT * FROM sessions_app_message WHERE id = ANY(%(ids)s) AND {" AND ".join(where)}) m
            JOIN vault_agent a ON a.id = m.agent_id JOIN sessions_app_session s ON s.id = m.session_id
        """
    else:
        where = ranking._scope_where(scope, filters, time_column="updated_at") + ["deleted_at IS NULL"]
        sql = f"""
            SELECT f.id, a.slug AS agent, f.path, f.content AS text, f.enabled, f.created_at, f.updated_at,
                   {ranking._recency_factor_sql("f.updated_at", "files")} AS factor
            FROM (SELECT * FROM vault_workspacefile WHERE id = ANY(%(ids)s) AND {" AND ".join(where)}) f
            JOIN vault_agent a ON a.id = f.agent_id
        """
    rows = ranking._fetch(sql, params)
    for row in rows:
        row["kind"] = _KIND_OF[kind]
        row.setdefault("category", None)
    return rows


def _normalised(values: dict, key) -> dict:
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {k: (v - low) / span if span > 0 else 1.0 for k, v in values.items()}


def _rrf(text_score: dict, similarity: dict, rows: dict) -> dict:
    lex_rank = {k: i for i, k in enumerate(sorted(text_score, key=lambda k: -text_score[k]), 1)}
    sem_rank = {k: i for i, k in enumerate(sorted(similarity, key=lambda k: -similarity[k]), 1)}
    return {
        key: (1 / (RRF_K + lex_rank[key]) if key in lex_rank else 0.0)
        + (1 / (RRF_K + sem_rank[key]) if key in sem_rank else 0.0)
        for key in rows
    }


def _minmax(text_score: dict, similarity: dict, rows: dict) -> dict:
    # BM25 is ratio-scaled (0: no match): divided by the best, so the factors can still reorder
    # rows of about the same relevance; cosine similarity has an arbitrary floor: min-max.
    best = max(text_score.values(), default=0.0)
    lex_n = {k: v / best for k, v in text_score.items()} if best > 0 else {}
    sem_n = _normalised(similarity, None)
    return {
        key: LEXICAL_WEIGHT * lex_n.get(key, 0.0) + (1 - LEXICAL_WEIGHT) * sem_n.get(key, 0.0) for key in rows
    }


def _z(values: dict, mean: float | None = None, sd: float | None = None) -> dict:
    """Standard scores of `values` against `mean` and `sd` (by default their own)."""
    if not values:
        return {}
    if mean is None:
        mean = sum(values.values()) / len(values)
        sd = (sum((v - mean) ** 2 for v in values.values()) / len(values)) ** 0.5
    return {k: (v - mean) / sd if sd else 0.0 for k, v in values.items()}


def lexical_weight(evidence: float | None) -> float:
    """The lexical arm's share in the z-score fusion for a lexical evidence strength (0..1, None when
    unknown: the full share)."""
    if evidence is None:
        return ZSCORE_LEXICAL_WEIGHT
    reach = min(1.0, max(0.0, evidence) / ZSCORE_EVIDENCE_FULL)
    return ZSCORE_LEXICAL_WEIGHT_MIN + (ZSCORE_LEXICAL_WEIGHT - ZSCORE_LEXICAL_WEIGHT_MIN) * reach


def _zscores(
    text_score: dict, similarity: dict, rows: dict, semantic: list[dict], known: dict, evidence: float | None
) -> dict:
    """Each arm as standard scores, averaged with the lexical share lexical_weight(evidence) gives, then
    scaled to 0..1 above a row of no evidence (see the end).

    Lexical: the BM25 text scores against their own mean and spread, counting the arm's unused depth
    as rows of score 0 (an arm that found three rows found nothing else: one exact match stands out
    as it should, instead of being the mean of one). Semantic: the similarities against the whole
    scope's (semantic.ScopeSimilarity), so a hit counts by how far it stands out from the agent's
    usual similarity to this query, and a row only the lexical arm found is given its own similarity
    (read by id), not the arm's floor. A row an arm has no score for takes that arm's floor: BM25 0
    when the arm returned less than its depth, else its lowest row; the lowest similarity among the
    rows when an item has no embedding yet. `known`: similarities already read (lexical_similarities),
    used for rows the semantic arm did not return."""
    scope = getattr(semantic, "scope", None)
    vector = getattr(semantic, "vector", None)
    similarity = {**{key: known[key] for key in rows if key in known}, **similarity}
    if vector is not None:
        missing = [key for key in rows if key not in similarity]
        if missing:
            similarity.update(similarities(vector, missing))
    scores = list(text_score.values())
    n = max(len(scores), FUSION_DEPTH)
    mean = sum(scores) / n
    sd = max(sum(v * v for v in scores) / n - mean * mean, 0.0) ** 0.5
    lex_z = _z(text_score, mean, sd)
    lex_floor = (-mean / sd if sd else 0.0) if len(scores) < FUSION_DEPTH else min(lex_z.values())
    sem_z = _z(similarity, scope.mean, scope.sd) if scope is not None else _z(similarity)
    sem_floor = min(sem_z.values(), default=0.0)
    w = lexical_weight(evidence)
    fused = {key: w * lex_z.get(key, lex_floor) + (1 - w) * sem_z.get(key, sem_floor) for key in rows}
    # Scaled to 0..1 above the fused score of a row of no evidence (no term matched, the scope's usual
    # similarity), so that the factors, which multiply, keep their meaning: with the semantic arm
    # silent this is BM25 / its best, as the min-max fusion gives. (Scaled between the rows' lowest
    # and highest instead, three close BM25 scores became 1, 0.5 and 0, and no factor could reorder
    # them: a superseded entry outranked its live successor.)
    base = w * (-mean / sd if sd else 0.0)
    high = max(fused.values(), default=0.0)
    if high <= base:
        return _normalised(fused, None)
    return {key: max(0.0, value - base) / (high - base) for key, value in fused.items()}


def fuse(
    lexical: list[dict], semantic: list[dict], method: str | None = None, known: dict | None = None
) -> list[dict]:
    """One list from both arms' rows, best first, each with its fused `score` and `arms`. `known`: the
    similarities of lexical rows read already (lexical_similarities)."""
    method = method or settings.MEMORY_SEARCH_FUSION
    rows: dict[tuple, dict] = {}
    text_score: dict[tuple, float] = {}
    evidence = None
    for row in lexical:
        key = (row["kind"], row["id"])
        factor = float(row.get("factor") or 1.0)
        text_score[key] = float(row["score"]) / factor if factor else 0.0
        rows[key] = {**row, "factor": factor, "arms": ["lexical"]}
        # The row's text score over the most its query could score in its table (search/selectors.py).
        if row.get("idf_total"):
            evidence = max(evidence or 0.0, min(1.0, text_score[key] / float(row["idf_total"])))
    similarity: dict[tuple, float] = {}
    for row in semantic:
        key = (row["kind"], row["id"])
        similarity[key] = float(row["similarity"])
        if key in rows:
            rows[key]["arms"].append("semantic")
        else:
            rows[key] = {**row, "factor": float(row.get("factor") or 1.0), "arms": ["semantic"]}
    if method == "rrf":
        relevance = _rrf(text_score, similarity, rows)
    elif method == "minmax":
        relevance = _minmax(text_score, similarity, rows)
    else:
        relevance = _zscores(text_score, similarity, rows, semantic, known or {}, evidence)
    relevance = neighbours_spread(relevance, rows)
    for key, row in rows.items():
        row["score"] = relevance[key] * row["factor"]
    for row in rows.values():
        row.pop("similarity", None)
        row.pop("idf_total", None)
    return sorted(rows.values(), key=lambda r: (-r["score"], r["kind"], -r["id"]))
