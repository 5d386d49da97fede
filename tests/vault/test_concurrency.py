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
