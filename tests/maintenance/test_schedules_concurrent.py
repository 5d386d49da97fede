"""Schedules applied by two hosts starting at once (README, Running on several hosts)."""

import threading

import pytest
from django.db import connection, transaction
from django_q.models import Schedule

from memoryproject.schedules import schedules_apply, schedules_declared

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_leaves_one_schedule_of_each_kind_when_two_hosts_apply_them_at_once():
    out = {}

    def other_host():
        try:
            out["result"] = schedules_apply()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            out["error"] = exc
        finally:
            connection.close()

    with transaction.atomic():
        schedules_apply()
        thread = threading.Thread(target=other_host)
        thread.start()
        thread.join(2)  # the other host either waits for this one or has run to its end
    thread.join(10)
    assert not thread.is_alive() and "error" not in out, out
    for spec in schedules_declared():
        assert Schedule.objects.filter(name=spec["name"]).count() == 1, spec["name"]
