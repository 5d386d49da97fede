"""One row of a model read by a statement written by hand, as `QuerySet.first()` would give it.

The message append read three rows through the ORM (the session, locked; its active branch; the
message the batch hangs from), and Django compiled each query anew: 1.6-1.9 ms of Python a query for
a message against 0.3-0.5 ms for this (docs/benchmarks.md). Here the statement's text is built once
per model and condition and prepared by PostgreSQL (`prepared_cursor`), and the row comes back as the
ORM would make it: the same columns (those the model's default manager defers, the search vectors,
left deferred), each value through its field's converters (JSON), `_state` of a row read from the
database. A day's note, locked on each write of it (vault.services.files), is read the same way.
"""

from collections.abc import Sequence
from functools import cache

from django.db import connections
from django.db.models import Model

from memoryproject.prepared import prepared_cursor


@cache
def _statement(
    model: type[Model], where: str, order_by: str, lock: bool, using: str
) -> tuple[str, tuple, tuple]:
    """The SELECT of `model`'s stored columns where `where`, the first by `order_by` (the primary key
    if empty); the columns' attnames; (position, field, its column) of each value that has converters."""
    deferred, defer = model._default_manager.all().query.deferred_loading
    if not defer:  # only(): not needed so far
        raise NotImplementedError(f"{model.__name__}'s manager loads only some columns")
    fields = [field for field in model._meta.concrete_fields if field.name not in deferred]
    table = model._meta.db_table
    quote = connections[using].ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    statement = (
        f"SELECT {columns} FROM {quote(table)} WHERE {where} "
        f"ORDER BY {order_by or quote(model._meta.pk.column)} LIMIT 1"
        # OF the table, as the files' locks say (tests/vault/test_concurrency.py): the same lock here,
        # where nothing is joined, and the same if a join is ever added.
        + (f" FOR UPDATE OF {quote(table)}" if lock else "")
    )
    converted = tuple(
        (position, field, field.get_col(table))
        for position, field in enumerate(fields)
        if field.get_db_converters(connections[using])
    )
    return statement, tuple(field.attname for field in fields), converted


def row_first(
    model: type[Model],
    where: str,
    params: Sequence,
    *,
    order_by: str = "",
    lock: bool = False,
    using: str = "default",
):
    """The first row of `model` where `where` (SQL over the table's own column names, each parameter
    one PostgreSQL can type from the statement, as server binding needs) by `order_by` (SQL; the
    primary key if empty: give the model's Meta.ordering where several rows can match, as `first()`
    orders by it), or None; `lock`: FOR UPDATE OF this table, as `select_for_update(of=("self",))`.
    `where` and `order_by` are the statement's text: never build them from a client's value."""
    statement, attnames, converted = _statement(model, where, order_by, lock, using)
    with prepared_cursor(using) as cursor:
        cursor.execute(statement, list(params))
        row = cursor.fetchone()
    if row is None:
        return None
    if converted:
        connection = connections[using]
        row = list(row)
        for position, field, column in converted:
            for converter in field.get_db_converters(connection):
                row[position] = converter(row[position], column, connection)
    return model.from_db(using, attnames, row)
