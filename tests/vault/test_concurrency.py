import threading

import pytest
from django.db import connection

from tests.conftest import ApiClient
from vault.models import VaultEntry


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
    from django.db import OperationalError, transaction

    from vault import services

    services.file_append(agent=agent_a, path="notes.md", text="first", changed_by="test")
    held, release, errors = threading.Event(), threading.Event(), []

    def holder():
        try:
            with transaction.atomic():
                services.file_append(agent=agent_a, path="notes.md", text="held", changed_by="test")
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
    finally:
        release.set()
        thread.join()
    assert errors == []
