"""tests/operations/plan_state.py: a state before an upgrade reached backwards from the latest schema
holds exactly the migrations the full plan applies up to it, and its models are that state's."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder
from django_test_migrations.plan import truncate_plan

from tests.operations.plan_state import plan_state_reach

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("sessions_app", "0014_future_dates_clamped")]


def test_the_applied_migrations_are_the_full_plan_up_to_the_targets(migrator):
    executor = MigrationExecutor(connection)
    full_plan = executor.migration_plan(executor.loader.graph.leaf_nodes(), clean_start=True)
    expected = {(m.app_label, m.name) for m, _ in truncate_plan(BEFORE, full_plan)}
    assert len(expected) < len(full_plan)

    state = plan_state_reach(migrator, BEFORE)

    assert MigrationRecorder(connection).applied_migrations().keys() == expected
    # sessions_app 0015 added the sessions' size bound: unapplied here, though vault's migrations
    # unapplied after it come later in the plan (Django's executor returns a state that still has it).
    assert "context_bytes_bound" not in state.models["sessions_app", "session"].fields
    assert "context_bytes_bound" not in [
        column.name for column in connection.introspection.get_table_description(
            connection.cursor(), "sessions_app_session"
        )
    ]  # fmt: skip
