"""The nightly consolidation with an agent whose consolidation never ends within Q_TIMEOUT (a slow
model, a low Q_TIMEOUT): the agents after it were never reached, night after night. Each run now makes
progress for the others, and /healthz names the agent that keeps failing."""

import json
import urllib.error
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.exceptions import TimeoutException

from memoryproject import jobs_health, llm
from tests.memoryproject.test_llm_deadline import Clock
from vault import services
from vault.maintenance import consolidation
from vault.models import AgentMaintenance, CompactionRun, WorkspaceFile
from vault.tasks import consolidation_scheduled

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_health():
    jobs_health.jobs_status_cache_clear()


def _notes(*agents):
    for agent in agents:
        for days_ago in (0, 2):
            services.daily_note_append(
                agent=agent,
                when=timezone.now() - timedelta(days=days_ago),
                text=f"\n## 10:00\n- {agent.slug} deploys on Fridays\n",
                changed_by="t",
            )


def _memory(agent) -> str | None:
    file = WorkspaceFile.objects.filter(agent=agent, path="MEMORY.md").first()
    return file.content if file else None


def test_an_agent_whose_consolidation_is_killed_every_night_does_not_starve_the_others(
    agent_a, agent_b, api, monkeypatch
):
    """Agent A goes first (never consolidated, lower id) and its worker is killed by Q_TIMEOUT on it
    every time: B, after it, was never consolidated. The next run takes the agents tried longest ago
    first, A after B, and /healthz names A (failed before: B never consolidated, nothing named)."""
    _notes(agent_a, agent_b)
    real = consolidation.consolidation_run

    def timed_out_on_a(*, agent, now=None):
        if agent.pk == agent_a.pk:
            raise TimeoutException("Task exceeded maximum timeout value (300 seconds)")
        return real(agent=agent, now=now)

    monkeypatch.setattr(consolidation, "consolidation_run", timed_out_on_a)
    for _night in range(2):
        with pytest.raises(TimeoutException):
            consolidation_scheduled()
    assert "deploys on Fridays" in (_memory(agent_b) or "")
    state = AgentMaintenance.objects.get(agent=agent_a)
    assert state.consolidation_failures >= 1 and "killed or timed out" in state.consolidation_failure
    jobs = api.get("/healthz").json()["jobs"]
    assert jobs["agents_failing"] == 1
    [named] = jobs["agents_failing_listed"]
    assert named.startswith(f"{agent_a.slug} of {agent_a.project.slug}: consolidation failed")


def test_a_model_too_slow_for_one_agent_leaves_time_for_the_next(agent_a, agent_b, settings, monkeypatch):
    """A model that never answers for agent A: its one call waited LLM_TIMEOUT_SECONDS (600 s), past
    Q_TIMEOUT (120 s), and the task was killed before B. A's calls now get half the task's time, A falls
    back to the deterministic merge, and B's model answer is used, all within Q_TIMEOUT (failed before:
    600 s on the clock). The clock is the LLM client's, moved by the timeouts: nothing waits for real."""
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:9/v1", "test-model"
    settings.LLM_TIMEOUT_SECONDS, settings.LLM_MAX_RETRIES = 600, 0
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 120, "sync": False}
    clock = Clock()
    monkeypatch.setattr(llm, "time", clock)
    started = clock.now
    _notes(agent_a, agent_b)

    def model(url, body, headers, timeout):
        prompt = json.loads(body)["messages"][1]["content"]
        if agent_a.slug in prompt.split("deploys")[0]:  # A's prompt: the model never answers
            clock.now += timeout
            raise urllib.error.URLError(TimeoutError("timed out"))
        answer = {
            "should_update": True,
            "reason": "r",
            "memory_content": "# MEMORY.md\n- B deploys on Fridays",
        }
        return {"choices": [{"message": {"content": json.dumps(answer)}, "finish_reason": "stop"}]}

    monkeypatch.setattr(llm, "_post", model)
    results = {result["agent"]: result for result in consolidation_scheduled()}
    assert clock.now - started < 120
    assert "no answer within 54" in results[agent_a.slug]["llm_error"]
    assert results[agent_b.slug]["updated"] and "llm_error" not in results[agent_b.slug]
    assert _memory(agent_b) == "# MEMORY.md\n- B deploys on Fridays\n"
    assert AgentMaintenance.objects.get(agent=agent_a).consolidation_failures == 1
    assert AgentMaintenance.objects.get(agent=agent_b).consolidation_failures == 0


def test_agents_left_when_the_time_is_up_are_noted_and_go_first_next_time(
    agent_a, agent_b, settings, monkeypatch
):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 120, "sync": False}
    clock = Clock()
    monkeypatch.setattr(llm, "time", clock)
    _notes(agent_a, agent_b)
    real = consolidation.consolidation_run

    def slow(*, agent, now=None):
        clock.now += 100  # a slow database, say: all the task's time but AGENT_MIN_SECONDS
        return real(agent=agent, now=now)

    monkeypatch.setattr(consolidation, "consolidation_run", slow)
    [result] = consolidation_scheduled()
    assert result["agent"] == agent_a.slug
    run = CompactionRun.objects.get(kind="consolidation")
    assert any(note.startswith("not reached") and agent_b.slug in note for note in run.notes), run.notes
    assert [agent.pk for agent in consolidation._agents_ordered(None)] == [agent_b.pk, agent_a.pk]


def test_an_agent_no_longer_consolidated_is_not_named_failing_for_ever(agent_a, api):
    AgentMaintenance.objects.create(
        agent=agent_a,
        consolidation_failures=2,
        consolidation_failure="boom",
        consolidation_started_at=timezone.now() - timedelta(days=3),
        consolidation_ended_at=timezone.now() - timedelta(days=3),
    )
    assert api.get("/healthz").json()["jobs"]["agents_failing"] == 0
    jobs_health.jobs_status_cache_clear()
    AgentMaintenance.objects.filter(agent=agent_a).update(consolidation_ended_at=timezone.now())
    jobs = api.get("/healthz").json()["jobs"]
    assert jobs["agents_failing_listed"] == [
        f"{agent_a.slug} of {agent_a.project.slug}: consolidation failed 2 time(s) in a row: boom"
    ]
