"""Consolidation of one agent, asked for through the API or the command, is recorded as a consolidation
run of its project like the nightly job's, and shown on the maintenance page in its own words."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from vault import selectors, services
from vault.models import CompactionRun

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


def runs():
    return list(CompactionRun.objects.filter(kind="consolidation").order_by("pk"))


def test_a_consolidation_through_the_api_is_recorded(two_days_of_notes, api, admin_token, client_a):
    """POST /agents/{agent}/consolidate only returned its result: the maintenance page, where curators
    see what consolidation did, never showed it."""
    body = api.post("/agents/agent-a/consolidate", token=admin_token).json()
    assert body["updated"] is True
    [run] = runs()
    assert run.trigger == "api" and run.project.slug == "acme"
    assert run.counts == {"agents": 1, "updated": 1, "refused": 0, "failed": 0}
    [change] = run.changes
    assert (change["action"], change["target"], change["reason"]) == ("updated", "agent-a", body["reason"])
    page = client_a.get("/projects/acme/maintenance/").content.decode()
    assert f"#{run.pk}</a>" in page and "Consolidation" in page and "updated 1" in page


def test_a_consolidation_by_the_command_is_recorded(two_days_of_notes, capsys):
    call_command("consolidate", "--project", "acme", "--agent", "agent-a")
    assert "agent-a: MEMORY.md updated" in capsys.readouterr().out
    [run] = runs()
    assert run.trigger == "command" and run.counts["updated"] == 1
    assert run.changes[0]["target"] == "agent-a"


def test_a_single_agent_run_that_fails_is_recorded_as_failed(two_days_of_notes, api, admin_token, settings):
    """The merge taking MEMORY.md over MEMORY_MAX_ENTRY_BYTES is answered 413 (the command exits 1),
    and the run says so, as the nightly job's does."""
    settings.MEMORY_MAX_ENTRY_BYTES = 64
    response = api.post("/agents/agent-a/consolidate", token=admin_token)
    assert response.status_code == 413, response.content
    with pytest.raises(CommandError, match="agent-a: MEMORY.md not consolidated"):
        call_command("consolidate", "--project", "acme", "--agent", "agent-a")
    assert [(run.trigger, run.counts["failed"]) for run in runs()] == [("api", 1), ("command", 1)]
    assert "TooLarge" in runs()[0].changes[0]["reason"]


def test_a_consolidation_that_changes_nothing_says_so_in_its_own_words(
    two_days_of_notes, api, admin_token, client_a
):
    """The run page of a consolidation with no change said "the project is within its limits",
    compaction's words, which say nothing about MEMORY.md."""
    api.post("/agents/agent-a/consolidate", token=admin_token)
    api.post("/agents/agent-a/consolidate", token=admin_token)  # nothing left to add
    run = runs()[-1]
    assert run.changes == [] and run.counts["agents"] == 1
    page = client_a.get(f"/projects/acme/maintenance/runs/{run.pk}/").content.decode()
    assert "within its limits" not in page
    assert "Nothing changed: no agent's MEMORY.md needed a change." in page


def test_agents_a_stopped_nightly_run_did_not_reach_are_consolidated_first_next_time(project, monkeypatch):
    """The nightly task over many agents can outlast Q_TIMEOUT (a local model taking a minute an agent):
    django-q2 kills it, and the next night started again from the first agent, so the agents after
    where it was stopped were never consolidated, and no run was recorded."""
    from vault import tasks
    from vault.maintenance import consolidation

    agents = [services.agent_ensure(project=project, slug=f"agent-{n}") for n in range(3)]
    for agent in agents:
        for days_ago in (0, 1):
            services.daily_note_append(agent=agent, when=timezone.now() - timedelta(days=days_ago),
                                       text="\n## 10:00\n- Deploys happen on Fridays\n", changed_by="t")  # fmt: skip
    real = consolidation.consolidation_run
    done = []

    def one_agent_then_killed(*, agent, now=None):
        if len(done) == 1:
            raise KeyboardInterrupt  # the worker is killed at its timeout: no handler of ours runs
        done.append(agent.slug)
        return real(agent=agent, now=now)

    monkeypatch.setattr(consolidation, "consolidation_run", one_agent_then_killed)
    for night in range(3):
        done.clear()
        with pytest.raises(KeyboardInterrupt):
            tasks.consolidation_scheduled()
        assert len(runs()) == night + 1  # recorded as it went: the agent it did, and that it stopped
        run = runs()[-1]
        assert [change["target"] for change in run.changes] == done
        assert any("did not finish" in note for note in run.notes), run.notes
    memory = {a.slug: selectors.file_content(a.pk, "MEMORY.md") or "" for a in agents}
    assert all("Deploys happen on Fridays" in content for content in memory.values()), memory
