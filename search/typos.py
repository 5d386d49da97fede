"""Typo tolerance: the vocabulary words within one edit of a query word (search/sql.py keeps the
vocabulary and its deletion keys)."""

from django.db import connection

MAX_NEIGHBOURS = 8


def edit_distance_one(a: str, b: str) -> bool:
    """True when a and b differ by exactly one insertion, deletion, substitution or transposition."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


def deletion_keys(word: str) -> set[str]:
    return {word} | {word[:i] + word[i + 1 :] for i in range(len(word))}


def typo_neighbours(words: list[str]) -> tuple[dict[str, list[str]], dict[str, tuple[str, str]]]:
    """Vocabulary words within one edit of each word, with their stems."""
    keys = sorted({key for word in words for key in deletion_keys(word)})
    if not keys:
        return {}, {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT d.word, phraseto_tsquery('english', d.word)::text,
                   phraseto_tsquery('portuguese', d.word)::text
            FROM (SELECT DISTINCT word FROM search_vocabularydeletion WHERE key = ANY(%s)) d
            """,
            [keys],
        )
        rows = cursor.fetchall()
    stems = {row[0]: (row[1], row[2]) for row in rows}
    found: dict[str, list[str]] = {}
    for word in words:
        near = sorted(
            (candidate for candidate in stems if edit_distance_one(word, candidate)),
            key=lambda c: (c[0] != word[0], c),
        )
        if near:
            found[word] = near[:MAX_NEIGHBOURS]
    return found, stems
