"""What the upgrade tests of the search text read back: a row's stored lexemes, its row version, and what
a lexical search finds."""

from django.db import connection


def lexemes(table: str, pk: int) -> set[str]:
    """The lexemes of a row's search vector, its scope lexemes (#...) left out."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT v.lexeme FROM {table} t, unnest(t.search_vector) v WHERE t.id = %s AND v.lexeme NOT LIKE '#%%'",
            [pk],
        )
        return {row[0] for row in cursor.fetchall()}


def row_version(table: str, pk: int) -> str:
    """The row's xmin: it changes when a migration rewrites the row."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT xmin::text FROM {table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def found(api, token, q, kind) -> list[int]:
    """The ids a lexical search of one kind finds."""
    response = api.get("/search", token=token, q=q, kinds=kind, mode="lexical", limit=10)
    assert response.status_code == 200, response.json()
    return [r["id"] for r in response.json()["results"]]
