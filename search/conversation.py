"""Conversation-aware ranking, when MEMORY_SEARCH_NEIGHBOUR_SHARE is above 0: a message is also
relevant through the turns next to it.

In a conversation what answers a question is often spread over adjacent turns ("Did you make it to
the concert?" / "Yes, last week!"), and a turn that matches the query well says that the turns
beside it are on the subject too. So each message's relevance gains MEMORY_SEARCH_NEIGHBOUR_SHARE of the best
relevance among its neighbours that the same search found: its parent (the turn it answers) and its
children (the turns that answer it, one per branch). Only rows the search already holds count, so no
statement is added, and a message none of whose neighbours was found keeps its relevance.

Relevance here is before the recency/importance/access factors, which are applied afterwards as for
any row. Measured on the two public conversation benchmarks (docs/benchmarks.md): with a share of
0.5, hybrid R@10 0.680 -> 0.716 on LoCoMo (turns that alternate between two people, as an agent's
with its user do) and 0.570 -> 0.561 on REALTALK (messaging-app bursts, several messages in a row from
one person), so it is off by default.
"""

from django.conf import settings


def neighbour_share() -> float:
    return settings.MEMORY_SEARCH_NEIGHBOUR_SHARE


def neighbours_spread(relevance: dict[tuple, float], rows: dict[tuple, dict]) -> dict[tuple, float]:
    """`relevance` by (kind, id) with each message's share of its best found neighbour added.
    `rows` holds the same keys; a message row carries its `parent_id`."""
    share = neighbour_share()
    if share <= 0:
        return relevance
    children: dict[int, list[tuple]] = {}
    for key, row in rows.items():
        parent = row.get("parent_id") if key[0] == "message" else None
        if parent is not None:
            children.setdefault(parent, []).append(key)
    if not children:
        return relevance
    spread = dict(relevance)
    for key, row in rows.items():
        if key[0] != "message":
            continue
        near = [relevance.get(("message", row.get("parent_id")), 0.0)]
        near += [relevance.get(child, 0.0) for child in children.get(key[1], ())]
        best = max(near)
        if best > 0:
            spread[key] = relevance.get(key, 0.0) + share * best
    return spread


def rows_spread(rows: list[dict]) -> None:
    """The same for one arm's scored rows (each with `score`, its relevance times `factor`), in place."""
    if neighbour_share() <= 0:
        return
    keyed = {(row["kind"], row["id"]): row for row in rows}
    relevance = {}
    for key, row in keyed.items():
        factor = float(row.get("factor") or 1.0)
        relevance[key] = float(row["score"]) / factor if factor else 0.0
    spread = neighbours_spread(relevance, keyed)
    if spread is relevance:
        return
    for key, row in keyed.items():
        row["score"] = spread[key] * float(row.get("factor") or 1.0)
