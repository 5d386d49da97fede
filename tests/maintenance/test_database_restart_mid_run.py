"""The database restarting (or dropping the job's connection) in the middle of a scheduled run: the
connection left broken was used for every later agent or session of the run, and each failed."""

from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from vault import services
from vault.maintenance import consolidation
from vault.models import AgentMaintenance, WorkspaceFile

pytestmark = pytest.mark.django_db(transaction=True)


def _connection_dropped() -> None:
    """What a restart of the database does to the job's connection: the server ends it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_a_consolidation_run_goes_on_with_a_new_connection_after_the_database_dropped_it(
    agent_a, agent_b, monkeypatch
):
    for agent in (agent_a, agent_b):
        for days_ago in (0, 2):
            services.daily_note_append(agent=agent, when=timezone.now() - timedelta(days=days_ago),
                                       text=f"\n## 10:00\n- {agent.slug} deploys on Fridays\n", changed_by="t")  # fmt: skip
    real = consolidation.consolidation_run

    def dropped_on_a(*, agent, now=None):
        if agent.pk == agent_a.pk:
            _connection_dropped()
        return real(agent=agent, now=now)

    monkeypatch.setattr(consolidation, "consolidation_run", dropped_on_a)
    results = {result["agent"]: result for result in consolidation.consolidation_run_all()}
    assert "error" in results[agent_a.slug]
    assert results[agent_b.slug]["updated"], results[agent_b.slug]
    memory = WorkspaceFile.objects.get(agent=agent_b, path="MEMORY.md").content
    assert "agent-b deploys on Fridays" in memory
    assert AgentMaintenance.objects.get(agent=agent_a).consolidation_failures == 1
