"""sessions_app 0016: the session archives stored before it list the ids of the messages they hold,
read from their payloads, as an archive made today does."""

import json
import zlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.operations.plan_state import plan_state_reach

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("sessions_app", "0015_session_context_bytes_bound")


def test_an_upgrade_lists_the_ids_each_archive_holds(migrator):
    old = plan_state_reach(migrator, [BEFORE])
    Project = old.apps.get_model("vault", "Project")
    Agent = old.apps.get_model("vault", "Agent")
    Session = old.apps.get_model("sessions_app", "Session")
    SessionArchive = old.apps.get_model("sessions_app", "SessionArchive")
    project = Project.objects.create(slug="acme", name="Acme")
    agent = Agent.objects.create(project=project, slug="dev")
    archives = {}
    for ids in ([7, 9], []):
        session = Session.objects.create(project=project, agent=agent, status="archived")
        payload = {"version": 1, "status": "idle", "messages": [{"id": i} for i in ids], "branches": {}}
        archives[SessionArchive.objects.create(
            project=project, agent=agent, session=session, archived_at=timezone.now(),
            payload=zlib.compress(json.dumps(payload).encode("utf-8")),
        ).pk] = ids  # fmt: skip
    migrator.apply_tested_migration(MigrationExecutor(connection).loader.graph.leaf_nodes())
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, message_ids FROM sessions_app_sessionarchive")
        assert dict(cursor.fetchall()) == archives
        # Their messages carry no dates (an older payload): sessions_app 0017 makes the archive that
        # holds some span all time up to its archiving, so that a forget by time range looks inside
        # (it stopped the upgrade with a KeyError); the empty one has no span.
        cursor.execute(
            "SELECT message_ids, first_message_at, last_message_at FROM sessions_app_sessionarchive"
        )
        spans = {tuple(ids): (first, last) for ids, first, last in cursor.fetchall()}
    assert spans[()] == (None, None)
    first, last = spans[(7, 9)]
    assert first.year == 1 and last is not None and last <= timezone.now()
