"""bench_write's in-process mode: what the checks add to entry_create, at any corpus size."""

import io

import pytest
from django.core.management import call_command

from vault.models import Agent, VaultEntry


@pytest.mark.django_db
def test_a_corpus_smaller_than_its_agents_still_measures_every_probe():
    # 20 entries name fewer than the 50 agents the probes write for (it raised KeyError).
    out = io.StringIO()
    call_command("bench_write", entries=20, writes=10, keep=True, stdout=out)
    report = out.getvalue()
    assert "writes measured: 10 at 20 existing entries" in report
    assert "added by the checks" in report
    project_entries = VaultEntry.objects.filter(project__slug="bench-write")
    assert project_entries.count() == 20 + 2 * 10  # the corpus, then each probe checked and bare
    assert Agent.objects.filter(project__slug="bench-write").count() <= 50
