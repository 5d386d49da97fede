"""Search over vault entries, session messages and workspace files, ranked in SQL.

Candidates per kind come straight from the GIN index, cut by the project/agent scope in the same
scan: every row matching the query when the terms' document frequencies add up to at most
MEMORY_SEARCH_CANDIDATES; otherwise every row holding one of the rare terms (search/bm25.py) plus up
to that many rows matching any term (entries: in the recency windows) and as many matching every
term. The score is

    bm25 x coverage x (1 + w_recency x decay) x (1 + w_importance x (2 x importance - 1))
                    x (1 + w_access x access)

where bm25 sums the matched terms' idf (document frequencies in the scope searched) with tf
saturation and length normalisation, coverage = terms matched / terms (as Lucene's classic coord),
decay = 0.5 ^ (age / half-life of the category) and access = min(1, ln(1 + access_count) / ln 11)
x 0.5 ^ (hours since last access / access half-life). Two more factors for trust: an entry
older than MEMORY_UNCITED_DAYS that was never accessed (never cited in a context, never read) gets
x (1 - MEMORY_SEARCH_UNCITED_PENALTY), and with status=all an entry that is not active (superseded,
pending, rejected, archived) gets x MEMORY_SEARCH_INACTIVE_FACTOR, so the live entry of a supersede
chain ranks first. Relevance dominates, so a recent or important entry wins only over entries that
answer the query about as well. With MEMORY_SEARCH_NEIGHBOUR_SHARE set, a message also gains a share
of the relevance of the turns next to it that the search found (search/conversation.py). Everything
is computed at query time: nothing periodically rewrites stored decay factors or term statistics.
"""

import time
from concurrent.futures import Future
from dataclasses import replace

from django.conf import settings

from memoryproject.errors import InvalidInput
from memoryproject.timestamps import time_range_check
from search import conversation, fusion, semantic
from search.bm25 import TermStats
from search.query import CompiledQuery, query_compile, query_size_check
from search.ranking import (
    KINDS,
    EpochWindows,
    SearchFilters,
    SearchOutcome,
    SearchScope,
    _candidates_sql,
    _common_params,
    _entry_factor_sql,
    _epoch_windows,
    _fetch,
    _prune_ratio,
    _recency_factor_sql,
    _scope_where,
    _term_stats,
    _text_score_sql,
    count_basis_keep,
    count_window,
    entry_where,
    newest_entry_sql,
)
from search.snippets import snippet_build, word_exact_matcher, words_matcher
from sessions_app.selectors import archived_messages_matching
from vault.models import (
    Agent,
    Category,
    EntryStatus,
)
from vault.principal import Principal
from vault.selectors import agent_get_for_principal

# What the ranking reads of an entry: read by the candidate scans (search.ranking._candidates_sql).
RANKED_COLUMNS = "id, category, created_at, importance, last_accessed_at, access_count, status, search_vector"


def _entries(
    compiled: CompiledQuery,
    scope: SearchScope,
    filters: SearchFilters,
    per_category: dict[str, int] | None = None,
) -> list[dict]:
    """Ranked entries; with `per_category` ({category: n}) the best n of each of those categories
    (one query for several sections of a context) instead of the best offset + limit overall."""
    params = _common_params(compiled, filters, scope)
    where = entry_where(scope, filters, params, categories=list(per_category) if per_category else None)
    wanted, partition, top = _entries_page(per_category, params)
    params["prune"] = _prune_ratio(filters)
    # The scope's newest id is read with the counts: the recency windows need no statement of their own.
    # With its oldest: where the counts of common words start (count_window).
    ends = (
        {"newest": newest_entry_sql(scope), "oldest": newest_entry_sql(scope, "min")}
        if settings.MEMORY_SEARCH_RECENT_IDS > 0
        else None
    )
    stats = _term_stats(
        "vault_vaultentry", where, compiled, params, scope, extra=ends, window=count_window(scope)
    )
    count_basis_keep(scope, stats.extra.get("newest"), stats.extra.get("oldest"), stats.total)
    if stats.matches_nothing:  # a kind the query finds nothing in costs one statement, not two
        return []
    windows = EpochWindows() if stats.exhaustive else _epoch_windows(scope, stats.extra.get("newest"))
    # Text relevance is computed for every candidate; the other factors only for the candidates
    # that can still reach the page: a row whose text score is below (the n-th best text score) x
    # (smallest / largest possible product of the other factors) cannot outrank the n-th row, so
    # its decay and access arithmetic is skipped. The display columns (and the supersede lookup)
    # are read for the rows that make the page only.
    sql = f"""
        WITH {_candidates_sql("vault_vaultentry", where, compiled, params, windows, stats, RANKED_COLUMNS)},
        texted AS MATERIALIZED (
            SELECT e.id, e.category, e.created_at, e.importance, e.last_accessed_at, e.access_count,
                   e.status, {_text_score_sql("e", compiled, params)} AS ts
            FROM cand e
        ),
        bounded AS (
            SELECT t.*, nth_value(ts, {wanted}) OVER (
                {partition} ORDER BY ts DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
            ) AS nth
            FROM texted t
        ),
        scored AS (
            SELECT id, category, ts * factor AS score, factor FROM (
                SELECT e.id, e.category, e.ts, {_entry_factor_sql("e")} AS factor
                FROM bounded e
                WHERE e.ts >= coalesce(e.nth, 0) * %(prune)s
            ) f
        ),
        top AS ({top})
        SELECT e.id, a.slug AS agent, e.category, e.content AS text, e.tags, e.status, e.importance,
               e.access_count, e.created_at, e.updated_at, e.source, e.created_by, e.confidence,
               e.source_session_id, e.supersedes_id AS supersedes,
               (SELECT s.id FROM vault_vaultentry s WHERE s.supersedes_id = e.id) AS superseded_by,
               top.score, top.factor
        FROM top JOIN vault_vaultentry e ON e.id = top.id JOIN vault_agent a ON a.id = e.agent_id
        ORDER BY top.score DESC, e.id DESC
    """
    rows = _fetch(sql, params)
    idf_total = _idf_total(stats, compiled)
    for row in rows:
        row["kind"] = "entry"
        row["idf_total"] = idf_total
    return rows


def _entries_page(per_category: dict[str, int] | None, params: dict) -> tuple[str, str, str]:
    """How _entries picks its page from the scored rows: (the rank a row must reach, as SQL; the window's
    partition; the page's SELECT from `scored`), the best offset + limit overall (`params["n"]`, set by
    the caller), or with `per_category` the best n of each of those categories (its parameters set here)."""
    if not per_category:
        top = "SELECT id, score, factor FROM scored ORDER BY score DESC, id DESC LIMIT %(n)s"
        return "%(n)s", "", top
    limits = " ".join(f"WHEN %(cat{i})s THEN %(lim{i})s" for i, _ in enumerate(per_category.items()))
    for i, (category, n) in enumerate(per_category.items()):
        params[f"cat{i}"], params[f"lim{i}"] = category, int(n)
    params["n"] = sum(int(n) for n in per_category.values())
    wanted = f"CASE category {limits} ELSE 1 END"
    top = f"""
            SELECT id, score, factor FROM (
                SELECT id, score, factor, category,
                       row_number() OVER (PARTITION BY category ORDER BY score DESC, id DESC) AS rank
                FROM scored
            ) ranked
            WHERE rank <= {wanted}
        """
    return wanted, "PARTITION BY category", top


def _idf_total(stats: TermStats, compiled: CompiledQuery) -> float:
    """The most a row of this table could score for the query (every term matched at the scope's mean
    length: the sum of the terms' idf); the fusion weighs the lexical arm by its best row's share of it
    (search/fusion.py)."""
    return sum(stats.idf(i) for i in range(len(compiled.terms)))


def entries_best_by_category(
    agent: Agent,
    *,
    compiled: CompiledQuery,
    limits: dict[str, int],
    q: str = "",
    embedding: Future | None = None,
) -> dict[str, list[dict]]:
    """The best active entries of each category in `limits` for one compiled command `q`, ranked as
    search ranks them (context injection: top decisions and top lessons), in one retrieval: the
    lexical arm in one query for every category; in hybrid mode, while that query runs, the query
    embedded once and one semantic scan (fusion.semantic_rows_start), whose hits are fused with each
    category's lexical rows as a search of that category would fuse them. `embedding` is query_vector_start(q) when the caller
    started it already."""
    unknown = [c for c in limits if c not in Category.values]
    if unknown:
        raise InvalidInput(
            f"Unknown categories: {', '.join(unknown)}", [{"loc": ["category"], "msg": "unknown"}]
        )
    scope = SearchScope(agent.project_id, [agent.pk])
    filters = SearchFilters(kinds=("entries",), status=EntryStatus.ACTIVE)
    hybrid = bool(q.strip()) and fusion.resolve_mode(None) == "hybrid"
    semantic_arm = (
        fusion.semantic_rows_start(q, scope, filters, ["entries"], fusion.FUSION_DEPTH, embedding=embedding)
        if hybrid
        else None
    )
    depth = {
        category: max(int(n), fusion.FUSION_DEPTH) if hybrid else int(n) for category, n in limits.items()
    }
    lexical: dict[str, list[dict]] = {category: [] for category in limits}
    rows = _entries(compiled, scope, filters, per_category=depth)
    if not rows and compiled.phrases_required and q.strip():
        relaxed = _phrases_relaxed_compile(q)  # as search_run does when a quoted phrase finds nothing
        rows = _entries(relaxed, scope, filters, per_category=depth) if relaxed is not None else []
    for row in rows:
        lexical[row["category"]].append(row)
    if semantic_arm is None:
        for row in rows:
            row.pop("idf_total", None)
        return lexical
    known = fusion.lexical_similarities(semantic_arm, rows)
    arm = semantic_arm.result()
    semantic = {category: arm.like([]) for category in limits}
    for row in arm:
        if row["category"] in semantic:
            semantic[row["category"]].append(row)
    best = {}
    for category, n in limits.items():
        page = fusion.fuse(lexical[category], semantic[category], known=known)[: int(n)]
        for row in page:
            row["score"] = round(float(row["score"]), 6)
        best[category] = page
    return best


def _messages(compiled: CompiledQuery, scope: SearchScope, filters: SearchFilters) -> list[dict]:
    params = _common_params(compiled, filters, scope)
    where = _scope_where(scope, filters, table="sessions_app_message") + ["NOT internal"]
    stats = _term_stats("sessions_app_message", where, compiled, params, scope)
    if stats.matches_nothing:  # a kind the query finds nothing in costs one statement, not two
        return []
    sql = f"""
        WITH {_candidates_sql("sessions_app_message", where, compiled, params, stats=stats)}
        SELECT m.id, a.slug AS agent, m.role, m.text, m.archived, s.external_id AS session,
               m.session_id, m.parent_id, m.created_at,
               {_text_score_sql("m", compiled, params)} * {_recency_factor_sql("m.created_at", "messages")}
               AS score, {_recency_factor_sql("m.created_at", "messages")} AS factor
        FROM cand JOIN sessions_app_message m ON m.id = cand.id
        JOIN vault_agent a ON a.id = m.agent_id JOIN sessions_app_session s ON s.id = m.session_id
        ORDER BY score DESC, m.id DESC
        LIMIT %(n)s
    """
    rows = _fetch(sql, params)
    idf_total = _idf_total(stats, compiled)
    for row in rows:
        row["kind"] = "message"
        row["category"] = None
        row["idf_total"] = idf_total
    return rows


def _files(compiled: CompiledQuery, scope: SearchScope, filters: SearchFilters) -> list[dict]:
    params = _common_params(compiled, filters, scope)
    where = _scope_where(scope, filters, time_column="updated_at") + ["deleted_at IS NULL"]
    stats = _term_stats("vault_workspacefile", where, compiled, params, scope)
    if stats.matches_nothing:  # a kind the query finds nothing in costs one statement, not two
        return []
    sql = f"""
        WITH {_candidates_sql("vault_workspacefile", where, compiled, params, stats=stats)}
        SELECT f.id, a.slug AS agent, f.path, f.content AS text, f.enabled, f.created_at, f.updated_at,
               {_text_score_sql("f", compiled, params)} * {_recency_factor_sql("f.updated_at", "files")}
               AS score, {_recency_factor_sql("f.updated_at", "files")} AS factor
        FROM cand JOIN vault_workspacefile f ON f.id = cand.id JOIN vault_agent a ON a.id = f.agent_id
        ORDER BY score DESC, f.id DESC
        LIMIT %(n)s
    """
    rows = _fetch(sql, params)
    idf_total = _idf_total(stats, compiled)
    for row in rows:
        row["kind"] = "file"
        row["category"] = None
        row["idf_total"] = idf_total
    return rows


def _archived_session_messages(
    compiled: CompiledQuery, scope: SearchScope, filters: SearchFilters
) -> list[dict]:
    """Messages of sessions moved to cold storage, found when archived items are asked for.

    The archives are found through their own full-text index; their messages are then matched with the
    query's word patterns (the ones snippets use) and scored by how many query terms they contain."""

    patterns = compiled.patterns
    if not patterns:
        return []
    any_term = words_matcher(patterns)
    excluded = [word_exact_matcher(word) for word in compiled.excluded]
    term_res = [words_matcher(term.patterns) for term in compiled.terms if term.patterns]
    rows = []
    for row in archived_messages_matching(
        project_id=scope.project_id, agent_ids=scope.agent_ids, tsquery=compiled.match_terms or compiled.match
    ):
        text = row["text"]
        if row.get("internal") or not any_term.search(text) or any(x.search(text) for x in excluded):
            continue
        if (
            filters.since
            and row["created_at"] < filters.since
            or filters.until
            and row["created_at"] >= filters.until
        ):
            continue
        matched = sum(1 for term in term_res if term.search(text))
        rows.append(
            {
                "id": row["id"],
                "agent": row["agent"],
                "role": row["role"],
                "text": text,
                "archived": True,
                "session": row["session"],
                "session_id": row["session_id"],
                "created_at": row["created_at"],
                "score": float(matched),
                "kind": "message",
                "category": None,
                "cold": True,
            }
        )
    rows.sort(key=lambda r: (-r["score"], -r["id"]))
    return rows[: filters.offset + filters.limit]


def _filters_check(filters: SearchFilters) -> None:
    """InvalidInput naming the first filter a search cannot use."""
    if filters.status not in (*EntryStatus.values, "all"):
        raise InvalidInput(
            f"Unknown status {filters.status!r}; use {', '.join(EntryStatus.values)} or all.",
            [{"loc": ["status"], "msg": "unknown status"}],
        )
    unknown = [kind for kind in filters.kinds if kind not in KINDS]
    if unknown or not filters.kinds:
        raise InvalidInput(
            f"Unknown kinds {', '.join(unknown) or '(none)'}; use any of: {', '.join(KINDS)}.",
            [{"loc": ["kinds"], "msg": "unknown kind"}],
        )
    if filters.category and filters.category not in Category.values:
        raise InvalidInput(
            f"Unknown category {filters.category!r}; use one of: {', '.join(Category.values)}.",
            [{"loc": ["category"], "msg": "unknown category"}],
        )
    time_range_check(filters.since, filters.until)
    if filters.tags_mode not in ("any", "all"):
        raise InvalidInput("tags_mode must be 'any' or 'all'", [{"loc": ["tags_mode"], "msg": "unknown"}])


def search_run(
    *, q: str, scope: SearchScope, filters: SearchFilters, compiled: CompiledQuery | None = None
) -> SearchOutcome:
    """Search the kinds asked for within a scope; results best first, each with a snippet.

    `compiled` is `query_compile(q)` when the caller already has it (context injection runs several
    searches for one command: the stemming and typo-vocabulary lookups are done once)."""
    started = time.perf_counter()
    _filters_check(filters)
    mode = fusion.resolve_mode(filters.mode)
    nothing_in_scope = scope.agent_ids is not None and not scope.agent_ids
    # Categories and tags belong to vault entries only: with either filter, other kinds are skipped.
    entries_only = bool(filters.category or filters.tags or filters.status not in ("active", "all"))
    wanted = filters
    if mode != "lexical":  # each arm gives its best rows to the fusion, which then cuts the page
        wanted = replace(filters, offset=0, limit=max(filters.offset + filters.limit, fusion.FUSION_DEPTH))
    # The semantic arm (the query's embedding, the longest step, then its scan) starts first and runs
    # in the background while the query is compiled and the lexical arm runs its SQL.
    semantic_arm = None
    if compiled is None:
        query_size_check(q)  # a query refused must not cost an embedding
    if mode != "lexical" and not nothing_in_scope:
        kinds = [k for k in filters.kinds if k == "entries" or not entries_only]
        embedding = semantic.query_vector_begin(q)
        semantic_arm = fusion.semantic_rows_start(q, scope, filters, kinds, wanted.limit, embedding)
    compiled = compiled or query_compile(q)
    if nothing_in_scope:
        return SearchOutcome(results=[], took_ms=0.0, query=compiled)
    rows: list[dict] = []
    if mode != "semantic":
        rows = _lexical_rows(compiled, scope, wanted, entries_only)
        if not rows and compiled.phrases_required:
            # A quoted phrase that matches nothing here (written differently, other punctuation)
            # would leave the lexical arm empty: search its words instead, and say so.
            relaxed = _phrases_relaxed_compile(q)
            if relaxed is not None:
                compiled = relaxed
                rows = _lexical_rows(compiled, scope, wanted, entries_only)
    if semantic_arm is not None:
        # [] when the query cannot be embedded: lexical results only.
        # Semantic mode has one arm, nothing to put on a common scale: its similarities min-max over
        # its rows, as before the z-score fusion (scaled to the scope's instead, the factors moved
        # bench_quality's semantic MRR from 0.919 to 0.881).
        if mode == "semantic":
            rows = fusion.fuse(rows, semantic_arm.result(), "minmax")
        else:
            known = fusion.lexical_similarities(semantic_arm, rows)
            rows = fusion.fuse(rows, semantic_arm.result(), known=known)
    else:
        conversation.rows_spread(rows)
        for row in rows:
            row["arms"] = ["lexical"]
            row.pop("idf_total", None)
    if (
        "messages" in filters.kinds
        and filters.status in ("archived", "all")
        and not (filters.category or filters.tags)
    ):
        for row in _archived_session_messages(compiled, scope, filters):
            row["arms"] = ["lexical"]
            rows.append(row)
    rows.sort(key=lambda row: (-row["score"], row["kind"], -row["id"]))
    page = rows[filters.offset : filters.offset + filters.limit]
    patterns = compiled.patterns
    for row in page:
        row["score"] = round(float(row["score"]), 6)
        row["snippet"] = snippet_build(row["text"], patterns)
    return SearchOutcome(
        results=page, took_ms=round((time.perf_counter() - started) * 1000, 2), query=compiled
    )


def _phrases_relaxed_compile(q: str) -> CompiledQuery | None:
    try:
        return query_compile(q, relax_phrases=True)
    except InvalidInput:  # nothing searchable once the phrases are words (only stopwords)
        return None


def _lexical_rows(
    compiled: CompiledQuery, scope: SearchScope, filters: SearchFilters, entries_only: bool
) -> list[dict]:
    rows: list[dict] = []
    if "entries" in filters.kinds:
        rows += _entries(compiled, scope, filters)
    if "messages" in filters.kinds and not entries_only:
        deep = filters
        if conversation.neighbour_share() > 0:
            # Deep enough for a found turn to lift the turns next to it (search/conversation.py).
            deep = replace(filters, offset=0, limit=max(filters.offset + filters.limit, fusion.FUSION_DEPTH))
        rows += _messages(compiled, scope, deep)
    if "files" in filters.kinds and not entries_only:
        rows += _files(compiled, scope, filters)
    return rows


def search_for_principal(
    principal: Principal, *, q: str, agent: str | None = None, filters: SearchFilters
) -> SearchOutcome:
    """Search what this principal may see: its own agent when agent-bound, else the project (or the
    one agent named)."""
    if agent:
        scope = SearchScope(principal.project_id, [agent_get_for_principal(principal, agent).pk])
    elif principal.agent_id is not None:
        scope = SearchScope(principal.project_id, [principal.agent_id])
    else:
        scope = SearchScope(principal.project_id, None)
    return search_run(q=q, scope=scope, filters=filters)


def default_limit() -> int:
    return settings.MEMORY_SEARCH_DEFAULT_LIMIT
