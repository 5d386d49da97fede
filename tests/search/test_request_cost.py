"""What a search request costs the web server: work done per request that the same answer needs less of."""

import pytest
from django.db.backends.postgresql import psycopg_any

from search.selectors import SearchFilters, SearchScope, search_run
from vault.models import VaultEntry

pytestmark = pytest.mark.django_db


def test_it_reads_the_pages_times_with_psycopgs_loader_not_djangos(agent_a, make_entry, monkeypatch):
    """Django's timestamptz loader is a Python subclass of psycopg's (its `load` then sets the time
    zone already there): about 5 us a value, two a result. The ranking statements read them with
    psycopg's own loader (in C); the times are the same, in UTC."""
    loaded = []
    django_load = psycopg_any.BaseTzLoader.load
    monkeypatch.setattr(
        psycopg_any.BaseTzLoader, "load", lambda self, data: loaded.append(data) or django_load(self, data)
    )
    for i in range(3):
        make_entry(agent_a, f"We chose Kafka for the event bus, part {i}.")
    loaded.clear()
    outcome = search_run(
        q="kafka",
        scope=SearchScope(agent_a.project_id, [agent_a.pk]),
        filters=SearchFilters(kinds=("entries",)),
    )
    assert len(outcome.results) == 3
    assert loaded == []
    stored = {e.pk: (e.created_at, e.updated_at) for e in VaultEntry.objects.filter(agent=agent_a)}
    for row in outcome.results:
        assert (row["created_at"], row["updated_at"]) == stored[row["id"]]
        assert row["created_at"].utcoffset().total_seconds() == 0
