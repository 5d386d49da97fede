"""Storing many new rows of one model with PostgreSQL's COPY instead of a multi-row INSERT.

`rows_create` is `bulk_create` done that way: the rows' primary keys taken from their sequence in one
statement, then one COPY. `rows_copy` stores rows whose keys the caller already took (`ids_allocate`),
for rows that must point at each other (a batch of messages, each the parent of the next). `row_insert`
is `save()` of one new row with the values prepared the same way, for a hot path's single INSERT.
`rows_insert_new` is `bulk_create(ignore_conflicts=True)` that says which rows it stored.

A 50-message append spent 3.2 ms of Python in `bulk_create` (the compiler prepares and quotes each of
the 750 values into one long INSERT, which PostgreSQL then parses) against 0.7 ms handing the same rows
to COPY, and PostgreSQL 1-2 ms less (docs/benchmarks.md). Triggers, constraints and generated columns
apply as for an INSERT; the statement-level trigger's transition table holds the copied rows.
"""

from collections.abc import Sequence

from django.db import connections, models
from django.db.models import Model

from memoryproject.prepared import prepared_cursor

# Fields (these exact classes, not subclasses, which may prepare values their own way) whose
# preparation returns a value of this exact type unchanged, as Django's get_prep_value does (str for
# text, int for integers and keys, bool, float): such values, and None, go to COPY as they are. The
# rest (dates, JSON, arrays, decimals...) are prepared by their fields. Measured on the message path:
# see docs/benchmarks.md.
_PLAIN: dict[type, type] = {
    models.CharField: str,
    models.TextField: str,
    models.IntegerField: int,
    models.BigIntegerField: int,
    models.SmallIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveBigIntegerField: int,
    models.PositiveSmallIntegerField: int,
    models.AutoField: int,
    models.BigAutoField: int,
    models.ForeignKey: int,
    models.BooleanField: bool,
    models.FloatField: float,
}


def ids_allocate(model: type[Model], count: int, *, using: str = "default") -> list[int]:
    """`count` new primary keys for `model`, from its column's sequence, in one statement."""
    if count <= 0:
        return []
    with prepared_cursor(using) as cursor:
        # The sequence found once (a sub-select): as an argument of nextval it was looked up, and its
        # name cast to regclass, for each key (0.2 ms of the database's CPU for 50 keys). Prepared: a
        # message batch runs it twice, and PostgreSQL parsed and planned it anew each time.
        cursor.execute(
            "SELECT nextval((SELECT pg_get_serial_sequence(%s::text, %s::text)::regclass))"
            " FROM generate_series(1, %s::integer)",
            [model._meta.db_table, model._meta.pk.column, count],
        )
        return [row[0] for row in cursor.fetchall()]


def rows_create(rows: list[Model], *, using: str = "default") -> list[Model]:
    """Store new rows of one model as `bulk_create` would (primary keys set on the instances, which
    come back saved), with one COPY. Measured on the message path's side rows (about 25 write-ahead
    state rows and 40 working-buffer rows a 50-message batch): see docs/benchmarks.md."""
    if not rows:
        return rows
    for row, pk in zip(rows, ids_allocate(type(rows[0]), len(rows), using=using), strict=True):
        row.pk = pk
    rows_copy(rows, using=using)
    return rows


def _preparers(model: type[Model]) -> list[tuple]:
    """(field, attname, its preparation, the type its value goes as it is) of each stored column."""
    return [
        (field, field.attname, field.get_db_prep_save, _PLAIN.get(type(field)))
        for field in model._meta.concrete_fields
        if not field.generated
    ]


def _prepared(value, prepare, plain, connection):
    return value if value is None or type(value) is plain else prepare(value, connection)


def rows_copy(rows: Sequence[Model], *, using: str = "default") -> None:
    """Store `rows` (new instances of one model, primary keys already set) with one COPY, values
    prepared by their fields as `save` would, generated columns left to the database. Afterwards the
    instances are saved ones, as after `bulk_create`. Call inside a transaction when the rows must be
    stored with other writes."""
    if not rows:
        return
    model = type(rows[0])
    connection = connections[using]
    preparers = _preparers(model)
    if any(row.pk is None for row in rows):
        raise ValueError("rows_copy needs the primary keys set (allocate them first)")
    columns = ", ".join(connection.ops.quote_name(field.column) for field, *_ in preparers)
    table = connection.ops.quote_name(model._meta.db_table)
    # COPY is psycopg's own (Django's cursor has no copy): its errors are wrapped as Django's would be,
    # so that a lost connection is handled like any other (503, and the connection replaced).
    statement = f"COPY {table} ({columns}) FROM STDIN"
    with (
        connection.cursor() as cursor,
        connection.wrap_database_errors,
        cursor.cursor.copy(statement) as copy,
    ):
        for row in rows:
            copy.write_row(
                [
                    _prepared(getattr(row, attname), prepare, plain, connection)
                    for _, attname, prepare, plain in preparers
                ]
            )
    for row in rows:
        row._state.adding = False
        row._state.db = using


def row_insert(row: Model, *, using: str = "default") -> Model:
    """Store one new row as `save()` stores a new instance (each field's pre_save, so auto_now
    applies; the primary key from its sequence unless set; generated columns left to the database),
    with an INSERT written here instead of by Django's compiler: for a new vault entry (20 columns)
    0.26-0.30 ms of Python against 0.41-0.50 ms for `objects.create`. Prepared (`prepared_cursor`):
    its text is the same for every row of a model with the same fields set. No signals are sent (the
    project has no receivers)."""
    connection = connections[using]
    model = type(row)
    preparers = [entry for entry in _preparers(model) if not (entry[0].primary_key and row.pk is None)]
    values = [
        _prepared(field.pre_save(row, True), prepare, plain, connection)
        for field, _, prepare, plain in preparers
    ]
    quote = connection.ops.quote_name
    statement = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f, *_ in preparers)}) "
        f"VALUES ({', '.join(['%s'] * len(values))}) RETURNING {quote(model._meta.pk.column)}"
    )
    with prepared_cursor(using) as cursor:
        cursor.execute(statement, values)
        row.pk = cursor.fetchone()[0]
    row._state.adding = False
    row._state.db = using
    return row


# PostgreSQL's limit of parameters in one statement (a 16-bit count in the protocol).
_PARAMETERS_MAX = 65535


def rows_insert_new(rows: list[Model], *, using: str = "default") -> list[Model]:
    """Store new rows of one model as `bulk_create(ignore_conflicts=True)` does (INSERT ... ON CONFLICT
    DO NOTHING, each field's pre_save applied), and return those stored: a row a unique constraint
    left out (one a concurrent writer stored first) is not among them, and keeps no primary key.
    bulk_create says nothing of which rows it left out, and a caller counted them all as created."""
    if not rows:
        return []
    connection = connections[using]
    model = type(rows[0])
    pk_column = model._meta.pk.column
    for row, pk in zip(rows, ids_allocate(model, len(rows), using=using), strict=True):
        row.pk = pk
    preparers = _preparers(model)
    quote = connection.ops.quote_name
    head = f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f, *_ in preparers)}) VALUES "
    placeholders = "(" + ", ".join(["%s"] * len(preparers)) + ")"
    stored: set[int] = set()
    per_statement = max(1, _PARAMETERS_MAX // len(preparers))
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            values = [
                _prepared(field.pre_save(row, True), prepare, plain, connection)
                for row in chunk
                for field, _, prepare, plain in preparers
            ]
            cursor.execute(
                head
                + ", ".join([placeholders] * len(chunk))
                + f" ON CONFLICT DO NOTHING RETURNING {quote(pk_column)}",
                values,
            )
            stored.update(pk for (pk,) in cursor.fetchall())
    kept = []
    for row in rows:
        if row.pk in stored:
            row._state.adding = False
            row._state.db = using
            kept.append(row)
        else:
            row.pk = None
    return kept
