"""BM25 term weights for the SQL ranking (search/selectors.py).

Each query term (a word with its stems, completions and typo neighbours, a phrase, or an `a OR b`
group) weighs its inverse document frequency in the scope searched (the agent or the project, with
the search's filters), so a speaker's name that sits in half an agent's messages weighs little and
the one rare word that identifies the answer weighs a lot:

    score = sum over matched terms of  idf(t) x (k1 + 1) / (1 + k1 x (1 - b + b x len / avglen))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

(tf is taken as 1: a tsquery match says whether a term is present, and agents' messages and entries
are short; `ts_rank` is added as a small tie-break that still sees repetitions and the heavier tag
and path weights). len is the number of lexemes of the stored vector; avglen is the candidates'
mean.

Document frequencies are counted when the query runs, from the GIN index, cut by the scope lexemes
inside the scan (one statement for every term), each capped at twice MEMORY_SEARCH_CANDIDATES: always
current (no counts to maintain on the write path, no job to refresh them), exact for every term that
can be rare, and bounded in cost: counting reads the heap row of every match, and a common word's
uncapped count read 4,000 heap blocks at 100,000 entries. A term at the cap is common and weighs
little; the cap flattens differences among common words only. The scope's size and mean length come
from the project/agent b-tree (an index-only count, a 200-row sample), kept a minute in the process
for scopes of 1,000 rows or more. (Estimating frequencies from a cached sample of each scope's
lexemes was tried: reading the sample cost up to half a second for each cold agent.)

The same counts choose the candidates (rare terms first, as MaxScore engines do): the rarest terms
whose document frequencies add up to at most a quarter of MEMORY_SEARCH_CANDIDATES are scanned over
the whole scope, so a row holding one of them can never be lost to the candidate cap or the recency
windows, however old it is; when all the terms' rows fit under the cap, every matching row is ranked.
"""

import math
import time
from dataclasses import dataclass

from django.conf import settings

from search.query import CompiledQuery

K1 = 1.2
B = 0.5
# ts_rank of one occurrence of a term of weight B (the text's weight): the unit of tf.
ONE_OCCURRENCE = 0.24317084
LENGTH_SAMPLE = 200  # rows whose mean vector length stands for the scope's
MAX_SCOPE_COUNT = 10_000_000
CACHE_MIN_ROWS = 1000
DF_CAP_FACTOR = 2
SCOPE_CACHE_SECONDS = 60.0
RARE_SHARE = 0.25
_scope_cache: dict = {}


@dataclass
class TermStats:
    total: int  # rows in scope (capped)
    df: list[int]  # per compiled term (capped)
    rare: list[int]  # indexes of the terms scanned over the whole scope
    exhaustive: bool  # every matching row fits under the candidate cap: no windows needed

    def idf(self, i: int) -> float:
        n = max(self.total, self.df[i])
        return math.log(1 + (n - self.df[i] + 0.5) / (self.df[i] + 0.5))


def _scope_size(table: str, scope_where: list[str], params: dict, fetch) -> tuple[int, float]:
    """Rows in the scope (an index-only count on the project/agent b-tree, capped at MAX_SCOPE_COUNT)
    and the mean vector length of LENGTH_SAMPLE of them; kept SCOPE_CACHE_SECONDS in the process for
    a scope of CACHE_MIN_ROWS rows or more (they move slowly; smaller scopes are read every time)."""
    key = (table, params["project"], tuple(params["agents"]) if params["agents"] is not None else None)
    now = time.monotonic()
    cached = _scope_cache.get(key)
    if cached and cached[0] > now:
        return cached[1], cached[2]
    condition = " AND ".join(scope_where)
    row = fetch(
        f"SELECT (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {condition} LIMIT %(ncap)s) x) AS n,"
        f" (SELECT avg(length(search_vector)) FROM (SELECT search_vector FROM {table} WHERE {condition}"
        " LIMIT %(sample)s) x) AS avglen",
        {**params, "ncap": MAX_SCOPE_COUNT, "sample": LENGTH_SAMPLE},
    )[0]
    total, avglen = int(row["n"]), float(row["avglen"] or 1.0)
    if total >= CACHE_MIN_ROWS:
        if len(_scope_cache) > 10_000:
            _scope_cache.clear()
        _scope_cache[key] = (now + SCOPE_CACHE_SECONDS, total, avglen)
    return total, avglen


def _exact_counts(
    table: str, where: list[str], terms: dict[int, str], params: dict, in_scope: str, cap: int, fetch
) -> dict[int, int]:
    """Rows of the scope matching each term, counted through the GIN index (capped), in one statement."""
    if not terms:
        return {}
    condition = " AND ".join(where)
    stat_params = {**params, "cap": cap}
    counts = []
    for i, tsquery in terms.items():
        stat_params[f"df{i}"] = f"( {tsquery} ) & {in_scope}"
        counts.append(
            f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {condition}"
            f" AND search_vector @@ %(df{i})s::tsquery LIMIT %(cap)s) x) AS c{i}"
        )
    row = fetch("SELECT " + ", ".join(counts), stat_params)[0]
    return {i: int(row[f"c{i}"]) for i in terms}


def term_stats(
    table: str,
    where: list[str],
    scope_where: list[str],
    compiled: CompiledQuery,
    params: dict,
    in_scope: str,
    fetch,
) -> TermStats:
    """Document frequencies of the query's terms in the scope, counted from the GIN index, each
    capped at DF_CAP_FACTOR x the candidate cap; sets the idf and length parameters."""
    k = settings.MEMORY_SEARCH_CANDIDATES
    terms = {i: term.tsquery for i, term in enumerate(compiled.terms)}
    counted = _exact_counts(table, where, terms, params, in_scope, DF_CAP_FACTOR * k, fetch)
    df = [counted[i] for i in range(len(terms))]
    total, avglen = _scope_size(table, scope_where, params, fetch)
    k = settings.MEMORY_SEARCH_CANDIDATES
    exhaustive = sum(df) <= k
    # Rare terms: the rarest whose rows add up to at most a quarter of the cap (a term rare in the
    # scope can still be common in the table, and its whole posting list is read).
    order = sorted(range(len(df)), key=lambda i: (df[i], i))
    rare, budget = [], 0
    for i in order:
        if budget + df[i] > k * RARE_SHARE:
            break
        rare.append(i)
        budget += df[i]
    stats = TermStats(total=total, df=df, rare=rare, exhaustive=exhaustive)
    params["k1"], params["b"], params["avglen"] = K1, B, max(avglen, 1.0)
    for i in range(len(df)):
        params[f"idf{i}"] = stats.idf(i)
    return stats


def bm25_score_sql(alias: str, compiled: CompiledQuery, params: dict) -> str:
    """The BM25 text score of row `alias` (with the parameters `term_stats` set)."""
    length = f"(1 - %(b)s + %(b)s * length({alias}.search_vector) / %(avglen)s::float8)"
    parts, matched = [], []
    for i, term in enumerate(compiled.terms):
        params[f"t{i}"] = term.tsquery
        tf = f"(ts_rank({alias}.search_vector, %(t{i})s::tsquery) / {ONE_OCCURRENCE})"
        parts.append(f"%(idf{i})s::float8 * {tf} * (%(k1)s + 1) / ({tf} + %(k1)s * {length})")
        matched.append(f"({alias}.search_vector @@ %(t{i})s::tsquery)::int")
    coord = f"({' + '.join(matched)})::float8 / {len(matched)}"
    return f"(({' + '.join(parts)}) * {coord})"
