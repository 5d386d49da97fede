import threading
from contextlib import contextmanager

import pytest
from django.db import connection, transaction

from tests.conftest import ApiClient
from vault.models import VaultEntry


@contextmanager
def _held_in_a_transaction(action):
    """Run `action` in a transaction of another thread and keep that transaction open, its locks held,
    until the block ends; yields a list that receives the action's result. The action's failure fails
    the test once the block is left."""
    held, release, results, errors = threading.Event(), threading.Event(), [], []

    def holder():
        try:
            with transaction.atomic():
                results.append(action())
                held.set()
                release.wait(10)
        except Exception as exc:  # noqa: BLE001 - any failure fails the test
            errors.append(exc)
        finally:
            held.set()
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        yield results
    finally:
        release.set()
        thread.join()
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_ten_threads_creating_fifty_entries_each_store_exactly_500(admin_token):
    """Every thread writes to the same agent, which does not exist yet: the first writes race to create it."""
    failures = []

    def writer(n):
        api = ApiClient(admin_token)
        try:
            for i in range(50):
                response = api.post(
                    "/agents/busy-agent/entries",
                    {"category": "lessons", "content": f"thread {n} entry {i} #t{n}"},
                )
                if response.status_code != 201:
                    failures.append((n, i, response.status_code, response.content))
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert VaultEntry.objects.filter(agent__slug="busy-agent").count() == 500
    assert len(set(VaultEntry.objects.values_list("content", flat=True))) == 500


@pytest.mark.django_db(transaction=True)
def test_a_file_held_for_an_append_locks_neither_its_agent_nor_its_project(agent_a, agent_b):
    """Locking a workspace file locked its agent's and its project's rows as well (FOR UPDATE over the
    joins its default ordering brought in): every agent's daily-note append in the project waited for
    the others, and a commit's foreign-key check on the project row deadlocked with one under load
    (bench_write, 8 clients: a batch of messages answered 503)."""
    from django.db import OperationalError

    from vault import services

    services.file_append(agent=agent_a, path="notes.md", text="first", changed_by="test")
    with _held_in_a_transaction(
        lambda: services.file_append(agent=agent_a, path="notes.md", text="held", changed_by="test")
    ):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '2s'")
            for table, pk in (("vault_project", agent_a.project_id), ("vault_agent", agent_a.pk)):
                try:
                    cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE NOWAIT", [pk])
                except OperationalError as exc:
                    pytest.fail(f"{table} row {pk} is locked by another agent's file append: {exc}")
        # Another agent of the project appends meanwhile, without waiting.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '2s'")
            services.file_append(agent=agent_b, path="notes.md", text="meanwhile", changed_by="test")


@pytest.mark.django_db
def test_every_workspace_file_lock_names_the_file_table_only(agent_a):
    """The same defect in the other places that lock files (editing, the memory tool's delete and
    rename, consolidation's guarded replace): each FOR UPDATE must say OF the file table."""
    from django.test.utils import CaptureQueriesContext

    from vault import memory_tool, services
    from vault.maintenance.consolidation import file_replace_if_unchanged

    services.file_append(agent=agent_a, path="notes.md", text="first", changed_by="test")
    services.file_append(agent=agent_a, path="memories/dir/a.md", text="a", changed_by="test")
    with CaptureQueriesContext(connection) as queries:
        services.file_append(agent=agent_a, path="notes.md", text="second", changed_by="test")
        memory_tool.memory_rename(agent=agent_a, old_path="/memories/dir", new_path="/memories/moved")
        memory_tool.memory_delete(agent=agent_a, path="/memories/moved", changed_by="test")
        assert (
            file_replace_if_unchanged(agent=agent_a, path="notes.md", expected="nope", content="x") is False
        )
    locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]
    assert len(locks) >= 4
    for sql in locks:
        assert 'FOR UPDATE OF "vault_workspacefile"' in sql, sql


def test_an_import_does_not_count_as_created_an_entry_a_concurrent_import_stored_first(agent_a):
    """Two imports of one source: the entry the other import stored between this one's check and its
    batched INSERT was skipped by the unique (agent, legacy_id) constraint, and yet counted as created
    here (bulk_create with ignore_conflicts says nothing of the rows it left out)."""
    from datetime import UTC, datetime

    from vault import services
    from vault.transfer.common import EntryItem, ImportReport
    from vault.transfer.writer import Importer

    report = ImportReport()
    importer = Importer(project=agent_a.project, report=report, default_agent=agent_a.slug)
    at = datetime(2026, 3, 1, tzinfo=UTC)
    for n in (1, 2):
        item = EntryItem(category="lessons", content=f"lesson {n}", created_at=at, legacy_id=f"src-{n}")
        assert importer.entry_add(agent_a, item, where="x")
    other = services.entry_create(agent=agent_a, category="lessons", content="lesson 1", created_by="t")
    VaultEntry.objects.filter(pk=other.pk).update(
        legacy_id="src-1"
    )  # the other import's row, committed first
    importer.flush()
    assert VaultEntry.objects.filter(agent=agent_a, legacy_id__in=["src-1", "src-2"]).count() == 2
    assert report.counts["entries created (lessons)"] == 1
    assert report.counts["entries already imported (skipped)"] == 1


@pytest.mark.django_db(transaction=True)
def test_the_loser_of_two_supersedes_of_one_entry_is_told_which_entry_won(agent_a, token_a):
    """Two writers supersede the same entry at once: the second waits for the first's lock on it, and
    is answered 409 naming the entry that superseded it (it was 'another entry': the agent could not
    tell which one to supersede instead)."""
    from vault import services

    old = services.entry_create(agent=agent_a, category="decisions", content="We deploy on Fridays")
    answers = []

    def second():
        try:
            body = {"category": "decisions", "content": "We deploy on Tuesdays now", "supersedes": old.pk}
            answers.append(ApiClient(token_a).post("/agents/agent-a/entries", body))
        finally:
            connection.close()

    loser = threading.Thread(target=second)
    with _held_in_a_transaction(
        lambda: (
            services.entry_create(
                agent=agent_a, category="decisions", content="We deploy on Mondays now", supersedes_id=old.pk
            ).pk
        )
    ) as won:
        loser.start()
        loser.join(1.0)
        assert loser.is_alive()  # waiting for the first writer's lock on the entry
    loser.join()
    (response,) = answers
    assert response.status_code == 409, response.content
    assert f"Entry {old.pk} is already superseded by entry {won[0]}" in response.json()["detail"]
    assert response.json()["errors"] == [
        {"loc": ["supersedes"], "msg": f"already superseded by entry {won[0]}"}
    ]
    assert VaultEntry.objects.filter(supersedes_id=old.pk).count() == 1
