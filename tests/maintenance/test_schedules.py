import pytest
from django.core.management import call_command
from django.test import Client
from django_q.models import Schedule

from memoryproject import tasks
from memoryproject.schedules import schedules_declared
from tests.maintenance.conftest import session_make
from vault.models import CompactionRun, DeletionAudit

pytestmark = pytest.mark.django_db


def test_setup_schedules_twice_leaves_one_row_per_schedule(settings):
    call_command("setup_schedules")
    call_command("setup_schedules")
    names = [s["name"] for s in schedules_declared()]
    for name in names:
        assert Schedule.objects.filter(name=name).count() == 1
    compaction = Schedule.objects.get(name="vault: compaction")
    assert compaction.schedule_type == Schedule.MINUTES
    assert compaction.minutes == settings.MEMORY_COMPACT_INTERVAL_MINUTES == 10
    assert compaction.func == "memoryproject.tasks.compaction_scheduled"
    consolidation = Schedule.objects.get(name="vault: consolidation")
    assert consolidation.cron == settings.MEMORY_CONSOLIDATE_CRON == "0 2 * * *"
    assert consolidation.next_run is not None


def test_setup_schedules_says_which_schedules_it_changed():
    """Every start printed "updated" for every schedule, whether anything had changed or not."""
    from io import StringIO

    def applied() -> dict[str, str]:
        out = StringIO()
        call_command("setup_schedules", stdout=out)
        return dict(reversed(line.split(None, 1)) for line in out.getvalue().splitlines()[:-1])

    names = {s["name"] for s in schedules_declared()}
    assert applied() == dict.fromkeys(names, "created")
    assert applied() == dict.fromkeys(names, "unchanged")
    Schedule.objects.filter(name="vault: compaction").update(minutes=99)  # edited in the admin
    assert applied() == {**dict.fromkeys(names, "unchanged"), "vault: compaction": "updated"}
    assert Schedule.objects.get(name="vault: compaction").minutes == 10


def test_the_scheduled_compaction_records_one_run_per_project(agent_a, outsider_agent):
    session_make(agent_a, [f"message {i}" for i in range(25)])
    summary = tasks.compaction_scheduled()
    assert {item["project"] for item in summary} == {"acme", "globex"}
    run = CompactionRun.objects.get(project=agent_a.project)
    assert run.trigger == "schedule" and run.counts["messages_archived"] == 5


def test_admin_shows_runs_audits_and_schedules(agent_a, django_user_model):
    session_make(agent_a, [f"message {i}" for i in range(25)])
    tasks.compaction_scheduled()
    call_command("setup_schedules")
    DeletionAudit.objects.create(project=agent_a.project, kind="entry", object_id=1, reason="forget",
                                 content_sha256="0" * 64, deleted_at=CompactionRun.objects.get().started_at)  # fmt: skip
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw-long-enough")
    client = Client()
    client.force_login(user)
    run = CompactionRun.objects.get()
    assert client.get("/admin/vault/compactionrun/").status_code == 200
    page = client.get(f"/admin/vault/compactionrun/{run.pk}/change/").content.decode()
    assert "trim-session" in page and "MEMORY_CONVERSATION_KEEP" in page
    assert client.get("/admin/vault/deletionaudit/").status_code == 200
    assert "vault: compaction" in client.get("/admin/django_q/schedule/").content.decode()


def test_a_run_whose_worker_died_midway_says_so_and_what_it_did(agent_a, admin_token, api, monkeypatch):
    """A worker killed or timed out mid-run (a BaseException here: no step's failure handler sees it)
    leaves a record of the steps that finished, marked unfinished, not "nothing changed"."""
    from memoryproject import maintenance

    session_make(agent_a, [f"message {i}" for i in range(25)])

    def worker_killed(run, project, now):
        raise KeyboardInterrupt

    steps = (
        maintenance.compaction_step_trim_sessions,
        worker_killed,
        maintenance.compaction_step_propose_archive,
    )
    monkeypatch.setattr(maintenance, "COMPACTION_STEPS", steps)
    with pytest.raises(KeyboardInterrupt):
        tasks.compaction_scheduled()
    last = api.get("/maintenance/compact", token=admin_token).json()
    assert last["counts"]["messages_archived"] == 5
    assert [change["action"] for change in last["changes"]] == ["trim-session"]
    assert any("did not finish" in note for note in last["notes"]), last["notes"]
    monkeypatch.undo()
    tasks.compaction_scheduled()  # the next run finishes and says nothing of the earlier one
    last = api.get("/maintenance/compact", token=admin_token).json()
    assert not any("did not finish" in note for note in last["notes"]), last["notes"]


def test_last_nights_jobs_results_outlive_a_day_of_the_every_minute_jobs():
    """django-q2 keeps the last 250 successful tasks: the daily-note writer and the embedding refresh,
    every minute each, had pushed the nightly consolidation's and retention's results out of the admin
    (Background jobs: Successful tasks) two hours after they ran. Each schedule keeps its own 250."""
    from django.utils import timezone
    from django_q.brokers import get_broker
    from django_q.models import Success
    from django_q.monitor import save_task

    broker = get_broker()

    def finished(n: int, name: str, func: str) -> None:
        now = timezone.now()
        save_task({"id": f"{n:032x}", "name": f"task-{n}", "func": func, "args": (), "kwargs": {},
                   "group": name, "started": now, "stopped": now, "result": 1, "success": True, "sync": True}, broker)  # fmt: skip

    finished(0, "vault: consolidation", "vault.tasks.consolidation_scheduled")
    for n in range(1, 262):
        finished(n, "vault: write queued daily-note exchanges", "vault.tasks.daily_notes_flush_scheduled")
    assert Success.objects.filter(group="vault: consolidation").exists()
