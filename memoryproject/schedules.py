"""Schedules are declared in code, as a SCHEDULES list in each app's tasks.py, and applied by
`setup_schedules` (never from AppConfig.ready()), so that what runs is reviewed like code."""

import importlib

from django.apps import apps
from django.db import connection, transaction
from django_q.models import Schedule

OUR_APPS = ("memoryproject", "vault", "sessions_app", "search")
# pg_advisory_xact_lock key ("sched" in ASCII): hosts starting at once apply the schedules in turn.
SCHEDULES_LOCK = 0x7363686564


def schedules_declared() -> list[dict]:
    declared = []
    for label in OUR_APPS:
        if not apps.is_installed(label):
            continue
        try:
            module = importlib.import_module(f"{label}.tasks")
        except ModuleNotFoundError as exc:
            if exc.name != f"{label}.tasks":
                raise
            continue
        declared.extend(getattr(module, "SCHEDULES", []))
    return declared


@transaction.atomic
def schedules_apply() -> list[tuple[str, str]]:
    """Create or update every declared schedule by name; never duplicates. Returns (name, action):
    created, updated (a field differed from the declaration: a setting changed, an edit in the admin)
    or unchanged.

    Hosts started at once (README, Running on several hosts) take turns: a schedule has no unique
    name in django-q2, so two of them that both found none would each create it, and every job would
    run twice until the next start."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEDULES_LOCK])
    results = []
    for spec in schedules_declared():
        spec = dict(spec)
        name = spec.pop("name")
        existing = Schedule.objects.filter(name=name).order_by("pk")
        if existing.count() > 1:
            existing.exclude(pk=existing.first().pk).delete()
        current = existing.first()
        if current is None:
            Schedule.objects.create(name=name, **spec)
            results.append((name, "created"))
        elif any(getattr(current, field) != value for field, value in spec.items()):
            for field, value in spec.items():
                setattr(current, field, value)
            current.save()
            results.append((name, "updated"))
        else:  # said "updated" on every run, as if the settings had changed
            results.append((name, "unchanged"))
    return results
