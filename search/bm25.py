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

Document frequencies are computed when the query runs, so they are always current: no counts to
maintain on the write path, no job to refresh them. A scope of at most SAMPLE_ROWS rows (an agent of
a few hundred conversations) is counted exactly from the GIN index, cut by the scope lexemes inside
the scan. A larger scope's size comes from an index-only count on the project/agent b-tree, and each
term's frequency is estimated from the lexemes of SAMPLE_ROWS of its rows, kept a minute in the
process; the terms whose estimate leaves them possibly rare are then counted exactly (few rows, so
cheap). Counting every term exactly in a large scope read every matching heap row (4,000 heap blocks
for one common word at 100,000 entries): it doubled search latency, which is why it is not done.

The same counts choose the candidates (rare terms first, as MaxScore engines do): the rarest terms
whose document frequencies add up to at most a quarter of MEMORY_SEARCH_CANDIDATES are scanned over
the whole scope, so a row holding one of them can never be lost to the candidate cap or the recency
windows, however old it is; when all the terms' rows fit under the cap, every matching row is ranked.
"""

import math
import time
from dataclasses import dataclass

from django.conf import settings

from search.query import CompiledQuery, query_lexemes

K1 = 1.2
B = 0.5
# ts_rank of one occurrence of a term of weight B (the text's weight): the unit of tf.
ONE_OCCURRENCE = 0.24317084
SAMPLE_ROWS = 1000  # rows of a large scope whose lexemes stand for its document frequencies
MAX_SCOPE_COUNT = 10_000_000
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


@dataclass
class _Sample:
    expires: float
    total: int  # rows in the scope
    avglen: float
    docs: list[frozenset[str]]  # the lexemes of up to SAMPLE_ROWS rows of the scope


def _scope_sample(table: str, scope_where: list[str], params: dict, fetch) -> _Sample:
    """The scope's size (an index-only count on the project/agent b-tree, capped at MAX_SCOPE_COUNT)
    and the lexemes of SAMPLE_ROWS of its rows; kept SCOPE_CACHE_SECONDS in the process when the
    scope is larger than the sample (smaller ones are read on every search)."""
    key = (table, params["project"], tuple(params["agents"]) if params["agents"] is not None else None)
    now = time.monotonic()
    cached = _scope_cache.get(key)
    if cached and cached.expires > now:
        return cached
    condition = " AND ".join(scope_where)
    scope_params = {**params, "ncap": MAX_SCOPE_COUNT, "sample": SAMPLE_ROWS}
    total = fetch(
        f"SELECT count(*) AS n FROM (SELECT 1 FROM {table} WHERE {condition} LIMIT %(ncap)s) x", scope_params
    )[0]["n"]
    docs = [
        frozenset(row["lx"])
        for row in fetch(
            f"SELECT tsvector_to_array(search_vector) AS lx FROM {table} WHERE {condition} LIMIT %(sample)s",
            scope_params,
        )
    ]
    avglen = sum(len(d) for d in docs) / len(docs) if docs else 1.0
    sample = _Sample(now + SCOPE_CACHE_SECONDS, int(total), avglen, docs)
    if total > SAMPLE_ROWS:
        if len(_scope_cache) > 1_000:
            _scope_cache.clear()
        _scope_cache[key] = sample
    return sample


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
    """Document frequencies of the query's terms in the scope; sets the idf and length parameters.

    A scope no larger than SAMPLE_ROWS is counted exactly (GIN). In a larger one each term's
    frequency is estimated from the cached sample, and the terms that may be rare (estimate at most
    the candidate cap) are then counted exactly (cheap: few rows), so the rare-first choice of
    candidates rests on exact figures."""
    k = settings.MEMORY_SEARCH_CANDIDATES
    sample = _scope_sample(table, scope_where, params, fetch)
    terms = {i: term.tsquery for i, term in enumerate(compiled.terms)}
    if sample.total <= SAMPLE_ROWS:
        df = _exact_counts(table, where, terms, params, in_scope, SAMPLE_ROWS, fetch)
    else:
        df = {}
        for i, term in enumerate(compiled.terms):
            lexemes = set(query_lexemes(term.tsquery))
            hits = sum(1 for doc in sample.docs if not lexemes.isdisjoint(doc))
            df[i] = round(hits / max(1, len(sample.docs)) * sample.total)
        maybe_rare = {i: terms[i] for i in terms if df[i] <= k}
        exact_cap = 2 * k
        for i, n in _exact_counts(table, where, maybe_rare, params, in_scope, exact_cap, fetch).items():
            df[i] = n if n < exact_cap else max(df[i], n)
    df = [df[i] for i in range(len(terms))]
    total, avglen = sample.total, sample.avglen
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
