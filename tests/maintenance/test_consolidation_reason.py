"""A model's "reason" is stored in the consolidation run's record (jsonb): what PostgreSQL cannot store
there, or a reason of any length, must not fail the run nor bloat its record."""

import pytest

from vault import selectors
from vault.maintenance.consolidation import consolidation_run_all
from vault.models import CompactionRun

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("reason", ["merged\x00 the notes", "merged \ud800 the notes", "x" * 100_000])
def test_a_reason_postgresql_cannot_store_or_too_long_is_recorded_cut(
    two_days_of_notes, fake_llm, api, admin_token, reason
):
    fake_llm.reply_json(
        {
            "should_update": True,
            "reason": reason,
            "memory_content": "# MEMORY.md\n- Deploys happen on Fridays",
        }
    )
    response = api.post("/agents/agent-a/consolidate", token=admin_token)
    assert response.status_code == 200, response.content
    assert response.json()["updated"] is True
    assert "Deploys happen on Fridays" in selectors.file_content(two_days_of_notes.pk, "MEMORY.md")
    [run] = CompactionRun.objects.filter(kind="consolidation")
    assert run.counts["updated"] == 1
    assert len(run.changes[0]["reason"]) <= 600 and "\x00" not in run.changes[0]["reason"]


@pytest.mark.parametrize("reason", ["merged\x00 the notes", "merged \ud800 the notes"])
def test_the_nightly_run_records_such_a_reason(two_days_of_notes, fake_llm, reason):
    fake_llm.reply_json(
        {
            "should_update": True,
            "reason": reason,
            "memory_content": "# MEMORY.md\n- Deploys happen on Fridays",
        }
    )
    [result] = consolidation_run_all()
    assert result["updated"] is True
    [run] = CompactionRun.objects.filter(kind="consolidation")
    assert run.counts["updated"] == 1 and run.notes == []


def test_a_model_that_fails_is_noted_in_the_run(two_days_of_notes, fake_llm):
    """A configured model that failed every night (down, 500s, answers not usable) left the nightly
    run's record saying only "updated": the deterministic merge ran in its place, and only a log line
    said so. The run's record now notes it, agent by agent, where curators read the runs."""
    fake_llm.reply_raw('{"error": "overloaded"}', status=500)
    [result] = consolidation_run_all()
    assert result["used"] == "heuristic" and "HTTP 500" in result["llm_error"]
    [run] = CompactionRun.objects.filter(kind="consolidation")
    [note] = run.notes
    assert note.startswith("agent-a: the model's answer was not used") and "HTTP 500" in note
