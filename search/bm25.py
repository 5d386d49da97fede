"""BM25 term weights for the SQL ranking (search/selectors.py).

Each query term (a word with its stems, completions and typo neighbours, a phrase, or an `a OR b`
group) weighs its inverse document frequency in the scope searched (the agent or the project, with
the search's filters), so a speaker's name that sits in half an agent's messages weighs little and
the one rare word that identifies the answer weighs a lot:

    score = sum over matched terms of  idf(t) x (k1 + 1) / (1 + k1 x (1 - b + b x len / avglen))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

(tf is taken as 1: a tsquery match says whether a term is present, and agents' messages and entries
are short; `ts_rank` is added as a small tie-break that still sees repetitions and the heavier tag
and path weights). len is the number of lexemes of the stored vector; avglen is the scope's mean
(over all its rows, or a spread sample of about 1,000 in a larger scope), the same for the same rows.

Document frequencies are taken when the query runs, so they are always current (no counts to
maintain on the write path, no job of ours to refresh them): each term's rows in the scope are counted
from the GIN index, cut by the scope lexemes inside the scan: all of them in a scope under 1,000 rows,
else up to a quarter of MEMORY_SEARCH_CANDIDATES, which is exact for every rare term (the ones that weigh most and choose the
candidates). A term past that is common, and its frequency is estimated from PostgreSQL's own
statistics of the search vector (pg_stats' most common lexemes and their shares, kept by
autovacuum's ANALYZE) times the scope's size. Only that estimate is used for a common term, so a term
found common in a scope of CACHE_MIN_ROWS rows or more (with the same filters) is not counted again
while the scope's count is kept in the process (SCOPE_CACHE_SECONDS, below): 0.3-0.6 ms of the
database's CPU a search at 100,000 entries. An entry search whose scope's newest and oldest ids are
known in the process counts a common word (by those statistics) in the scope's newest few epochs
first, and in the whole scope only when they hold fewer rows than the cap (_count_windows): the same
count. Counting common words exactly read the heap row of
every match (4,000 heap blocks for one word at 100,000 entries) and multiplied search latency;
estimating from a cached sample of each scope's lexemes cost up to half a second per cold agent.
The scope's size comes from the project/agent b-tree (an index-only count, read in the term counts'
statement), kept a minute in the process for scopes of 1,000 rows or more; its mean length over every
row of a small scope, or over the rows of a larger one whose id hashes to a chosen value (about 1,000,
spread over the scope's history, chosen by id before any search vector is read), kept ten minutes (a
scope under 1,000 rows: until its count changes). A scope of 1,000 rows or more (an agent's or a
project's) also keeps its mean in the database (search.models.ScopeLength), read with its count:
another web process's first search of the scope uses it instead of reading the sample (4-5 ms on a warm cache, 10-30 ms on a cold
one at 100,000 entries), until the count has moved by LENGTH_DRIFT or a day has passed. It was the first 200 rows the scan met: the scope's oldest, 20 % off the
true mean on some agents, and which rows they were depended on the table's physical layout, so two
databases holding the same messages ranked them differently.

The same counts choose the candidates (rare terms first, as MaxScore engines do): the rarest terms
whose document frequencies add up to at most a quarter of MEMORY_SEARCH_CANDIDATES are scanned over
the whole scope, so a row holding one of them can never be lost to the candidate cap or the recency
windows, however old it is; when all the terms' rows fit under the cap, every matching row is ranked.
"""

import logging
import math
import re
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, transaction

from search.models import ScopeLength
from search.query import CompiledQuery, _lexemes

logger = logging.getLogger(__name__)

K1 = 1.2
B = 0.5
# ts_rank of one occurrence of a term of weight B (the text's weight): the unit of tf.
ONE_OCCURRENCE = 0.24317084
LENGTH_SAMPLE = 1000  # about this many rows' mean vector length stands for a larger scope's
LENGTH_CACHE_SECONDS = 600.0
# A large scope's stored mean length (search.models.ScopeLength) stands while its row count is within
# this share of the count it was measured at, for at most LENGTH_STALE_SECONDS.
LENGTH_DRIFT = 0.1
LENGTH_STALE_SECONDS = 86_400.0
MAX_SCOPE_COUNT = 10_000_000
CACHE_MIN_ROWS = 1000
COMMON_CACHE_SECONDS = 300.0
_common_cache: dict = {}
_QUOTED = re.compile(r"'(?:[^']|'')*'")
SCOPE_CACHE_SECONDS = 60.0
RARE_SHARE = 0.25
_scope_cache: dict = {}
# The parameters a search's conditions (`where` of term_stats) may use besides the scope's.
_FILTER_PARAMS = ("since", "until", "status", "category", "categories", "tags")


@dataclass
class TermStats:
    total: int  # rows in scope (capped)
    df: list[int]  # per compiled term (capped)
    rare: list[int]  # indexes of the terms scanned over the whole scope
    exhaustive: bool  # every matching row fits under the candidate cap: no windows needed
    extra: dict = field(default_factory=dict)  # the caller's `extra` columns, read with the counts

    @property
    def matches_nothing(self) -> bool:
        """No row of the scope holds any term (each counted exactly, so a 0 is a 0): the ranking
        statement would return no row, and a search need not run it."""
        return bool(self.df) and not any(self.df)

    def idf(self, i: int) -> float:
        n = max(self.total, self.df[i])
        return math.log(1 + (n - self.df[i] + 0.5) / (self.df[i] + 0.5))


def _mean_length(table: str, condition: str, total: int, params: dict, fetch) -> float:
    """The scope's mean vector length: over every row of a scope under 2 x LENGTH_SAMPLE rows, else
    over the rows whose id hashes to 0 modulo total / LENGTH_SAMPLE (about LENGTH_SAMPLE of them,
    spread over the scope's whole history and the same for the same rows, chosen by id before any
    search vector is read: for entries from the scope's (agent or project, id) b-tree alone)."""
    step = max(1, total // LENGTH_SAMPLE)
    if step == 1:
        sql = f"SELECT avg(length(search_vector)) AS avglen FROM {table} WHERE {condition}"
    else:
        sql = (
            f"SELECT avg(length(search_vector)) AS avglen FROM {table} WHERE id = ANY(ARRAY("
            f"SELECT id FROM {table} WHERE {condition} AND hashint8(id) %% %(step)s = 0))"
        )
    row = fetch(sql, {**params, "step": step})[0]
    return float(row["avglen"] or 1.0)


def _stored_length_sql(agent_scope: bool) -> str:
    """The scope's stored mean length (search.models.ScopeLength), LEFT JOINed to its count."""
    match = (
        "s.agent_id = %(stored_agent)s"
        if agent_scope
        else "s.project_id = %(project)s AND s.agent_id IS NULL"
    )
    return (
        f" LEFT JOIN {ScopeLength._meta.db_table} s ON s.table_name = %(table_name)s AND {match}"
        f" AND s.measured_at > now() - make_interval(secs => %(stale)s)"
    )


def _length_store(
    table: str, project_id: int, agent_id: int | None, total: int, avglen: float, fetch
) -> None:
    """Keep a large scope's mean length for every process (search.models.ScopeLength)."""
    conflict = (
        "(table_name, agent_id) WHERE agent_id IS NOT NULL"
        if agent_id
        else "(table_name, project_id) WHERE agent_id IS NULL"
    )
    sql = (
        f"INSERT INTO {ScopeLength._meta.db_table} (table_name, project_id, agent_id, rows, avglen, measured_at)"
        " VALUES (%(table_name)s, %(project)s, %(agent)s, %(rows)s, %(avglen)s, now())"
        f" ON CONFLICT {conflict} DO UPDATE SET rows = EXCLUDED.rows, avglen = EXCLUDED.avglen,"
        " measured_at = EXCLUDED.measured_at RETURNING 1"
    )
    params = {"table_name": table, "project": project_id, "agent": agent_id, "rows": total, "avglen": avglen}
    try:
        # A savepoint inside a caller's transaction: a failure here (a read-only transaction, say)
        # must not abort the search's. Only the stored mean is lost; it is measured again.
        with transaction.atomic():
            fetch(sql, params)
    except DatabaseError as error:
        logger.warning(
            "Could not keep the mean length of %s scope %s/%s: %s", table, project_id, agent_id, error
        )


def _scope_key(table: str, params: dict) -> tuple:
    agents = params["agents"]
    return (table, params["project"], tuple(agents) if agents is not None else None)


def _scope_cached(table: str, params: dict) -> tuple[int, float] | None:
    """The scope's (rows, mean length) while its count is kept in the process (_scope_settle), else None."""
    cached = _scope_cache.get(_scope_key(table, params))
    if cached and cached[0] > time.monotonic():
        return cached[1], cached[3]
    return None


def _scope_count_sql(table: str, scope_where: list[str], params: dict, alias: str = "sc") -> tuple[str, dict]:
    """A FROM clause of one row: the scope's count `n` and, for a scope a ScopeLength row can stand for
    (the project's, or one agent's), that row's `stored_rows` and `stored_avglen` (_scope_settle); with
    the count's parameters added to `params`."""
    agents = params["agents"]
    condition = " AND ".join(scope_where)
    count_sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {condition} LIMIT %(ncap)s) x"
    count_params = {**params, "ncap": MAX_SCOPE_COUNT}
    stored_agent = agents[0] if agents is not None and len(set(agents)) == 1 else None
    if agents is not None and stored_agent is None:
        return f"(SELECT ({count_sql}) AS n OFFSET 0) {alias}", count_params
    count_params.update(table_name=table, stored_agent=stored_agent, stale=LENGTH_STALE_SECONDS)
    return (
        f"(SELECT ({count_sql}) AS n, s.rows AS stored_rows, s.avglen AS stored_avglen FROM (SELECT 1) one"
        + _stored_length_sql(stored_agent is not None)
        + f" OFFSET 0) {alias}",
        count_params,
    )


def _scope_settle(table: str, scope_where: list[str], params: dict, fetch, row: dict) -> tuple[int, float]:
    """Rows in the scope (`row`: _scope_count_sql's, an index-only count on the project/agent b-tree,
    capped at MAX_SCOPE_COUNT, read by term_stats with the term counts) and their mean vector length
    (`_mean_length`), kept in the process: the mean LENGTH_CACHE_SECONDS (it moves slowly), and the
    count SCOPE_CACHE_SECONDS for a scope of CACHE_MIN_ROWS rows or more (_scope_cached). A smaller
    scope is counted every time, and its mean read again whenever its count changed.

    A large scope's mean (an agent's, or a project's) is also kept in the database
    (search.models.ScopeLength), read with the count: a process that has not searched the scope yet
    uses it while the count stays within LENGTH_DRIFT of the count it was measured at and it is less
    than LENGTH_STALE_SECONDS old, instead of reading its sample again (10-30 ms on a cold cache)."""
    now = time.monotonic()
    key = _scope_key(table, params)
    cached = _scope_cache.get(key)
    agents = params["agents"]
    stored_agent = agents[0] if agents is not None and len(set(agents)) == 1 else None
    storable = agents is None or stored_agent is not None
    total = int(row["n"])
    stored_rows, stored_avglen = row.get("stored_rows"), row.get("stored_avglen")
    if cached and cached[2] > now and (total >= CACHE_MIN_ROWS or total == cached[1]):
        avglen, length_until = cached[3], cached[2]
    elif (
        total >= CACHE_MIN_ROWS
        and stored_avglen is not None
        and abs(total - stored_rows) <= LENGTH_DRIFT * stored_rows
    ):
        avglen, length_until = float(stored_avglen), now + LENGTH_CACHE_SECONDS
    else:
        avglen, length_until = (
            _mean_length(table, " AND ".join(scope_where), total, params, fetch),
            now + LENGTH_CACHE_SECONDS,
        )
        if storable and total >= CACHE_MIN_ROWS:
            _length_store(table, params["project"], stored_agent, total, avglen, fetch)
    if len(_scope_cache) > 10_000:
        _scope_cache.clear()
    count_until = now + SCOPE_CACHE_SECONDS if total >= CACHE_MIN_ROWS else now
    # The last element: the terms found common in this scope while its count stands (_common_terms).
    _scope_cache[key] = (count_until, total, length_until, avglen, set())
    return total, avglen


def _common_terms(table: str, params: dict) -> set | None:
    """The (filters, term) pairs found common (counted to the cap) in this large scope while its count
    stands in the process (SCOPE_CACHE_SECONDS): such a term is not counted again, its frequency is the
    estimate either way (term_stats). None for a scope counted on every search (under CACHE_MIN_ROWS)."""
    agents = params["agents"]
    cached = _scope_cache.get((table, params["project"], tuple(agents) if agents is not None else None))
    if not cached or cached[0] <= time.monotonic() or cached[1] < CACHE_MIN_ROWS:
        return None
    return cached[4]


def _exact_counts(
    table: str,
    where: list[str],
    terms: dict[int, str],
    params: dict,
    in_scope: str,
    cap: int,
    fetch,
    extra: dict[str, str] | None = None,
    scope: tuple[str, dict] | None = None,
    windows: dict[int, str] | None = None,
) -> tuple[dict[int, int], dict]:
    """Rows of the scope matching each term, counted through the GIN index (capped), in one statement,
    with the `extra` columns (name: SQL expression) read in the same statement.

    `windows` (given for a table whose vectors hold epoch lexemes: {term: tsquery of a few of the
    scope's epochs}): a term with a window is first counted in it, and in the whole scope only when
    the window holds fewer rows than the cap (a term without one: in the scope, the window's scan
    never run). A window's rows are some of the scope's, so a window counted to the cap is a scope
    counted to the cap: the count is the same (_count_windows).
    `scope`: the scope's count (_scope_count_sql's FROM clause, alias `sc`, and its parameters), read
    in the same statement too (its columns are returned with the extras): the cap then follows from
    the count in SQL as term_stats computes it (`cap` is not used), and the returned dict also holds
    `cap`."""
    extra = extra or {}
    if not terms and not extra and scope is None:
        return {}, {}
    condition = " AND ".join(where)
    stat_params = {**params, "cap": cap}
    counts = [f"{sql} AS x_{name}" for name, sql in extra.items()]
    limit, source = "%(cap)s", ""
    if scope is not None:
        scope_from, count_params = scope
        stat_params.update(count_params, min_rows=CACHE_MIN_ROWS, rare_cap=cap)
        counts.insert(0, "sc.*")
        limit = "sc.cap"
        # OFFSET 0 (here and in _scope_count_sql): kept as subqueries, not pulled up into the counts,
        # where the count would be copied into each term's LIMIT and run once per term.
        source = (
            " FROM (SELECT sc.*, CASE WHEN sc.n < %(min_rows)s THEN sc.n + 1 ELSE %(rare_cap)s END AS cap"
            f" FROM {scope_from} OFFSET 0) sc"
        )
    rows, scoped = f"{table} WHERE {condition} AND", ""
    if windows is not None:
        # Each count twice: the scope's rows named once (inlined into each count, as written out),
        # which keeps the statement under psycopg's 4,096 characters (search.ranking._one_line).
        rows, scoped = (
            "s WHERE",
            f"WITH s AS NOT MATERIALIZED (SELECT search_vector FROM {table} WHERE {condition}) ",
        )
    for i, tsquery in terms.items():
        stat_params[f"df{i}"] = f"( {tsquery} ) & {in_scope}"
        count = f"(SELECT count(*) FROM (SELECT 1 FROM {rows} search_vector @@ %(df{i})s::tsquery LIMIT {limit}) x)"
        if windows is not None:
            # The statement's text is the same whichever terms have a window (planned once).
            window = windows.get(i)
            stat_params[f"w{i}"] = window is not None  # false: the window's scan is not run at all
            stat_params[f"dw{i}"] = f"( {tsquery} ) & {window}" if window else NO_TERM
            in_window = count.replace(f"%(df{i})s", f"%(dw{i})s")
            count = f"CASE WHEN %(w{i})s AND {in_window} >= {limit} THEN {limit} ELSE {count} END"
        counts.append(f"{count} AS c{i}")
    row = fetch(scoped + "SELECT " + ", ".join(counts) + source, stat_params)[0]
    values = {name: row[f"x_{name}"] for name in extra}
    if scope is not None:
        values.update(
            {name: row[name] for name in row if name in ("n", "stored_rows", "stored_avglen", "cap")}
        )
    return {i: int(row[f"c{i}"]) for i in terms}, values


def _common_lexemes(table: str, fetch) -> dict[str, float]:
    """The table's most common lexemes and the share of rows holding each, from PostgreSQL's own
    statistics of the search vector (pg_stats, kept by ANALYZE/autovacuum); cached a few minutes."""
    now = time.monotonic()
    cached = _common_cache.get(table)
    if cached and cached[0] > now:
        return cached[1]
    rows = fetch(
        "SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats"
        " WHERE schemaname = current_schema() AND tablename = %(table)s AND attname = 'search_vector'",
        {"table": table},
    )
    common: dict[str, float] = {}
    if rows and rows[0]["elems"]:
        common = dict(zip(rows[0]["elems"], rows[0]["freqs"], strict=False))
    _common_cache[table] = (now + COMMON_CACHE_SECONDS, common)
    return common


def term_stats(
    table: str,
    where: list[str],
    scope_where: list[str],
    compiled: CompiledQuery,
    params: dict,
    in_scope: str,
    fetch,
    extra: dict[str, str] | None = None,
    window=None,
) -> TermStats:
    """Document frequencies of the query's terms in the scope; sets the idf and length parameters.
    `extra` ({name: SQL expression}): more values the caller needs, read in the counts' statement
    (one round trip fewer) and returned in TermStats.extra. `window`: for a table whose vectors hold
    epoch lexemes, window(rows) is the tsquery of the scope's newest epochs expected to hold about
    that many rows, or None (_count_windows).

    Each term's rows in the scope are counted from the GIN index: all of them in a scope of fewer
    than CACHE_MIN_ROWS rows, else up to a quarter of the candidate cap (exact for the rare terms,
    which choose the candidates); a term past that is common, and its frequency is estimated from
    the table's lexeme statistics scaled to the scope's size."""
    k = settings.MEMORY_SEARCH_CANDIDATES
    terms = {i: term.tsquery for i, term in enumerate(compiled.terms)}
    rare_cap = max(1, int(k * RARE_SHARE)) + 1
    scope = _scope_cached(table, params)
    if scope is None:
        # The scope's count (not kept in the process) is read in the term counts' statement: one round
        # trip fewer, the cap below computed in SQL from it. Every term is counted, as the count's cache
        # entry starts with no term known common.
        counted, extras = _exact_counts(
            table,
            where,
            terms,
            params,
            in_scope,
            rare_cap,
            fetch,
            extra,
            scope=_scope_count_sql(table, scope_where, params),
            windows=_count_windows(table, terms, rare_cap, window, fetch),
        )
        scope_row = {
            name: extras.pop(name) for name in ("n", "stored_rows", "stored_avglen", "cap") if name in extras
        }
        total, avglen = _scope_settle(table, scope_where, params, fetch, scope_row)
        cap = int(scope_row["cap"])
        return _term_stats_finish(
            table, where, terms, params, fetch, total, avglen, cap, counted, extras, terms
        )
    total, avglen = scope
    # A small scope is counted exactly (its rows are few); a large one up to the rare-term limit.
    cap = total + 1 if total < CACHE_MIN_ROWS else rare_cap
    # A term counted to the cap in this scope (with these filters) a moment ago is common still: only
    # its estimate is used, so it is not counted again (each common term's count read the heap row of
    # up to `cap` matches).
    known_common = _common_terms(table, params)
    to_count = {
        i: tsquery
        for i, tsquery in terms.items()
        if known_common is None or (_common_key(cap, where, params), tsquery) not in known_common
    }
    windows = _count_windows(table, to_count, cap, window, fetch)
    counted, extras = _exact_counts(
        table, where, to_count, params, in_scope, cap, fetch, extra, windows=windows
    )
    return _term_stats_finish(
        table, where, terms, params, fetch, total, avglen, cap, counted, extras, to_count
    )


# A term is counted in a window first when the table's statistics say the window holds this many
# times the cap of its rows: a window that falls short costs one small scan more than counting the scope.
WINDOW_MARGIN = 2.0


def _count_windows(table: str, terms: dict[int, str], cap: int, window, fetch) -> dict[int, str] | None:
    """{term: tsquery of the window it is counted in first} (see _exact_counts), for the terms the
    table's lexeme statistics (pg_stats) say are common: each term's window is the scope's newest
    epochs expected to hold WINDOW_MARGIN x cap of its rows. None without `window` (a table without
    epoch lexemes, a scope without windows): the counts' statement then has none; with it, the same
    text whether or not a term has one.

    A common term's count read the GIN index's posting lists of the term and of the scope over the
    whole scope, up to one item per row of the scope (a bitmap scan cannot stop at the cap): 1-2 ms
    of the database's CPU for each common word of a question to the largest agent of a
    100,000-entry project. In the window they are read over the window's epochs only."""
    if window is None:
        return None
    common = _common_lexemes(table, fetch)
    windows = {}
    for i, tsquery in terms.items():
        # Words only: a phrase's rows are fewer than its words', and the window would fall short.
        share = _or_of_lexemes(tsquery) and min(1.0, sum(common.get(x, 0.0) for x in set(_lexemes(tsquery))))
        found = window(WINDOW_MARGIN * cap / share) if share else None
        if found:
            windows[i] = found
    return windows


def _common_key(cap: int, where: list[str], params: dict) -> tuple:
    """What a term found common in a scope is known common with (_common_terms): the cap and filters."""
    return (cap, " AND ".join(where), *(repr(params.get(name)) for name in _FILTER_PARAMS))


def _term_stats_finish(
    table: str,
    where: list[str],
    terms: dict[int, str],
    params: dict,
    fetch,
    total: int,
    avglen: float,
    cap: int,
    counted: dict[int, int],
    extras: dict,
    to_count: dict[int, str],
) -> TermStats:
    """term_stats from the terms' counts (`to_count`'s; the other terms are known common)."""
    known_common = _common_terms(table, params)
    counted.update({i: cap for i in terms if i not in to_count})
    if known_common is not None:
        if len(known_common) > 10_000:
            known_common.clear()
        filters = _common_key(cap, where, params)
        known_common.update((filters, to_count[i]) for i in to_count if counted[i] >= cap)
    common = _common_lexemes(table, fetch) if any(n >= cap for n in counted.values()) else {}
    df = []
    for i in range(len(terms)):
        n = counted[i]
        if n >= cap:
            share = min(1.0, sum(common.get(lexeme, 0.0) for lexeme in set(_lexemes(terms[i]))))
            n = max(cap, round(share * total))
        df.append(n)
    k = settings.MEMORY_SEARCH_CANDIDATES
    exhaustive = sum(df) <= k and all(counted[i] < cap for i in counted)
    # Rare terms: the rarest whose rows add up to at most a quarter of the cap (a term rare in the
    # scope can still be common in the table, and its whole posting list is read).
    order = sorted(range(len(df)), key=lambda i: (df[i], i))
    rare, budget = [], 0
    for i in order:
        if budget + df[i] > k * RARE_SHARE:
            break
        rare.append(i)
        budget += df[i]
    stats = TermStats(total=total, df=df, rare=rare, exhaustive=exhaustive, extra=extras)
    params["k1"], params["b"], params["avglen"] = K1, B, max(avglen, 1.0)
    for i in range(len(df)):
        params[f"idf{i}"] = stats.idf(i)
    return stats


def _or_of_lexemes(tsquery: str) -> bool:
    """Whether a term's tsquery is lexemes (prefixes allowed) joined by `|` only: such a term matches a
    row exactly when its ts_rank there is above 0. With `&`, `!`, a phrase operator or a weight it may
    not (ts_rank ignores them), and is tested with `@@`."""
    return not set(_QUOTED.sub("", tsquery)) - set(" ()|:*")


# A term slot past the query's own terms holds this: a lexeme no search vector holds (no parser output
# starts with '#', and the scope lexemes are '#a...' and '#p...'), so it ranks 0 on every row.
NO_TERM = "'#none'"


def term_slots(n: int) -> int:
    """The number of term slots of a statement for `n` terms: n up to 4, then the next multiple of 2
    (5 and 6 terms share one statement, 7 and 8 another, ...)."""
    return n if n <= 4 else n + n % 2


def bm25_score_sql(alias: str, compiled: CompiledQuery, params: dict) -> str:
    """The BM25 text score of row `alias` (with the parameters `term_stats` set).

    Each term's ts_rank is computed once per row, in a subquery the planner keeps as it is (OFFSET 0):
    written out, the formula holds it twice, and PostgreSQL evaluated both. That took scoring 1,500 rows
    on five terms from 11 ms to 7 ms; the score is the same, operation for operation.

    The statement's text depends on the number of term slots only (`term_slots`), not on which terms
    are phrases or on the exact count: every term's match is counted with `@@` (for a term of lexemes
    joined by `|` the same as its ts_rank being above 0, _or_of_lexemes; about 0.03 us a row), the slots
    past the query's terms hold NO_TERM with idf 0 (a part of exactly 0.0, and no match), and the number
    of terms the coverage divides by is a parameter. A statement is planned once per connection and kept
    (search.ranking._fetch): a search whose statement text is new plans it, 1.5-2 ms of the database's
    CPU, and bench_search's 200 questions made 46 different texts, 29 of them from which terms were
    phrases. The score is the same: x + 0.0 is x, and the same matches are counted."""
    n = len(compiled.terms)
    # `d.v`: the row's vector read once. A vector too long to stay in its row (in TOAST: an entry's
    # long text) was fetched again by each function given it, ts_rank and `@@` of every term: put in
    # an array it is fetched once (construct_array detoasts its elements), and the rest read the copy:
    # scoring 318 rows of a 100,000-entry corpus on seven terms read 1,140 buffers, now 228 (about one
    # entry in eight has its vector in TOAST there). k1 + 1 and the matches are computed once, which
    # also keeps a long question's statement under psycopg's 4,096 characters (search.ranking._one_line).
    cols = ["%(k1)s * (1 - %(b)s + %(b)s * length(d.v) / %(avglen)s::float8) AS kl", "%(k1)s + 1 AS k"]
    parts, matched = [], []
    for i in range(term_slots(n)):
        if i < n:
            params[f"t{i}"] = compiled.terms[i].tsquery
        else:
            params[f"t{i}"], params[f"idf{i}"] = NO_TERM, 0.0
        cols.append(f"ts_rank(d.v, %(t{i})s::tsquery) / {ONE_OCCURRENCE} AS tf{i}")
        parts.append(f"%(idf{i})s::float8 * r.tf{i} * r.k / (r.tf{i} + r.kl)")
        matched.append(f"(d.v @@ %(t{i})s::tsquery)::int")
    cols.append(f"{' + '.join(matched)} AS m")
    params["nterms"] = n
    vector = f"(SELECT (ARRAY[{alias}.search_vector])[1] AS v OFFSET 0) d"
    return (
        f"(SELECT ({' + '.join(parts)}) * r.m::float8 / %(nterms)s::float8"
        f" FROM (SELECT {', '.join(cols)} FROM {vector} OFFSET 0) r)"
    )
