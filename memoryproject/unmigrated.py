"""What a command run on a database that is not migrated says (a fresh data folder before its first
`serve`, a new version installed before `migrate`): one line naming what to run, not a traceback about a
missing table or column."""

from django.db import DatabaseError, connections
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
