"""sessions_app 0014 and vault 0024: rows dated after the upgrade (stored before a date to come was
stored as the time it was received) get the upgrade's time; every other date is left as it was."""

from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from sessions_app import services as session_services
from sessions_app.models import Message, Session
from tests.operations.plan_state import plan_state_reach
from vault import services
from vault.models import VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("sessions_app", "0013_reply_to_text_unicode_whitespace"), ("vault", "0023_sessionmark_facts")]
FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
PAST = datetime(2020, 1, 1, tzinfo=UTC)


def test_an_upgrade_brings_dates_to_come_back_to_its_own_time(migrator):
    plan_state_reach(migrator, BEFORE)  # these two change no schema: today's services write,
    # given the one column added since (sessions_app 0015), taken away again before the upgrade.
    # The migrator applies the whole plan up to its last target, which may hold the other app's next one.
    for app, name in BEFORE:
        call_command("migrate", app, name, verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE sessions_app_session ADD COLUMN context_bytes_bound bigint")
    project = services.project_create(slug="acme", name="Acme")
    agent = services.agent_ensure(project=project, slug="dev")
    texts = [{"role": "user", "text": "later"}, {"role": "assistant", "text": "earlier"}]
    session = session_services.messages_append(agent=agent, messages=texts, session_key="s").session
    entry = services.entry_create(agent=agent, category="lessons", content="Deploys wait for Monday")
    later, earlier = Message.objects.filter(session=session).order_by("id")
    Message.objects.filter(pk=later.pk).update(created_at=FUTURE)
    Message.objects.filter(pk=earlier.pk).update(created_at=PAST)
    Session.objects.filter(pk=session.pk).update(last_activity_at=FUTURE, created_at=PAST, closed_at=None)
    VaultEntry.objects.filter(pk=entry.pk).update(created_at=FUTURE, updated_at=FUTURE, last_accessed_at=None)
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE sessions_app_session DROP COLUMN context_bytes_bound")
    started = timezone.now()
    migrator.apply_tested_migration(MigrationExecutor(connection).loader.graph.leaf_nodes())
    finished = timezone.now()

    assert started <= Message.objects.get(pk=later.pk).created_at <= finished
    assert Message.objects.get(pk=earlier.pk).created_at == PAST
    session = Session.objects.get(pk=session.pk)
    assert started <= session.last_activity_at <= finished
    assert (session.created_at, session.closed_at) == (PAST, None)
    entry = VaultEntry.objects.get(pk=entry.pk)
    assert started <= entry.created_at <= finished and started <= entry.updated_at <= finished
    assert entry.last_accessed_at is None
