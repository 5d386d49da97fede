import logging
import threading
from datetime import datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone
from django_q.models import Schedule

from memoryproject.llm import prompt_tokens
from sessions_app.maintenance.extraction import extraction_enqueue, extraction_perform
from sessions_app.models import Message
from tests.maintenance.conftest import session_make
from vault import services
from vault.models import VaultEntry, WorkspaceFile, WorkspaceFileVersion

pytestmark = pytest.mark.django_db

CONVERSATION = [
    "Hi, I'm Sardor and I work on the payments API.",
    "Nice to meet you. We decided to use PostgreSQL for the ledger tables.",
    "Please remember that my email is sardor@example.com for reports.",
    "Noted. I learned that the ledger needs idempotency keys on every write.",
]

KAFKA_CONVERSATION = [
    "We need to pick a queue for the billing events today.",
    "We decided to use Kafka for the billing events.",
    "Good, and retries should back off exponentially please.",
    "I learned that the consumer must commit offsets after the write.",
]


def run(agent, session, trigger="web"):
    return extraction_perform(agent_id=agent.pk, session_id=session.pk, trigger_source=trigger)


def daily(agent):
    return WorkspaceFile.objects.get(agent=agent, path__startswith="memory/").content


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


def test_it_skips_short_conversations(agent_a):
    session = session_make(agent_a, CONVERSATION[:3])
    assert run(agent_a, session) == {"status": "skipped", "reason": "3 message(s), fewer than 4"}


def test_it_skips_when_the_last_user_message_is_short(agent_a):
    session = session_make(agent_a, CONVERSATION + ["ok thx", "You're welcome."])
    assert "last user message is under 10" in run(agent_a, session)["reason"]


def test_it_skips_conversations_started_by_a_schedule(agent_a):
    session = session_make(agent_a, CONVERSATION)
    assert run(agent_a, session, trigger="cron")["reason"] == "conversation triggered by a schedule"
    assert not VaultEntry.objects.exists()


def test_heuristics_write_entries_and_the_daily_note(agent_a):
    session = session_make(agent_a, CONVERSATION)
    result = run(agent_a, session)
    assert result["status"] == "done" and result["path"] == "heuristic"
    decision = VaultEntry.objects.get(category="decisions")
    assert decision.content == "Nice to meet you. We decided to use PostgreSQL for the ledger tables."
    assert decision.tags == ["auto-extract", "session-close"] and decision.source == "extraction"
    assert VaultEntry.objects.get(category="lessons").content.startswith("Noted. I learned")
    note = daily(agent_a)
    assert "- Decision: Nice to meet you. We decided to use PostgreSQL" in note
    assert "Sardor" in note
    # Redaction applies on the extraction path too.
    assert "sardor@example.com" not in note


def test_llm_path_updates_daily_note_memory_and_profile(agent_a, fake_llm):
    services.file_write(agent=agent_a, path="MEMORY.md", content="# Memory\n- old fact\n", changed_by="t")
    fake_llm.reply_json(
        {
            "should_update": True,
            "reason": "new facts",
            "daily_entry": "- Sardor chose PostgreSQL for the ledger",
            "memory_update": "# Memory\n- old fact\n- Ledger on PostgreSQL\n",
            "profile_update": "# Profile\n- Name: Sardor\n",
        },
        fenced=True,
    )
    session = session_make(agent_a, CONVERSATION)
    result = run(agent_a, session)
    assert result["path"] == "llm" and result["reason"] == "new facts"
    assert set(result["written"]) == {"MEMORY.md", "PROFILE.md", f"memory/{timezone.localdate():%Y-%m-%d}.md"}
    assert "- Sardor chose PostgreSQL for the ledger" in daily(agent_a)
    memory = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md")
    assert memory.content == "# Memory\n- old fact\n- Ledger on PostgreSQL\n"
    assert WorkspaceFileVersion.objects.filter(file=memory).first().content == "# Memory\n- old fact\n"
    profile = WorkspaceFile.objects.get(agent=agent_a, path="PROFILE.md")
    assert profile.enabled is True and profile.content == "# Profile\n- Name: Sardor\n"
    prompt = fake_llm.requests[0]["json"]["messages"][1]["content"]
    assert "User: Hi, I'm Sardor" in prompt and "- old fact" in prompt
    assert not VaultEntry.objects.exists()


def test_the_llm_rewrites_a_20_kb_memory_md_within_its_budget(agent_a, fake_llm, settings):
    """Extraction asks for the whole new MEMORY.md and PROFILE.md with LLM_MAX_TOKENS (1,000 tokens):
    with a MEMORY.md over about 4 KB the answer was cut, and the heuristics ran instead. Its budget is
    now sized from the two files; an answer cut at it still falls back."""
    current = "# Memory\n" + "".join(f"- Service {n} runs on host h{n}.example.com\n" for n in range(600))
    assert len(current) > 20 * 1024
    services.file_write(agent=agent_a, path="MEMORY.md", content=current, changed_by="t")
    answer = current + "- Ledger on PostgreSQL\n"
    fake_llm.reply_json_within_budget({"should_update": True, "reason": "ledger", "daily_entry": "- ledger",
                                       "memory_update": answer, "profile_update": ""})  # fmt: skip
    result = run(agent_a, session_make(agent_a, CONVERSATION))
    assert result["path"] == "llm" and "MEMORY.md" in result["written"], result
    assert WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content == answer
    assert fake_llm.requests[0]["json"]["max_tokens"] <= settings.LLM_REWRITE_MAX_TOKENS

    settings.LLM_REWRITE_MAX_TOKENS = 7000
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 0
    longer = answer + "".join(f"- Observation {n} of the conversation, at length\n" for n in range(400))
    fake_llm.replies.clear()
    fake_llm.reply_json_within_budget({"should_update": True, "reason": "x", "daily_entry": "- more",
                                       "memory_update": longer, "profile_update": ""})  # fmt: skip
    result = run(agent_a, session_make(agent_a, CONVERSATION, external_id="chat-2"))
    assert fake_llm.requests[-1]["json"]["max_tokens"] == 7000
    assert result["path"] == "heuristic" and "cut at max_tokens (7000)" in result["llm_error"]
    assert WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content == answer


def test_llm_saying_no_update_writes_nothing(agent_a, fake_llm):
    fake_llm.reply_json({"should_update": False, "reason": "small talk", "daily_entry": "", "memory_update": "",
                         "profile_update": ""})  # fmt: skip
    before = list(WorkspaceFile.objects.values_list("path", "content"))
    result = run(agent_a, session_make(agent_a, CONVERSATION))
    assert result["should_update"] is False and result["written"] == []
    assert list(WorkspaceFile.objects.values_list("path", "content")) == before


def test_a_malformed_llm_reply_falls_back_to_heuristics_and_logs(agent_a, fake_llm, caplog):
    fake_llm.reply('{"should_update": "maybe"}')
    with caplog.at_level(logging.WARNING, logger="sessions_app.maintenance"):
        result = run(agent_a, session_make(agent_a, CONVERSATION))
    assert result["path"] == "heuristic" and "should_update" in result["llm_error"]
    assert "falling back to heuristics" in caplog.text
    assert VaultEntry.objects.filter(category="decisions").count() == 1


def test_an_llm_update_that_cannot_be_stored_falls_back_to_heuristics(agent_a, fake_llm):
    """A reply whose memory_update a file cannot hold (NUL) failed the task with the file's 422: the
    conversation was never extracted, by the model or by the heuristics."""
    fake_llm.reply_json({"should_update": True, "reason": "x", "daily_entry": "- fine",
                         "memory_update": "# Memory\n- a\u0000b\n", "profile_update": ""})  # fmt: skip
    result = run(agent_a, session_make(agent_a, CONVERSATION))
    assert result["status"] == "done" and result["path"] == "heuristic"
    assert "memory_update" in result["llm_error"] and "NUL" in result["llm_error"]
    assert "- fine" not in daily(agent_a)
    assert VaultEntry.objects.filter(category="decisions").count() == 1


def test_cooldown_per_agent(agent_a):
    session = session_make(agent_a, CONVERSATION)
    assert run(agent_a, session)["status"] == "done"
    Message.objects.create(project_id=agent_a.project_id, agent=agent_a, session=session, role="user",
                           text="One more thing: we chose Kafka for events.", created_at=timezone.now())  # fmt: skip
    assert run(agent_a, session)["reason"].startswith("cooldown")  # deferred
    assert Schedule.objects.filter(name=f"extraction retry: session {session.pk}").count() == 1
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        assert run(agent_a, session)["status"] == "done"
    assert not Schedule.objects.filter(name__startswith="extraction retry").exists()  # done: nothing to retry
    with time_machine.travel(timezone.now() + timedelta(minutes=12)):
        assert run(agent_a, session)["reason"] == "the conversation is unchanged since its last extraction"


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_triggers_run_one_extraction(project, fake_llm):
    agent = services.agent_ensure(project=project, slug="busy")
    session = session_make(agent, CONVERSATION)
    fake_llm.reply_json({"should_update": True, "reason": "r", "daily_entry": "- one", "memory_update": "",
                         "profile_update": ""}, delay=1.5)  # fmt: skip
    results = {}

    def first():
        try:
            results["first"] = run(agent, session)
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    assert fake_llm.received.wait(10)
    results["second"] = run(agent, session)
    thread.join()
    assert results["second"]["reason"].startswith(
        "another extraction or consolidation for this agent is running"
    )
    assert results["first"]["status"] == "done"
    # The second was deferred, and the first, which extracted the same conversation, removed its retry.
    assert results["second"]["status"] == "deferred"
    assert not Schedule.objects.filter(name__startswith="extraction retry").exists()
    assert len(fake_llm.requests) == 1
    # Within the cooldown, but extracted as it is: nothing to defer.
    assert run(agent, session)["reason"] == "the conversation is unchanged since its last extraction"
    assert daily(agent).count("- one") == 1


@pytest.mark.django_db(transaction=True)
def test_a_session_whose_extraction_finds_the_agent_busy_is_extracted_later(
    project, fake_llm, settings, monkeypatch
):
    """An extraction that found the agent's job lock taken (another session's extraction waiting for the
    LLM, a consolidation) was skipped and never ran: a second session closed meanwhile was never
    extracted. It is deferred by the cooldown, as one that came a moment later would be."""
    agent = services.agent_ensure(project=project, slug="busy")
    first = session_make(agent, CONVERSATION, external_id="chat-1")
    second = session_make(agent, KAFKA_CONVERSATION, external_id="chat-2")
    fake_llm.reply_json({"should_update": True, "reason": "r", "daily_entry": "- one", "memory_update": "",
                         "profile_update": ""}, delay=1.5)  # fmt: skip
    results = {}

    def extract_first():
        try:
            results["first"] = run(agent, first)
        finally:
            connection.close()

    thread = threading.Thread(target=extract_first)
    thread.start()
    assert fake_llm.received.wait(10)
    try:
        deferred = run(agent, second, trigger="close")
    finally:
        thread.join()
    assert results["first"]["status"] == "done"
    assert deferred["status"] == "deferred"
    assert deferred["reason"].startswith("another extraction or consolidation for this agent is running")
    settings.LLM_BASE_URL = ""  # the retry runs on the heuristics
    with time_machine.travel(datetime.fromisoformat(deferred["deferred_until"]) + timedelta(seconds=1)):
        [done] = _due_tasks_run(monkeypatch)
    assert done["status"] == "done" and done["path"] == "heuristic"
    assert VaultEntry.objects.filter(category="decisions", content__contains="Kafka").count() == 1


def test_enqueue_queues_a_django_q_task_on_commit(agent_a, django_capture_on_commit_callbacks):
    from django_q.models import OrmQ

    session = session_make(agent_a, CONVERSATION)
    with django_capture_on_commit_callbacks(execute=True):
        assert extraction_enqueue(agent=agent_a, session_id=session.pk, trigger_source="web") is True
    assert OrmQ.objects.count() == 1
    task = OrmQ.objects.get().task
    assert task["func"] == "sessions_app.tasks.extraction_run"
    assert task["args"] == (agent_a.pk, session.pk, "web")
    assert extraction_enqueue(agent=agent_a, session_id=session.pk, trigger_source="cron") is False


def _due_tasks_run(monkeypatch):
    """What the cluster does when schedules fall due: the scheduler turns each due schedule into a
    queued task, and a worker runs it (here, in order, on this connection, which the scheduler would
    close first as a process of its own does)."""
    from django.utils.module_loading import import_string
    from django_q.brokers import get_broker
    from django_q.models import OrmQ
    from django_q.scheduler import scheduler

    monkeypatch.setattr("django_q.scheduler.close_old_django_connections", lambda: None)
    scheduler(broker=get_broker())
    results = []
    for queued in OrmQ.objects.order_by("id"):
        task = queued.task
        results.append(import_string(task["func"])(*task["args"]))
        queued.delete()
    return results


def test_a_session_closed_within_the_cooldown_is_extracted_when_it_ends(agent_a, settings, monkeypatch):
    """The cooldown skipped the extraction of a second session closed within it, and nothing asked for
    it again: its decisions never reached the vault. The cooldown now defers it: one retry per session,
    scheduled for when the cooldown ends, however often it is triggered meanwhile."""
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 5
    first = session_make(agent_a, CONVERSATION, external_id="chat-1")
    second = session_make(agent_a, KAFKA_CONVERSATION, external_id="chat-2")
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        assert run(agent_a, first)["status"] == "done"
    with time_machine.travel(start + timedelta(minutes=1), tick=False):
        result = run(agent_a, second, trigger="close")
        assert run(agent_a, second, trigger="quiet")["status"] == "deferred"  # triggered again: one retry
    until = start + timedelta(minutes=5)
    assert result["status"] == "deferred" and result["deferred_until"] == until.isoformat()
    assert (
        result["reason"]
        == f"cooldown: the last extraction for this agent was at {start}; deferred until {until}"
    )
    retry = Schedule.objects.get(func="sessions_app.tasks.extraction_run")
    assert retry.next_run == until and retry.schedule_type == Schedule.ONCE
    assert not VaultEntry.objects.filter(content__contains="Kafka").exists()
    with time_machine.travel(start + timedelta(minutes=4), tick=False):
        assert _due_tasks_run(monkeypatch) == []  # not due yet
    with time_machine.travel(start + timedelta(minutes=5, seconds=1), tick=False):
        [done] = _due_tasks_run(monkeypatch)
    assert done["status"] == "done"
    assert VaultEntry.objects.filter(category="decisions", content__contains="Kafka").count() == 1
    assert "Kafka" in daily(agent_a)
    assert not Schedule.objects.filter(func="sessions_app.tasks.extraction_run").exists()


def test_a_transcript_over_the_input_budget_keeps_its_newest_messages(agent_a, fake_llm, settings):
    """The transcript (MEMORY_EXTRACTION_TRANSCRIPT_MESSAGES messages of up to
    MEMORY_EXTRACTION_MESSAGE_CHARS each) went to the model whole, however little room PROFILE.md,
    MEMORY.md and the day's note left in the model's context. The prompt now keeps the newest messages
    within LLM_MAX_INPUT_TOKENS and says how many it left out."""
    settings.LLM_MAX_INPUT_TOKENS = 1500
    padding = "the billing service talks to the ledger through the queue, " * 10
    texts = [f"Turn {n}: {padding}" for n in range(20)]
    fake_llm.reply_json({"should_update": True, "reason": "x", "daily_entry": "- billing", "memory_update": "",
                         "profile_update": ""})  # fmt: skip
    result = run(agent_a, session_make(agent_a, texts))
    assert result["path"] == "llm", result
    messages = fake_llm.requests[0]["json"]["messages"]
    assert prompt_tokens(messages) <= 1500
    prompt = messages[1]["content"]
    sent = [n for n in range(20) if f"Turn {n}: " in prompt]
    assert sent == list(range(20 - len(sent), 20)) and 0 < len(sent) < 20
    assert result["messages_over_budget"] == 20 - len(sent)
    assert "- billing" in daily(agent_a)


def test_files_that_leave_no_room_for_the_conversation_fall_back_to_the_heuristics(
    agent_a, fake_llm, settings
):
    settings.LLM_MAX_INPUT_TOKENS = 1000
    big = "# Memory\n" + "".join(f"- Service {n} runs on host h{n}.example.com\n" for n in range(120))
    services.file_write(agent=agent_a, path="MEMORY.md", content=big, changed_by="t")
    fake_llm.reply_json({"should_update": False, "reason": "x"})
    result = run(agent_a, session_make(agent_a, CONVERSATION))
    assert fake_llm.requests == []
    assert (
        result["path"] == "heuristic" and "no room for the conversation's last message" in result["llm_error"]
    )
    assert VaultEntry.objects.filter(category="decisions").exists()


def _scheduler_pass_run(monkeypatch, sync: bool) -> list[dict]:
    """One pass of the cluster's scheduler over the due schedules, and the results of the extraction
    tasks it made: under Q_SYNC each task runs inside the pass (django-q2 saves its result), with the ORM
    broker the pass queues them and a worker runs them (_due_tasks_run)."""
    from django_q.brokers import get_broker
    from django_q.models import Task
    from django_q.scheduler import scheduler

    from sessions_app.maintenance.extraction import EXTRACTION_TASK

    if not sync:
        return _due_tasks_run(monkeypatch)
    before = set(Task.objects.values_list("id", flat=True))
    scheduler(broker=get_broker())
    made = Task.objects.filter(func=EXTRACTION_TASK).exclude(id__in=before).order_by("started")
    return [task.result for task in made]


@pytest.mark.parametrize("sync", [True, False], ids=["q-sync", "orm-broker"])
def test_an_overdue_retry_deferred_again_is_moved_not_doubled(agent_a, settings, monkeypatch, sync):
    """A retry fallen due that the scheduler had not run yet was left where it was when the session was
    deferred again, and a second retry was added beside it: both ran, and the second found the
    conversation extracted already. The overdue retry is moved to the new time: one retry, one run."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", sync)
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 5
    first = session_make(agent_a, CONVERSATION, external_id="chat-1")
    second = session_make(agent_a, KAFKA_CONVERSATION, external_id="chat-2")
    start = timezone.now()
    retries = Schedule.objects.filter(name=f"extraction retry: session {second.pk}")
    with time_machine.travel(start, tick=False):
        assert run(agent_a, first)["status"] == "done"
    with time_machine.travel(start + timedelta(minutes=1), tick=False):
        assert run(agent_a, second, trigger="close")["status"] == "deferred"  # a retry at start + 5
    Message.objects.create(project_id=agent_a.project_id, agent=agent_a, session=first, role="user",
                           text="Also: the ledger moves to its own cluster.", created_at=start)  # fmt: skip
    with time_machine.travel(start + timedelta(minutes=5, seconds=30), tick=False):
        assert run(agent_a, first, trigger="quiet")["status"] == "done"  # the cooldown starts again
    with time_machine.travel(start + timedelta(minutes=6), tick=False):
        # The retry at start + 5 is overdue (the scheduler has not come round); the session goes quiet.
        again = run(agent_a, second, trigger="quiet")
    assert again["status"] == "deferred"
    until = start + timedelta(minutes=10, seconds=30)
    assert again["deferred_until"] == until.isoformat()
    assert list(retries.values_list("next_run", flat=True)) == [until]
    with time_machine.travel(until + timedelta(seconds=1), tick=False):
        results = _scheduler_pass_run(monkeypatch, sync)
    assert [result["status"] for result in results] == ["done"]
    assert not retries.exists()
    assert VaultEntry.objects.filter(category="decisions", content__contains="Kafka").count() == 1


def test_a_retry_deferred_again_while_the_q_sync_scheduler_runs_it_stays_scheduled(
    agent_a, settings, monkeypatch
):
    """Under Q_SYNC a retry's task runs inside the scheduler's pass, which deletes the retry after it:
    a deferral of that run must leave one retry behind, not move the one about to be deleted."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 5
    first = session_make(agent_a, CONVERSATION, external_id="chat-1")
    second = session_make(agent_a, KAFKA_CONVERSATION, external_id="chat-2")
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        assert run(agent_a, first)["status"] == "done"
    with time_machine.travel(start + timedelta(minutes=1), tick=False):
        assert run(agent_a, second, trigger="close")["status"] == "deferred"  # a retry at start + 5
    # Another extraction of the agent just before the retry runs: the cooldown defers the retry again.
    Message.objects.create(project_id=agent_a.project_id, agent=agent_a, session=first, role="user",
                           text="Also: the ledger moves to its own cluster.", created_at=start)  # fmt: skip
    with time_machine.travel(start + timedelta(minutes=5, seconds=30), tick=False):
        assert run(agent_a, first, trigger="quiet")["status"] == "done"
        [deferred] = _scheduler_pass_run(monkeypatch, sync=True)
    assert deferred["status"] == "deferred"
    until = start + timedelta(minutes=10, seconds=30)
    retries = Schedule.objects.filter(name=f"extraction retry: session {second.pk}")
    assert list(retries.values_list("next_run", flat=True)) == [until]
    with time_machine.travel(until + timedelta(seconds=1), tick=False):
        assert [r["status"] for r in _scheduler_pass_run(monkeypatch, sync=True)] == ["done"]
    assert VaultEntry.objects.filter(category="decisions", content__contains="Kafka").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_deferrals_of_a_session_at_once_leave_one_retry(agent_a):
    """Two deferrals at once (the agent's job lock was busy for both, so nothing made them take turns)
    each saw no pending retry and each added one. They take turns: one retry, at the later one's time."""
    from django.db import transaction

    from sessions_app.maintenance.extraction import extraction_retry_schedule
    from tests.conftest import until_another_connection_waits_for_a_lock

    session = session_make(agent_a, CONVERSATION)
    soon, later = timezone.now() + timedelta(minutes=1), timezone.now() + timedelta(minutes=2)
    out = {}

    def defer_later():
        try:
            out["at"] = extraction_retry_schedule(
                agent_id=agent_a.pk, session_id=session.pk, trigger_source="quiet", at=later
            )
        finally:
            connection.close()

    with transaction.atomic():
        extraction_retry_schedule(agent_id=agent_a.pk, session_id=session.pk, trigger_source="close", at=soon)
        thread = threading.Thread(target=defer_later)
        thread.start()
        until_another_connection_waits_for_a_lock(seconds=3)
    thread.join(10)
    assert out["at"] == later
    retries = Schedule.objects.filter(name=f"extraction retry: session {session.pk}")
    assert list(retries.values_list("next_run", "args")) == [(later, repr((agent_a.pk, session.pk, "quiet")))]


@pytest.mark.django_db(transaction=True)
def test_an_unchanged_conversation_that_finds_the_agent_busy_is_skipped_not_deferred(
    project, fake_llm, monkeypatch
):
    """A session extracted already went quiet while another session's extraction held the agent's job
    lock: it was deferred (a retry "extraction retry: session N") without looking at whether anything
    had changed, and the retry ran later only to skip it as unchanged. It is skipped at once, and no
    retry is made."""
    agent = services.agent_ensure(project=project, slug="busy")
    first = session_make(agent, CONVERSATION, external_id="chat-1")
    second = session_make(agent, KAFKA_CONVERSATION, external_id="chat-2")
    fake_llm.reply_json({"should_update": False, "reason": "r"})
    with time_machine.travel(timezone.now() - timedelta(minutes=10)):
        assert run(agent, first, trigger="close")["status"] == "done"
    fake_llm.received.clear()
    fake_llm.reply_json({"should_update": True, "reason": "r", "daily_entry": "- kafka", "memory_update": "",
                         "profile_update": ""}, delay=1.5)  # fmt: skip
    results = {}

    def extract_second():
        try:
            results["second"] = run(agent, second)
        finally:
            connection.close()

    thread = threading.Thread(target=extract_second)
    thread.start()
    assert fake_llm.received.wait(10)
    try:
        quiet = run(agent, first, trigger="quiet")
    finally:
        thread.join()
    assert results["second"]["status"] == "done"
    assert quiet == {"status": "skipped", "reason": "the conversation is unchanged since its last extraction"}
    assert not Schedule.objects.filter(name__startswith="extraction retry").exists()
    with time_machine.travel(timezone.now() + timedelta(minutes=10)):
        assert _due_tasks_run(monkeypatch) == []


@pytest.mark.parametrize("sync", [True, False], ids=["q-sync", "orm-broker"])
def test_an_extraction_skipped_as_unchanged_removes_the_sessions_pending_retry(
    agent_a, settings, monkeypatch, sync
):
    """A retry left pending for a session (its deferral committed after the extraction that took the
    conversation as it is had removed the session's retries) ran later and skipped the conversation as
    unchanged, as every trigger of the session meanwhile had: an extraction that finds the conversation
    unchanged removes the session's pending retry, as one that extracts it does."""
    from django_q.conf import Conf

    from sessions_app.maintenance.extraction import extraction_retry_schedule

    monkeypatch.setattr(Conf, "SYNC", sync)
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 5
    session = session_make(agent_a, CONVERSATION)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        assert run(agent_a, session, trigger="close")["status"] == "done"
        extraction_retry_schedule(
            agent_id=agent_a.pk,
            session_id=session.pk,
            trigger_source="close",
            at=start + timedelta(minutes=5),
        )
    with time_machine.travel(start + timedelta(minutes=2), tick=False):
        skipped = run(agent_a, session, trigger="quiet")
    assert skipped["reason"] == "the conversation is unchanged since its last extraction"
    assert not Schedule.objects.filter(name=f"extraction retry: session {session.pk}").exists()
    with time_machine.travel(start + timedelta(minutes=6), tick=False):
        assert _scheduler_pass_run(monkeypatch, sync) == []


def test_a_conversation_extracted_again_after_it_grew_does_not_repeat_its_facts_in_the_daily_note(agent_a):
    session = session_make(agent_a, CONVERSATION)
    assert run(agent_a, session)["status"] == "done"
    Message.objects.create(project_id=agent_a.project_id, agent=agent_a, session=session, role="user",
                           text="Also, I prefer tabs over spaces in every repository.", created_at=timezone.now())  # fmt: skip
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        result = run(agent_a, session)
    assert result["status"] == "done" and result["reason"] == "0 insight(s), 1 durable fact(s)"
    note = daily(agent_a)
    assert note.count("proper noun: Hi, I'm Sardor") == 1
    assert note.count("remember: Please remember that my email") == 1
    assert note.count("preference: Also, I prefer tabs over spaces") == 1


def test_a_retrys_task_is_in_the_extraction_group(agent_a, settings, monkeypatch):
    """A retry's task was in a group named after its schedule, one per session: with the successful
    tasks kept per group (Q_CLUSTER save_limit_per), every deferred session would have kept its own."""
    from django_q.brokers import get_broker
    from django_q.models import OrmQ
    from django_q.scheduler import scheduler

    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 5
    first = session_make(agent_a, CONVERSATION, external_id="chat-1")
    second = session_make(agent_a, KAFKA_CONVERSATION, external_id="chat-2")
    assert run(agent_a, first)["status"] == "done"
    assert run(agent_a, second)["status"] == "deferred"
    monkeypatch.setattr("django_q.scheduler.close_old_django_connections", lambda: None)
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        scheduler(broker=get_broker())
    [queued] = OrmQ.objects.all()
    assert queued.task["group"] == "extraction"
    assert queued.task["args"] == (agent_a.pk, second.pk, "web") and queued.task["kwargs"] == {}
