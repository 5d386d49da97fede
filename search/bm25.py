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
inside the scan (one round trip, every term in one statement), and capped at MEMORY_SEARCH_DF_CAP
rows per term: exact for every term that can matter, always current (no counts to maintain on the
write path, no job to refresh them), and bounded in cost. A term at the cap is common enough that its
weight is near zero anyway; N is capped the same way, so when a scope holds more rows than the cap,
weights are those of a cap-sized sample, in the same order as the true ones.

The same counts choose the candidates (rare terms first, as MaxScore engines do): the rarest terms
whose document frequencies add up to at most MEMORY_SEARCH_CANDIDATES are scanned over the whole
scope, so a row holding one of them can never be lost to the candidate cap or the recency windows,
however old it is.
"""

import math
from dataclasses import dataclass

from django.conf import settings

from search.query import CompiledQuery

K1 = 1.2
B = 0.5
# ts_rank of one occurrence of a term of weight B (the text's weight): the unit of tf.
ONE_OCCURRENCE = 0.24317084
LENGTH_SAMPLE = 200  # rows whose mean vector length stands for the scope's


@dataclass
class TermStats:
    total: int  # rows in scope (capped)
    df: list[int]  # per compiled term (capped)
    rare: list[int]  # indexes of the terms scanned over the whole scope
    exhaustive: bool  # every matching row fits under the candidate cap: no windows needed

    def idf(self, i: int) -> float:
        n = max(self.total, self.df[i])
        return math.log(1 + (n - self.df[i] + 0.5) / (self.df[i] + 0.5))


def term_stats(
    table: str, where: list[str], compiled: CompiledQuery, params: dict, in_scope: str, fetch
) -> TermStats:
    """Count, in one statement, the scope's rows and each term's matching rows (each capped), and
    the mean vector length of a sample of the scope; sets the idf and length parameters."""
    cap = settings.MEMORY_SEARCH_DF_CAP
    condition = " AND ".join(where)
    stat_params = dict(params)
    stat_params["cap"] = cap
    stat_params["scope_q"] = in_scope
    counts = [
        "(SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {c} AND search_vector @@ %(scope_q)s::tsquery"
        " LIMIT %(cap)s) x)",
        "(SELECT avg(length(search_vector)) FROM (SELECT search_vector FROM {t} WHERE {c}"
        " AND search_vector @@ %(scope_q)s::tsquery LIMIT %(sample)s) x)",
    ]
    stat_params["sample"] = LENGTH_SAMPLE
    for i, term in enumerate(compiled.terms):
        stat_params[f"df{i}"] = f"( {term.tsquery} ) & {in_scope}"
        counts.append(
            "(SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {c}"
            f" AND search_vector @@ %(df{i})s::tsquery LIMIT %(cap)s) x)"
        )
    sql = "SELECT " + ", ".join(f"{c.format(t=table, c=condition)} AS c{j}" for j, c in enumerate(counts))
    row = list(fetch(sql, stat_params)[0].values())
    total, avglen, df = int(row[0]), float(row[1] or 1.0), [int(x) for x in row[2:]]
    k = settings.MEMORY_SEARCH_CANDIDATES
    order = sorted(range(len(df)), key=lambda i: (df[i], i))
    rare, budget = [], 0
    for i in order:
        if budget + df[i] > k:
            break
        rare.append(i)
        budget += df[i]
    stats = TermStats(total=total, df=df, rare=rare, exhaustive=len(rare) == len(df))
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
