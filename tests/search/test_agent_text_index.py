"""Per-agent GIN indexes of the largest agents' search vectors (search/agent_text_index.py): built for
an agent above MEMORY_SEARCH_AGENT_INDEX_ROWS rows, dropped below half of it, used by that agent's
searches (which name the agent as a literal), and never changing a result."""

from io import StringIO

import psycopg
import pytest
import time_machine
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from django_q.models import Schedule

from search import agent_text_index, ranking, tasks

pytestmark = pytest.mark.django_db


def _index_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'vaultentry_search_gin_a%'"
            " OR indexname LIKE 'message_search_gin_a%'"
        )
        return {name for (name,) in cursor.fetchall()}


def _ensure() -> dict:
    """The hourly job, inside the test's transaction: its deferred foreign-key checks run first (an
    index cannot be built on a table with pending trigger events; the job itself runs outside any
    transaction and builds CONCURRENTLY)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    return tasks.agent_text_indexes_scheduled()


def _search(api, token, q, **query):
    return api.get("/search", q=q, mode="lexical", token=token, **query).json()["results"]


def test_a_large_agent_gets_an_index_of_its_own_that_its_searches_use(
    api, token_a, token_b, agent_a, agent_b, make_entry, make_message, settings, monkeypatch
):
    settings.MEMORY_SEARCH_AGENT_INDEX_ROWS = 6
    for i in range(8):
        make_entry(agent_a, f"kafka consumer lag note {i}: the retention window")
        make_message(agent_a, f"message {i} about kafka partitions")
    make_entry(agent_b, "kafka at agent b")
    # Both searches run at the same instant: a score's recency factor moves with the clock (its sixth
    # decimal within seconds on a loaded machine), and the comparison is of the plans, not of time.
    instant = timezone.now()
    with time_machine.travel(instant, tick=False):
        before = {
            q: _search(api, token_a, q, kinds="entries,messages") for q in ("kafka", "retention window")
        }

    done = _ensure()
    assert done["vault_vaultentry"]["built"] == [agent_a.pk]
    assert done["sessions_app_message"]["built"] == [agent_a.pk]
    assert _index_names() == {f"vaultentry_search_gin_a{agent_a.pk}", f"message_search_gin_a{agent_a.pk}"}
    assert _ensure()["vault_vaultentry"]["built"] == []  # already there

    statements = []
    fetch = ranking._fetch

    def recorded(sql, params):
        statements.append((sql, dict(params)))
        return fetch(sql, params)

    monkeypatch.setattr(ranking, "_fetch", recorded)
    monkeypatch.setattr("search.selectors._fetch", recorded)
    with time_machine.travel(instant, tick=False):
        after = {q: _search(api, token_a, q, kinds="entries,messages") for q in ("kafka", "retention window")}
    assert after == before  # the clause repeats the scope: the same results, in the same order
    entry_sql, params = next((s, p) for s, p in statements if "FROM vault_vaultentry" in s and "%(df0)s" in s)
    assert f"agent_id + 0 = {agent_a.pk}" in entry_sql
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + entry_sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"vaultentry_search_gin_a{agent_a.pk}" in plan
    # Agent B has no index of its own: its search names no agent.
    statements.clear()
    assert _search(api, token_b, "kafka", kinds="entries")
    assert statements and not any(f"agent_id + 0 = {agent_b.pk}" in sql for sql, _ in statements)


def test_the_index_goes_when_the_agent_falls_below_half_the_size(agent_a, make_entry, settings):
    settings.MEMORY_SEARCH_AGENT_INDEX_ROWS = 6
    entries = [make_entry(agent_a, f"note {i}") for i in range(7)]
    _ensure()
    assert f"vaultentry_search_gin_a{agent_a.pk}" in _index_names()
    for entry in entries[:3]:
        entry.delete()  # 4 left: above half of 6, kept
    assert _ensure()["vault_vaultentry"]["dropped"] == []
    entries[3].delete()
    entries[4].delete()  # 2 left
    assert _ensure()["vault_vaultentry"]["dropped"] == [agent_a.pk]
    assert _index_names() == set()
    assert agent_text_index.agent_clause("vault_vaultentry", [agent_a.pk]) is None


def test_zero_turns_the_indexes_off(agent_a, make_entry, settings):
    settings.MEMORY_SEARCH_AGENT_INDEX_ROWS = 2
    for i in range(3):
        make_entry(agent_a, f"note {i}")
    _ensure()
    assert _index_names()
    settings.MEMORY_SEARCH_AGENT_INDEX_ROWS = 0
    _ensure()
    assert _index_names() == set()


def test_the_index_job_is_scheduled():
    call_command("setup_schedules", stdout=StringIO())
    schedule = Schedule.objects.get(name="search: per-agent text indexes")
    assert schedule.func == "search.tasks.agent_text_indexes_scheduled"
    assert schedule.schedule_type == Schedule.HOURLY
