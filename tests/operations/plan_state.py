"""A migration state before an upgrade, reached from the latest schema.

django-test-migrations' `apply_initial_migration(targets)` drops every table and applies the full plan
from the first migration up to the last of `targets` (every app's migrations that come before it too):
the state an operator's database is in before upgrading past `targets`. For a late state that replays
a hundred migrations to undo a few dozen. `plan_state_reach` reaches the same applied migrations from
where every test starts, the latest schema, by unapplying the ones after that point in the plan.
"""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.state import ProjectState
from django_test_migrations.plan import truncate_plan


def plan_prefix_targets(targets: list[tuple[str, str]]) -> list[tuple[str, str | None]]:
    """Each app's last migration in the full plan truncated after `targets` (None: none of its
    migrations): the targets `migrate` needs to leave exactly that prefix applied."""
    executor = MigrationExecutor(connection)
    full_plan = executor.migration_plan(executor.loader.graph.leaf_nodes(), clean_start=True)
    last: dict[str, str | None] = {migration.app_label: None for migration, _ in full_plan}
    for migration, _ in truncate_plan(targets, full_plan):
        last[migration.app_label] = migration.name
    return sorted(last.items())


def plan_state_reach(migrator, targets: list[tuple[str, str]]) -> ProjectState:
    """The state `migrator.apply_initial_migration(targets)` builds, reached by migrating backwards.
    Its models are built from the graph: the state Django's executor returns after unapplying migrations
    of several apps is the one before the last migration of its plan, which here (vault's, unapplied
    after sessions_app's) still holds sessions_app's unapplied migrations."""
    prefix = plan_prefix_targets(targets)
    migrator.apply_tested_migration(prefix)
    return MigrationExecutor(connection).loader.project_state([node for node in prefix if node[1]])
