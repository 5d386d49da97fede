"""The SQL of a search: scopes and filters, term statistics, candidate sets from the GIN index, and
the score factors (recency, importance, access, trust). search.selectors runs these; search.fusion reads
rows by id with the same factors."""

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone
from psycopg.rows import dict_row
from psycopg.types.datetime import TimestamptzLoader

from memoryproject.timestamps import bound
from search import bm25
from search.agent_text_index import agent_clause
from search.bm25 import TermStats, bm25_score_sql, term_stats
from search.query import CompiledQuery
from vault.models import Category, EntryStatus
from vault.search_vectors import SCOPE_AGENT_PREFIX, SCOPE_EPOCH_MARK, SCOPE_EPOCH_SHIFT, SCOPE_PROJECT_PREFIX

KINDS = ("entries", "messages", "files")
LN2 = 0.6931471805599453


@dataclass
class SearchScope:
    project_id: int
    agent_ids: list[int] | None = None  # None: every agent of the project


@dataclass
class SearchFilters:
    category: str | None = None
    tags: list[str] = field(default_factory=list)
    tags_mode: str = "any"
    since: datetime | None = None
    until: datetime | None = None
    kinds: tuple[str, ...] = KINDS
    status: str = EntryStatus.ACTIVE  # an EntryStatus value, or "all"
    limit: int = 10
    offset: int = 0
    mode: str | None = None  # hybrid, lexical or semantic (search/fusion.py); None: the default

    def __post_init__(self):
        self.since, self.until = bound(self.since), bound(self.until)


@dataclass
class SearchOutcome:
    results: list[dict]
    took_ms: float
    query: CompiledQuery


def _age_seconds_sql(column: str) -> str:
    # date_part() answers in double precision; extract() would answer in numeric, whose exp() and
    # division cost several times more per ranked row.
    return f"date_part('epoch', %(now)s - {column})"


def _decay_sql(age_expr: str, half_life_sql: str) -> str:
    # exp() raises on underflow in PostgreSQL, hence the clamp.
    return f"exp(-{LN2}::float8 * least(greatest({age_expr}, 0) / 3600.0::float8 / ({half_life_sql}), 1000))"


def _half_life_case(column: str) -> str:
    half_lives = settings.MEMORY_HALF_LIFE_HOURS
    whens = " ".join(
        f"WHEN '{category}' THEN {float(half_lives.get(category, half_lives['decisions']))}::float8"
        for category in Category.values
    )
    return f"CASE {column} {whens} ELSE {float(half_lives['decisions'])}::float8 END"


def _text_score_sql(alias: str, compiled: CompiledQuery, params: dict) -> str:
    return bm25_score_sql(alias, compiled, params)


def _term_stats(
    table: str,
    where: list[str],
    compiled: CompiledQuery,
    params: dict,
    scope: SearchScope,
    extra: dict[str, str] | None = None,
    window=None,
) -> TermStats:
    """Document frequencies of the query's terms in the scope (search/bm25.py); the rare terms are
    then scanned over the whole scope (`q_rare`), so no row holding one can be lost to the caps.
    `extra`: more columns read in the same statement (TermStats.extra); `window`: where a common
    term's count starts (count_window), for entries."""
    # Only the scope's own column, so that the count is an index-only scan of its b-tree.
    scope_where = (
        ["agent_id = ANY(%(agents)s)"] if scope.agent_ids is not None else ["project_id = %(project)s"]
    )
    stats = term_stats(
        table, where, scope_where, compiled, params, scope_tsquery(scope), _fetch, extra, window
    )
    if stats.rare and not stats.exhaustive:
        rare = [compiled.terms[i].tsquery for i in stats.rare]
        # Only the rare terms' posting lists (and the required phrases', and the exclusions) are read.
        required = [t.tsquery for t in compiled.terms if t.required]
        exclusions = compiled.match[len(compiled.match_terms) :]
        params["q_rare"] = (
            " & ".join([f"( {' | '.join(rare)} )", *required, scope_tsquery(scope)]) + exclusions
        )
    return stats


def scope_tsquery(scope: SearchScope) -> str:
    """The scope lexemes (vault.search_vectors.scope_lexemes) to AND into the match: the GIN index then
    returns only this agent's (or project's) rows instead of every match, filtered afterwards."""
    if scope.agent_ids is None:
        return f"'{SCOPE_PROJECT_PREFIX}{int(scope.project_id)}'"
    lexemes = [f"'{SCOPE_AGENT_PREFIX}{int(agent_id)}'" for agent_id in sorted(set(scope.agent_ids))]
    return lexemes[0] if len(lexemes) == 1 else "( " + " | ".join(lexemes) + " )"


def _common_params(compiled: CompiledQuery, filters: SearchFilters, scope: SearchScope) -> dict:
    in_scope = scope_tsquery(scope)
    return {
        "q": compiled.match,
        "q_scoped": f"( {compiled.match} ) & {in_scope}",
        "q_all_scoped": f"( {compiled.match_all} ) & {in_scope}",
        **_common_params_plain(filters, scope),
    }


def _common_params_plain(filters: SearchFilters, scope: SearchScope) -> dict:
    """The scope, filter and factor parameters (no query)."""
    return {
        "project": scope.project_id,
        "agents": scope.agent_ids,
        "since": filters.since,
        "until": filters.until,
        "k": settings.MEMORY_SEARCH_CANDIDATES,
        "n": filters.offset + filters.limit,
        "now": timezone.now(),
        "wr": settings.MEMORY_SEARCH_RECENCY_WEIGHT,
        "wi": settings.MEMORY_SEARCH_IMPORTANCE_WEIGHT,
        "wa": settings.MEMORY_SEARCH_ACCESS_WEIGHT,
        "access_hl": settings.MEMORY_SEARCH_ACCESS_HALF_LIFE_HOURS,
        "uncited_before": timezone.now() - timedelta(days=settings.MEMORY_UNCITED_DAYS),
        "uncited_factor": 1 - settings.MEMORY_SEARCH_UNCITED_PENALTY,
        "inactive_factor": settings.MEMORY_SEARCH_INACTIVE_FACTOR,
    }


def _scope_where(
    scope: SearchScope, filters: SearchFilters, time_column: str = "created_at", table: str | None = None
) -> list[str]:
    # `+ 0` keeps the planner off the project and agent b-tree indexes: the scope lexemes already cut
    # the GIN scan to the scope, and AND-ing a b-tree bitmap of every row of the agent on top of it
    # only costs (0.9 ms at 100,000 entries, 8 ms at 1,000,000 for a large agent).
    where = ["project_id + 0 = %(project)s"]
    if scope.agent_ids is not None:
        where.append("agent_id + 0 = ANY(%(agents)s)")
        # A large agent's own GIN index of `table`, when it has one: named by its predicate.
        own_index = agent_clause(table, scope.agent_ids) if table else None
        if own_index:
            where.append(own_index)
    if filters.since is not None:
        where.append(f"{time_column} >= %(since)s")
    if filters.until is not None:
        where.append(f"{time_column} < %(until)s")
    return where


def _prune_ratio(filters: SearchFilters) -> float:
    """Smallest / largest possible product of the non-text score factors (see _entries); 0 when a
    factor can reach zero (nothing can then be pruned)."""
    wr = settings.MEMORY_SEARCH_RECENCY_WEIGHT
    wi = settings.MEMORY_SEARCH_IMPORTANCE_WEIGHT
    wa = settings.MEMORY_SEARCH_ACCESS_WEIGHT
    uncited = 1 - settings.MEMORY_SEARCH_UNCITED_PENALTY
    inactive = settings.MEMORY_SEARCH_INACTIVE_FACTOR if filters.status == "all" else 1.0
    ranges = [
        (min(1.0, 1 + wr), max(1.0, 1 + wr)),  # recency: decay in [0, 1]
        (1 - abs(wi), 1 + abs(wi)),  # importance in [0, 1]
        (min(1.0, 1 + wa), max(1.0, 1 + wa)),  # access in [0, 1]
        (min(1.0, uncited), max(1.0, uncited)),
        (min(1.0, inactive), max(1.0, inactive)),
    ]
    low = high = 1.0
    for lo, hi in ranges:
        low, high = low * lo, high * hi
    return low / high if low > 0 else 0.0


@dataclass
class EpochWindows:
    """tsquery alternatives of the epoch lexemes (vault.search_vectors.scope_epoch_lexeme) covering the entry
    ids just below the scope's newest one: `near` for rows matching any term, `wide` (twice as many
    ids) for rows matching every term. None where the window would reach id 0 anyway, or would need
    more than MAX_WINDOW_LEXEMES lexemes (several agents: their own lexemes then cut the scan)."""

    near: str | None = None
    wide: str | None = None


WIDE_WINDOW_FACTOR = 2
MAX_WINDOW_LEXEMES = 96


def newest_entry_sql(scope: SearchScope, end: str = "max") -> str:
    """SQL of the scope's newest entry id (one probe of the newest-first agent or project index), with
    the `project` and `agents` parameters of _common_params: read with the term counts (TermStats.extra)
    so that the recency windows cost no statement of their own. `end="min"`: its oldest."""
    if scope.agent_ids is None:
        return f"(SELECT {end}(id) FROM vault_vaultentry WHERE project_id = %(project)s)"
    return (
        f"(SELECT {end}(m) FROM unnest(%(agents)s::bigint[]) AS a(agent),"
        f" LATERAL (SELECT {end}(id) AS m FROM vault_vaultentry WHERE agent_id = a.agent) newest)"
    )


# A scope's newest and oldest entry ids and row count as its last search read them (count_basis_keep).
_count_basis: dict = {}


def _scope_prefixes(scope: SearchScope) -> list[str]:
    if scope.agent_ids is None:
        return [f"{SCOPE_PROJECT_PREFIX}{int(scope.project_id)}"]
    return [f"{SCOPE_AGENT_PREFIX}{int(agent_id)}" for agent_id in sorted(set(scope.agent_ids))]


def _basis_key(scope: SearchScope) -> tuple:
    return (scope.project_id, tuple(sorted(set(scope.agent_ids))) if scope.agent_ids is not None else None)


def count_basis_keep(scope: SearchScope, newest: int | None, oldest: int | None, total: int) -> None:
    """Keep the scope's newest and oldest entry ids and row count an entry search read, for count_window."""
    if len(_count_basis) > 10_000:
        _count_basis.clear()
    _count_basis[_basis_key(scope)] = (newest, oldest, total)


# A term's count starts in a window of at most this many epoch lexemes (count_window; an agent's
# epochs, or each of several agents'): a GIN scan of a window walks every epoch lexeme's posting list
# side by side, and past a few it costs as much as the scope's (at 100,000 entries, 6 epochs of the
# largest agent: 0.5-0.8 ms against 1.0-2.5 ms for a common word over the agent; 10: about the same).
COUNT_WINDOW_EPOCHS = 6


def count_window(scope: SearchScope) -> Callable[[float], str | None] | None:
    """window(rows): the tsquery of the scope's newest epochs (epoch lexemes, as _epoch_windows)
    expected to hold about `rows` of its rows, or None when that takes more than COUNT_WINDOW_EPOCHS
    epochs; from the scope's newest and oldest ids and size as its last search read them
    (count_basis_keep), its rows spread evenly over the ids between. None for a scope not searched yet
    in this process, or one counted exactly (under bm25.CACHE_MIN_ROWS rows). A common term's count starts
    there (bm25._count_windows); any epochs would give the same counts (a window's rows are some of
    the scope's), the newest are the ones an agent's common words are most likely to fill."""
    newest, oldest, total = _count_basis.get(_basis_key(scope), (None, None, 0))
    if newest is None or oldest is None or total < bm25.CACHE_MIN_ROWS:
        return None
    prefixes = _scope_prefixes(scope)
    top, first = newest >> SCOPE_EPOCH_SHIFT, oldest >> SCOPE_EPOCH_SHIFT
    per_id = total / (newest - oldest + 1)
    # The newest epoch holds the scope's ids up to the newest only.
    top_ids = newest - max(oldest, top << SCOPE_EPOCH_SHIFT) + 1

    def window(rows: float) -> str | None:
        epochs = 1 + max(0, math.ceil((rows / per_id - top_ids) / (1 << SCOPE_EPOCH_SHIFT)))
        if epochs > top - first or len(prefixes) * epochs > COUNT_WINDOW_EPOCHS:
            return None  # the scope's every epoch, or too many lexemes
        lexemes = [f"'{p}{SCOPE_EPOCH_MARK}{e}'" for p in prefixes for e in range(top - epochs + 1, top + 1)]
        return "( " + " | ".join(lexemes) + " )"

    return window


_PROBE = object()


def _epoch_windows(scope: SearchScope, top: int | None = _PROBE) -> EpochWindows:
    """The recency windows of an entry search, below the scope's newest id `top` (newest_entry_sql;
    probed here when not given).

    Searching every row of a large agent that matches a common word costs in proportion to the
    agent's whole history (at 1,000,000 entries: 25,000 matching rows and 100+ ms for one question).
    An agent's newest rows are what an agent asks about most, and what the ranking favours, so rows
    matching any term are first looked for among the newest ids only: the GIN scan then reads the
    part of the posting lists that covers those ids (epoch lexemes AND-ed in), whatever the table's
    size. Rows matching every term (the best answers, rarely many) are looked for in a window twice
    as wide, and the whole scope is searched when the windows give less than a page."""
    recent = settings.MEMORY_SEARCH_RECENT_IDS
    if recent <= 0:
        return EpochWindows()
    if top is _PROBE:
        params = {"project": scope.project_id, "agents": sorted(set(scope.agent_ids or []))}
        (top,) = _fetch(f"SELECT {newest_entry_sql(scope)} AS top", params)[0].values()
    if top is None:
        return EpochWindows()
    prefixes = _scope_prefixes(scope)
    # One epoch past the newest id: rows written while this search runs are not lost either.
    last = (top >> SCOPE_EPOCH_SHIFT) + 1

    def window(ids: int) -> str | None:
        if top <= ids:
            return None  # the window reaches back to the first id: no window
        epochs = range((top - ids) >> SCOPE_EPOCH_SHIFT, last + 1)
        if len(prefixes) * len(epochs) > MAX_WINDOW_LEXEMES:
            return None
        lexemes = [f"'{prefix}{SCOPE_EPOCH_MARK}{epoch}'" for prefix in prefixes for epoch in epochs]
        return "( " + " | ".join(lexemes) + " )"

    return EpochWindows(near=window(recent), wide=window(recent * WIDE_WINDOW_FACTOR))


def _rare_rows_matching(columns: str, query_param: str, gate: str = "") -> str | None:
    """The rows matching every term (`query_param`) picked from the rare terms' rows (`rareq` of
    _candidates_sql), when the scans read the vectors: a row matching every term holds the rare
    terms too, and `rareq` holds every row of the scope with a rare term (their document
    frequencies add up to at most k x RARE_SHARE, under the scan's LIMIT k). So the index's posting
    lists of every term are not walked a second time (1.2-1.4 ms of the database's CPU for a
    five-term question at 100,000 entries, most often to find nothing). The same rows: the scans'
    conditions are the same, and `@@` on a vector is what the index answers (and rechecks)."""
    if "search_vector" not in columns.split(", "):
        return None
    return f"SELECT * FROM rareq WHERE {gate + ' AND ' if gate else ''}search_vector @@ %({query_param})s::tsquery"


def _candidates_sql(
    table: str,
    where: list[str],
    compiled: CompiledQuery,
    params: dict,
    windows: EpochWindows | None = None,
    stats: TermStats | None = None,
    columns: str = "id",
) -> str:
    """CTEs ending in `cand`: the ids to rank (with `columns`, those columns of each row, one row per
    id), straight from the GIN index and cut by the scope (and the recency windows) inside the scan.

    When the terms' document frequencies (`stats`) add up to at most k, every matching row is a
    candidate (one scan of the scope, no windows). Otherwise the rows holding one of the rare terms
    are all scanned over the whole scope (`q_rare`, see _term_stats), and besides them:

    Without windows: up to k rows matching any term; only when they overflow the cap (so an
    arbitrary subset was kept) are up to k rows matching every term fetched too, so the best answers
    are never lost to the cap. With windows (entries of a large table): any term in the near
    window, every term in the wide one, and any term in the whole scope only when those two give
    less than a page. The conditions on other CTEs' counts are one-time filters: a scan they
    turn off is not run at all. With rare terms, rows matching every term come from theirs.

    `columns` (the ranking's columns of the table, `id` among them) are read by the scans themselves,
    which visit each candidate's heap row anyway to check the scope and filters: the ranking then
    needs no second visit of the row by primary key (three index pages and the heap page again, for
    each of up to several hundred candidates)."""
    windows = windows or EpochWindows()
    condition = " AND ".join(where)
    multi = compiled.match_all != compiled.match

    def scan(query_param: str, gate: str = "") -> str:
        return (
            f"SELECT {columns} FROM {table} WHERE {gate + ' AND ' if gate else ''}{condition}"
            f" AND search_vector @@ %({query_param})s::tsquery LIMIT %(k)s"
        )

    def every_term(query_param: str, gate: str = "") -> str:
        return (rares and _rare_rows_matching(columns, query_param, gate)) or scan(query_param, gate)

    def union(*scans: str) -> str:
        """The rows of these scans (CTE names or subqueries), each id once."""
        if columns == "id":
            return " UNION ".join(f"SELECT id FROM {name}" for name in scans)
        rows = " UNION ALL ".join(f"SELECT * FROM {name}" for name in scans)
        return f"SELECT DISTINCT ON (id) * FROM ({rows}) u"

    if stats is not None and stats.exhaustive:
        return f"cand AS ({scan('q_scoped')})"
    rare, rares = "", ()
    if "q_rare" in params:
        rare, rares = f"rareq AS ({scan('q_rare')}),", ("rareq",)
    if windows.near is None:
        if not multi:
            return f"{rare} cand AS ({union('(' + scan('q_scoped') + ') a', *rares)})"
        return f"""
            {rare}
            anyq AS MATERIALIZED ({scan("q_scoped")}),
            allq AS ({every_term("q_all_scoped", "(SELECT count(*) FROM anyq) >= %(k)s")}),
            cand AS ({union("anyq", "allq", *rares)})
        """
    params["q_near"] = f"( {compiled.match} ) & {windows.near}"
    if multi:
        params["q_wide"] = (
            f"( {compiled.match_all} ) & {windows.wide}" if windows.wide else params["q_all_scoped"]
        )
        wide_gate = ""
    else:  # one term: the wide window only adds older rows, needed when the near one is short
        params["q_wide"] = f"( {compiled.match} ) & {windows.wide}" if windows.wide else params["q_scoped"]
        wide_gate = "(SELECT count(*) FROM anyq) < %(k)s"
    params["page"] = max(1, params["n"])
    return f"""
        {rare}
        anyq AS MATERIALIZED ({scan("q_near")}),
        allq AS MATERIALIZED ({every_term("q_wide", wide_gate) if multi else scan("q_wide", wide_gate)}),
        fullq AS (
            {scan("q_scoped", "(SELECT count(*) FROM (SELECT id FROM anyq UNION SELECT id FROM allq) w) < %(page)s")}
        ),
        cand AS ({union("anyq", "allq", "fullq", *rares)})
    """


def _fetch(sql: str, params: dict) -> list[dict]:
    """Run a ranking query as a prepared statement (server-side parameters).

    The SQL of a search depends only on the shape of the query (number of terms, windows), so the
    same few statements repeat, and planning one cost more than running it (1.5-5 ms against 0.3 ms
    for a query that matches nothing). Prepared, with the generic plan (plan_cache_mode and
    prepare_threshold are set for every connection in settings; the ORM's client-side cursors never
    prepare), they are planned once per connection: a search matching nothing went from 13.4 to
    5.1 ms p50 over HTTP at 100,000 entries."""
    # The connection itself, not django.db.connection: each attribute read through that proxy looks the
    # connection up again in the thread's (asgiref's) local storage, about 9 us on a slow machine.
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    # Errors come out as Django's (django.db.DataError...), as from any other query.
    # Rows as dicts by psycopg's dict_row, which reads only the columns' names: `cursor.description`
    # made a Column of each (name, type, sizes; 18 columns for the page's statement) on every search.
    with db.wrap_database_errors, psycopg.Cursor(db.connection, row_factory=dict_row) as cursor:
        if db.timezone is UTC:
            # psycopg's own timestamptz loader (in C) instead of Django's subclass of its Python one:
            # the session's time zone is UTC (Django sets it to the connection's), so both give the
            # same datetime in UTC; Django's cost about 5 us a value, 20 a page.
            cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
        cursor.execute(_one_line(sql), params, prepare=True)
        return cursor.fetchall()


_LINE_BREAK = re.compile(r"\s*\n\s*")


@lru_cache(maxsize=256)
def _one_line(sql: str) -> str:
    """A statement's SQL without its line breaks and indentation (no literal of ours holds a line
    break). psycopg converts a statement's %(name)s placeholders once and keeps the result only for
    statements of at most 4,096 characters (psycopg._queries.MAX_CACHED_STATEMENT_LENGTH); a search's
    ranking statement for four terms or more was longer with its indentation, and was converted again
    on every search (81 of bench_search's 200 questions at 100,000 entries, 3 without it)."""
    return _LINE_BREAK.sub(" ", sql)


def _entry_factor_sql(alias: str) -> str:
    """The non-text factors of an entry's score (recency, importance, access, trust)."""
    access = (
        f"CASE WHEN {alias}.last_accessed_at IS NULL THEN 0 ELSE"
        f" least(1.0, ln(1 + {alias}.access_count) / ln(11)) * "
        + _decay_sql(_age_seconds_sql(f"{alias}.last_accessed_at"), "%(access_hl)s::float8")
        + " END"
    )
    return f"""(
        (1 + %(wr)s * {_decay_sql(_age_seconds_sql(f"{alias}.created_at"), _half_life_case(f"{alias}.category"))})
        * (1 + %(wi)s * (2 * {alias}.importance - 1))
        * (1 + %(wa)s * {access})
        * CASE WHEN {alias}.last_accessed_at IS NULL AND {alias}.created_at < %(uncited_before)s
               THEN %(uncited_factor)s ELSE 1 END
        * CASE WHEN {alias}.status = 'active' THEN 1 ELSE %(inactive_factor)s END
    )"""


def _recency_factor_sql(column: str, kind: str) -> str:
    """The recency factor of a message's or file's score."""
    half_life = float(settings.MEMORY_HALF_LIFE_HOURS[kind])
    return f"(1 + %(wr)s * {_decay_sql(_age_seconds_sql(column), f'{half_life}::float8')})"


def entry_where(
    scope: SearchScope, filters: SearchFilters, params: dict, categories: list[str] | None = None
) -> list[str]:
    """The scope and filter conditions of an entry search (sets their parameters)."""
    where = _scope_where(scope, filters, table="vault_vaultentry")
    # Category and status are checked on the GIN scan's rows (`|| ''`: no b-tree bitmap, as above).
    if categories:
        where.append("category || '' = ANY(%(categories)s)")
        params["categories"] = categories
    elif filters.category:
        where.append("category || '' = %(category)s")
        params["category"] = filters.category
    if filters.status != "all":
        where.append("status || '' = %(status)s")
        params["status"] = filters.status
    if filters.tags:
        where.append(
            "tags && %(tags)s::varchar[]" if filters.tags_mode == "any" else "tags @> %(tags)s::varchar[]"
        )
        params["tags"] = filters.tags
    return where
