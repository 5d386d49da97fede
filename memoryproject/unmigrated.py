"""What a command says when its database is not ready: not migrated (a fresh data folder before its
first `serve`, a new version installed before `migrate`), or not reachable (DATABASE_URL naming a server
that is down, a database that does not exist, a wrong user): one line naming what to do, not a
traceback about a missing table or a refused connection."""

import contextlib

from django.conf import settings
from django.db import DatabaseError, OperationalError, connections
from django.db.migrations.executor import MigrationExecutor

# undefined_table, undefined_column: what a query meets in a schema older than the code.
MISSING_SCHEMA_STATES = {"42P01", "42703"}


def unmigrated_message(exc: BaseException) -> str | None:
    """Why `exc` happened when it is a missing table or column and migrations are not applied; None for
    any other error (then it is a bug, and its traceback is wanted)."""
    if getattr(exc.__cause__, "sqlstate", None) not in MISSING_SCHEMA_STATES:
        return None
    try:
        connections.close_all()  # the failed query may have left the connection in an aborted transaction
        executor = MigrationExecutor(connections["default"])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError:
        return None
    if not plan:
        return None
    first = plan[0][0]
    return (
        f"The database is not migrated: {len(plan)} migration(s) not applied ({first.app_label}."
        f"{first.name} first). Run `python manage.py migrate` (or start `serve`, which migrates), then run "
        "this command again."
    )


def unreachable_line(exc: DatabaseError) -> str:
    """The one line for a connection that failed: psycopg's own first line says why (it names no
    password), prefixed by where the setting is (DATABASE_URL, or the embedded server's folder)."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    where = (
        f"the embedded database under {settings.MEMORY_DATA_DIR / 'pg'}"
        if settings.EMBEDDED_DATABASE
        else "DATABASE_URL"
    )
    if isinstance(exc, OperationalError):
        return f"{where}: the database cannot be reached ({reason})"
    # An option psycopg does not know (?colour=blue): a ProgrammingError before any connection.
    return f"{where}: its connection settings are refused ({reason})"


def unreachable_message(exc: BaseException) -> str | None:
    """The one line for a command that failed because its database cannot be reached; None when the
    database answers (then `exc` was something else, and its traceback is wanted)."""
    if not isinstance(exc, DatabaseError):
        return None
    with contextlib.suppress(DatabaseError):
        connections.close_all()
    try:
        connections["default"].ensure_connection()
    except DatabaseError as again:
        return unreachable_line(again)
    return None
