"""Storing many new rows of one model with PostgreSQL's COPY instead of a multi-row INSERT.

A 50-message append spent 3.2 ms of Python in `bulk_create` (the compiler prepares and quotes each of
the 750 values into one long INSERT, which PostgreSQL then parses) against 0.7 ms handing the same rows
to COPY, and PostgreSQL 1-2 ms less (docs/benchmarks.md). Triggers, constraints and generated columns
apply as for an INSERT; the statement-level trigger's transition table holds the copied rows.
"""

from collections.abc import Sequence

from django.db import connections
from django.db.models import Model


def rows_copy(rows: Sequence[Model], *, using: str = "default") -> None:
    """Store `rows` (new instances of one model, primary keys already set) with one COPY, values
    prepared by their fields as `save` would, generated columns left to the database. Afterwards the
    instances are saved ones, as after `bulk_create`. Call inside a transaction when the rows must be
    stored with other writes."""
    if not rows:
        return
    model = type(rows[0])
    connection = connections[using]
    fields = [field for field in model._meta.concrete_fields if not field.generated]
    if any(row.pk is None for row in rows):
        raise ValueError("rows_copy needs the primary keys set (allocate them first)")
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    preparers = [(field.attname, field.get_db_prep_save) for field in fields]
    # COPY is psycopg's own (Django's cursor has no copy): its errors are wrapped as Django's would be,
    # so that a lost connection is handled like any other (503, and the connection replaced).
    statement = f"COPY {table} ({columns}) FROM STDIN"
    with (
        connection.cursor() as cursor,
        connection.wrap_database_errors,
        cursor.cursor.copy(statement) as copy,
    ):
        for row in rows:
            copy.write_row([prepare(getattr(row, attname), connection) for attname, prepare in preparers])
    for row in rows:
        row._state.adding = False
        row._state.db = using
