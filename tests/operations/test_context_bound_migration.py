"""sessions_app 0015: the sessions stored before it get the running size bound the append keeps, the
bytes of their messages not archived (text and tool calls) and 8 a message."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.operations.plan_state import plan_state_reach

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("sessions_app", "0014_future_dates_clamped")


def test_an_upgrade_fills_every_sessions_bound(migrator):
    old = plan_state_reach(migrator, [BEFORE])
    Project = old.apps.get_model("vault", "Project")
    Agent = old.apps.get_model("vault", "Agent")
    Session = old.apps.get_model("sessions_app", "Session")
    Message = old.apps.get_model("sessions_app", "Message")
    project = Project.objects.create(slug="acme", name="Acme")
    agent = Agent.objects.create(project=project, slug="dev")
    talked, empty = (Session.objects.create(project=project, agent=agent) for _ in range(2))
    rows = [
        ("héllo", [], False),
        ("x" * 100, [], True),
        ("", [{"name": "run", "arguments": {"n": 1}}], False),
    ]
    for text, tool_calls, archived in rows:
        Message.objects.create(
            project=project, agent=agent, session=talked, role="user", text=text, tool_calls=tool_calls,
            archived=archived, created_at=timezone.now(),
        )  # fmt: skip
    migrator.apply_tested_migration(MigrationExecutor(connection).loader.graph.leaf_nodes())
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, context_bytes_bound FROM sessions_app_session")
        bounds = dict(cursor.fetchall())
    tool_calls = len('[{"name": "run", "arguments": {"n": 1}}]')
    assert bounds == {talked.pk: (6 + 2 + 8) + (0 + tool_calls + 8), empty.pk: 0}
