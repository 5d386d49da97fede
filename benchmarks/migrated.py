"""Benchmarks may be the first thing run on a fresh data folder: migrate it first instead of failing
with a traceback about missing tables."""

from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def ensure_migrated(command) -> None:
    """Apply pending migrations, saying so on the command's output; nothing when there are none."""
    connection = connections[DEFAULT_DB_ALIAS]
    executor = MigrationExecutor(connection)
    if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    command.stdout.write("The database is not migrated yet: migrating it first (manage.py migrate).")
    call_command("migrate", interactive=False, verbosity=0)
