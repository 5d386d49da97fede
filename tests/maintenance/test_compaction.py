import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from memoryproject import maintenance
from sessions_app import services as session_services
from sessions_app.models import Checkpoint, Message, Session
from sessions_app.selectors import checkpoint_get_valid
from tests.conftest import ApiClient
from tests.maintenance.conftest import session_make
from vault import services
from vault.models import CompactionRun, EntryMerge, EntryVersion, ReviewPolicy, SessionMark, VaultEntry

pytestmark = pytest.mark.django_db

OLD_PART = [
    "Which cache should we use for sessions?",
    "We decided to use Redis for caching sessions, with a 1 hour TTL.",
    "And what went wrong last time?",
    "I learned that the cache keys must be versioned on every deploy.",
    "ok",
    "Plain reply about formatting the output nicely.",
]


def long_session(agent, extra=20, **kwargs):
    return session_make(agent, OLD_PART + [f"message number {i}" for i in range(extra)], **kwargs)


def entries_make(agent, n, category="decisions", start=None):
    start = start or timezone.now() - timedelta(days=n + 1)
    made = []
    for i in range(n):
        made.append(
            services.entry_create(
                agent=agent,
                category=category,
                content=f"{category} entry {i:02d}",
                created_at=start + timedelta(days=i),
            )
        )
    return made


def snapshot():
    return {
        "entries": list(
            VaultEntry.objects.order_by("pk").values("pk", "content", "status", "tags", "category")
        ),
        "versions": list(EntryVersion.objects.order_by("pk").values("pk", "status")),
        "messages": list(Message.objects.order_by("pk").values("pk", "archived", "text")),
        "marks": list(SessionMark.objects.values("pk", "content_hash")),
        "merges": list(EntryMerge.objects.values("pk")),
        "runs": list(CompactionRun.objects.values("pk")),
    }


def test_step_b_trims_a_long_session_and_mines_the_old_part(agent_a):
    session = long_session(agent_a)
    old_ids = list(
        Message.objects.filter(session=session).order_by("created_at", "id").values_list("pk", flat=True)[:6]
    )

    run = maintenance.compaction_run(project=agent_a.project, dry_run=False)

    assert run.counts["sessions_trimmed"] == 1
    assert run.counts["messages_archived"] == 6
    assert run.counts["insights_extracted"] == 2
    assert run.counts["handoffs_created"] == 1
    assert set(Message.objects.filter(archived=True).values_list("pk", flat=True)) == set(old_ids)
    assert Message.objects.filter(session=session, archived=False).count() == 20
    decision = VaultEntry.objects.get(category="decisions")
    assert decision.content == "We decided to use Redis for caching sessions, with a 1 hour TTL."
    assert decision.tags == ["compacted", "auto-extract"]
    assert decision.source == "compaction"
    lesson = VaultEntry.objects.get(category="lessons")
    assert lesson.content == "I learned that the cache keys must be versioned on every deploy."
    handoff = VaultEntry.objects.get(category="handoffs")
    assert handoff.tags == ["compacted", "auto-handoff"]
    assert handoff.content == (
        "Compacted handoff: 6 older messages of agent-a session chat-1 were archived.\n"
        "[Agent]: We decided to use Redis for caching sessions, with a 1 hour TTL.\n"
        "[Agent]: I learned that the cache keys must be versioned on every deploy.\n"
        "[Agent]: Plain reply about formatting the output nicely."
    )
    change = next(c for c in run.changes if c["action"] == "trim-session")
    assert change["details"]["archived_message_ids"] == old_ids
    assert "MEMORY_CONVERSATION_KEEP=20" in change["reason"]
    # A second run finds nothing to do.
    again = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert again.counts["sessions_trimmed"] == 0
    assert VaultEntry.objects.count() == 3


def test_step_b_never_mines_an_unchanged_session_twice(agent_a):
    session = long_session(agent_a)
    maintenance.compaction_run(project=agent_a.project, dry_run=False)
    # A curator restores the archived messages: the old part is the same, so it is trimmed again
    # but not mined again.
    Message.objects.filter(session=session).update(archived=False)
    run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert run.counts["sessions_trimmed"] == 1
    assert run.counts["sessions_mined"] == 0
    assert run.counts["insights_extracted"] == 0
    assert VaultEntry.objects.count() == 3
    assert any(c["action"] == "skip-mining" for c in run.changes)


def test_step_b_leaves_a_session_at_the_limit_alone(agent_a):
    session_make(agent_a, [f"We decided thing number {i} for good" for i in range(20)])
    run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert run.counts["sessions_trimmed"] == 0
    assert not Message.objects.filter(archived=True).exists()


def test_step_c_merges_older_entries_into_one_summary(agent_a, agent_b):
    made = entries_make(agent_a, 33)
    long_one = services.entry_create(
        agent=agent_a,
        category="decisions",
        content="x" * 250,
        created_at=made[0].created_at - timedelta(days=1),
    )
    entries_make(agent_a, 30, category="lessons")
    entries_make(agent_b, 12)

    run = maintenance.compaction_run(project=agent_a.project, dry_run=False)

    assert run.counts["entries_merged"] == 14
    assert run.counts["summaries_created"] == 1
    assert run.counts["categories_capped"] == 1
    active = VaultEntry.objects.filter(agent=agent_a, category="decisions", status="active")
    assert active.count() == 21
    summary = active.get(source="compaction")
    merged = [long_one] + made[:13]
    lines = summary.content.splitlines()
    assert lines[0] == "Compacted 14 older entries:"
    assert lines[1] == f"- [{timezone.localtime(made[12].created_at):%Y-%m-%d}] decisions entry 12"
    assert lines[-1] == f"- [{timezone.localtime(long_one.created_at):%Y-%m-%d}] " + "x" * 199 + "…"
    assert len(lines) == 15
    assert summary.tags == ["compacted"]
    assert set(EntryMerge.objects.filter(summary=summary).values_list("entry_id", flat=True)) == {
        e.pk for e in merged
    }
    assert set(VaultEntry.objects.filter(status="archived").values_list("pk", flat=True)) == {
        e.pk for e in merged
    }
    # Kept: the 20 newest originals. Nothing was deleted.
    assert set(active.exclude(pk=summary.pk).values_list("pk", flat=True)) == {e.pk for e in made[13:]}
    assert VaultEntry.objects.filter(agent=agent_a, category="lessons", status="active").count() == 30
    assert VaultEntry.objects.count() == 34 + 30 + 12 + 1
    assert EntryVersion.objects.filter(entry_id=long_one.pk, status="active").count() == 1


def test_step_c_summary_of_live_entries_is_live_whatever_the_review_policy(agent_a):
    """The summary was screened as new content: a policy holding extracted decisions, or a merged
    decision that conflicts with a kept one (both live, a curator approved them), held it as pending
    while the entries it replaces were archived, so they left the context and search."""
    ReviewPolicy.objects.create(project=agent_a.project, category="decisions", hold_extracted=True)
    made = entries_make(agent_a, 32)
    old = services.entry_create(agent=agent_a, category="decisions", content="We will use Redis for the cache",
                                created_at=made[0].created_at - timedelta(days=1))  # fmt: skip
    fresh = services.entry_create(
        agent=agent_a, category="decisions", content="We will use Memcached for the cache"
    )
    assert fresh.status == "pending"
    VaultEntry.objects.filter(pk=fresh.pk).update(status="active")  # a curator approved it
    run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert run.counts["entries_merged"] == 14
    summary = VaultEntry.objects.get(source="compaction")
    assert summary.status == "active" and not summary.review_items.exists()
    assert "Redis" in summary.content and "decisions entry 12" in summary.content
    assert set(VaultEntry.objects.filter(status="archived")) == {old, *made[:13]}
    assert VaultEntry.objects.filter(agent=agent_a, category="decisions", status="active").count() == 21


SAVED = datetime(2026, 3, 16, 16, 51, 11, tzinfo=UTC)


def checkpoint_make(agent, messages=None, saved_at=SAVED):
    with time_machine.travel(saved_at, tick=False):
        return session_services.checkpoint_save(
            agent=agent, messages=messages or [{"role": "user", "text": "where were we?"}], chat_id="c1"
        )


def test_step_a_removes_a_checkpoint_exactly_when_it_expires(agent_a, agent_b, settings):
    settings.MEMORY_CHECKPOINT_DAYS = 7
    checkpoint_make(agent_a)
    checkpoint_make(agent_b, saved_at=SAVED + timedelta(days=1))
    boundary = SAVED + timedelta(days=7)
    with time_machine.travel(boundary - timedelta(microseconds=1), tick=False):
        assert checkpoint_get_valid(agent_a) is not None
        run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert run.counts["checkpoints_removed"] == 0 and Checkpoint.objects.count() == 2
    with time_machine.travel(boundary, tick=False):
        assert checkpoint_get_valid(agent_a) is None  # recovery and compaction agree on the boundary
        run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert run.counts["checkpoints_removed"] == 1
    assert list(Checkpoint.objects.values_list("agent__slug", flat=True)) == [agent_b.slug]
    [change] = [c for c in run.changes if c["step"] == "A"]
    assert change["action"] == "remove-checkpoint" and change["target"] == agent_a.slug
    assert "older than MEMORY_CHECKPOINT_DAYS=7" in change["reason"]
    assert CompactionRun.objects.get(pk=run.pk).counts["checkpoints_removed"] == 1


@pytest.mark.parametrize(
    "messages",
    [{"role": "user"}, "text", [1, 2], [{"role": "user"}], [{"role": "user", "text": 5}]],
)
def test_step_a_removes_corrupt_checkpoints(agent_a, agent_b, messages):
    checkpoint = checkpoint_make(agent_a)
    checkpoint_make(agent_b)
    Checkpoint.objects.filter(pk=checkpoint.pk).update(messages=messages)
    with time_machine.travel(SAVED + timedelta(hours=1), tick=False):
        run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert run.counts["checkpoints_removed"] == 1
    assert not Checkpoint.objects.filter(agent=agent_a).exists()
    assert Checkpoint.objects.filter(agent=agent_b).exists()  # a readable, fresh one stays
    assert any(c["reason"].startswith("corrupt:") for c in run.changes)


def test_step_a_dry_run_reports_and_keeps_the_checkpoint(agent_a, outsider_agent):
    checkpoint_make(agent_a)
    checkpoint_make(outsider_agent)
    with time_machine.travel(SAVED + timedelta(days=30), tick=False):
        dry = maintenance.compaction_run(project=agent_a.project, dry_run=True)
        assert dry.counts["checkpoints_removed"] == 1 and Checkpoint.objects.count() == 2
        real = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert real.counts["checkpoints_removed"] == 1
    # another project's checkpoint is not this run's business
    assert list(Checkpoint.objects.values_list("agent", flat=True)) == [outsider_agent.pk]


def test_a_dry_run_reports_the_same_and_changes_nothing(agent_a):
    long_session(agent_a)
    entries_make(agent_a, 35)
    before = snapshot()
    dry = maintenance.compaction_run(project=agent_a.project, dry_run=True)
    assert snapshot() == before
    assert dry.pk is None
    real = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert dry.counts == real.counts
    assert [(c["step"], c["action"], c["target"]) for c in dry.changes] == [
        (c["step"], c["action"], c["target"]) for c in real.changes
    ]
    # 35 entries + the decision mined by step B: 36 active, 16 merged.
    assert dry.counts["entries_merged"] == 16 and dry.counts["messages_archived"] == 6


def test_compaction_of_one_project_does_not_touch_another(agent_a, outsider_agent):
    entries_make(outsider_agent, 35)
    long_session(outsider_agent)
    run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    assert run.counts["entries_merged"] == 0 and run.counts["sessions_trimmed"] == 0
    assert not VaultEntry.objects.filter(status="archived").exists()


@pytest.mark.django_db(transaction=True)
def test_compaction_concurrent_with_agents_writing_loses_no_write(admin_token, agent_a):
    entries_make(agent_a, 40)
    session = long_session(agent_a, extra=40)
    failures, written = [], []
    stop = threading.Event()

    def writer(n):
        api = ApiClient(admin_token)
        try:
            for i in range(25):
                content = f"writer {n} entry {i}"
                response = api.post("/agents/agent-a/entries", {"category": "decisions", "content": content})
                if response.status_code != 201:
                    failures.append(response.content)
                written.append(content)
                Message.objects.create(
                    project_id=agent_a.project_id, agent=agent_a, session=session, role="user",
                    text=f"writer {n} message {i}", created_at=timezone.now(),
                )  # fmt: skip
        finally:
            connection.close()

    def compactor():
        try:
            while not stop.is_set():
                maintenance.compaction_run(project=agent_a.project, dry_run=False)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    compacting = threading.Thread(target=compactor)
    compacting.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    compacting.join()
    maintenance.compaction_run(project=agent_a.project, dry_run=False)

    assert failures == []
    contents = list(VaultEntry.objects.filter(agent=agent_a, source="api").values_list("content", flat=True))
    assert sorted(contents) == sorted(written + [f"decisions entry {i:02d}" for i in range(40)])
    assert Message.objects.filter(session=session).count() == 46 + 100
    assert Message.objects.filter(session=session, archived=False).count() == 20
    # Every archived entry is linked from a summary; nothing is archived without a trace.
    archived = set(VaultEntry.objects.filter(status="archived").values_list("pk", flat=True))
    assert archived == set(EntryMerge.objects.values_list("entry_id", flat=True))
    assert VaultEntry.objects.filter(agent=agent_a, category="decisions", status="active").count() <= 30


# --- API and command ---------------------------------------------------------------------------


def test_api_runs_compaction_and_shows_the_last_run(api, admin_token, agent_a):
    long_session(agent_a)
    assert api.get("/maintenance/compact", token=admin_token).status_code == 404
    response = api.post("/maintenance/compact", token=admin_token)
    assert response.status_code == 200
    body = response.json()
    assert body["counts"]["messages_archived"] == 6 and body["dry_run"] is False and body["id"]
    last = api.get("/maintenance/compact", token=admin_token).json()
    assert last["id"] == body["id"] and last["changes"] == body["changes"]


def test_api_dry_run_changes_nothing(api, admin_token, agent_a):
    long_session(agent_a)
    before = snapshot()
    body = api.post("/maintenance/compact", token=admin_token, dry_run="true").json()
    assert body["dry_run"] is True and body["id"] is None and body["counts"]["messages_archived"] == 6
    assert snapshot() == before


def test_api_compaction_needs_a_project_admin(
    api, token_a, read_token_a, outsider_token, admin_token, agent_a
):
    long_session(agent_a)
    assert api.post("/maintenance/compact", token=token_a).status_code == 403
    assert api.post("/maintenance/compact", token=read_token_a).status_code == 403
    assert api.get("/maintenance/compact", token=token_a).status_code == 403
    outsider = api.post("/maintenance/compact", token=outsider_token)
    assert outsider.status_code == 200 and outsider.json()["project"] == "globex"
    assert outsider.json()["counts"]["messages_archived"] == 0
    assert not Message.objects.filter(archived=True).exists()
    api.post("/maintenance/compact", token=admin_token)
    # The outsider sees its own project's last run, never acme's.
    assert api.get("/maintenance/compact", token=outsider_token).json()["project"] == "globex"


def test_compact_command_supports_dry_run(agent_a, capsys):
    long_session(agent_a)
    call_command("compact", "--dry-run")
    assert "[dry run] acme: " in capsys.readouterr().out
    assert not Message.objects.filter(archived=True).exists()
    assert not CompactionRun.objects.exists()
    call_command("compact")
    assert "messages_archived=6" in capsys.readouterr().out
    assert CompactionRun.objects.filter(project=agent_a.project, trigger="command").count() == 1
    assert Session.objects.count() == 1


def test_compact_on_a_project_with_nothing_to_do_prints_one_line(agent_a, capsys):
    """Every run, of every project, also printed "note: steps D/E: search vectors are generated
    columns, nothing to rebuild": the seed's step letters, which no reader of this server knows."""
    call_command("compact")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("acme: nothing to do ("), lines
    assert CompactionRun.objects.get().notes == []


def test_the_compact_command_says_what_failed_and_exits_non_zero(agent_a, monkeypatch, capsys):
    """A failed step printed "errors=1" without saying what failed, and the command exited 0."""

    def compaction_step_broken(run, project, now):
        raise RuntimeError("lock timeout")

    monkeypatch.setattr(
        maintenance, "COMPACTION_STEPS", (compaction_step_broken, *maintenance.COMPACTION_STEPS)
    )
    long_session(agent_a)
    with pytest.raises(CommandError, match="1 error in project acme"):
        call_command("compact")
    out = capsys.readouterr().out
    assert "step compaction_step_broken: failed and stopped (RuntimeError: lock timeout)" in out
    assert "messages_archived=6" in out  # the other steps ran
    with pytest.raises(CommandError, match="1 error in project acme"):
        call_command("compact", "--dry-run")


def test_entries_never_cited_for_long_are_proposed_for_archiving_not_archived(
    agent_a, agent_b, outsider_agent, settings
):
    from search.services import context_build

    settings.MEMORY_UNCITED_DAYS = 90
    now = timezone.now()

    def make(agent, content, days, **kwargs):
        return services.entry_create(
            agent=agent, category="lessons", content=content, created_at=now - timedelta(days=days), **kwargs
        )

    stale = make(agent_a, "Stale lesson about cobol", 120)
    stale_b = make(agent_b, "Another stale lesson about fortran", 95)
    young = make(agent_a, "Young lesson about rust", 89)
    cited = make(agent_a, "Cited lesson about kafka partitions", 150)
    read = make(agent_a, "Read lesson about redis", 150)
    archived = make(agent_a, "Archived lesson about perl", 150, status="archived")
    foreign = make(outsider_agent, "Outsider lesson about cobol", 150)
    context_build(agent=agent_a, command="kafka partitions")  # cites `cited`
    services.entries_mark_accessed([read.pk])
    run = maintenance.compaction_run(project=agent_a.project, dry_run=False)
    proposals = [c for c in run.changes if c["action"] == "propose_archive"]
    assert [c["details"]["entry_id"] for c in proposals] == [stale.pk, stale_b.pk]  # oldest first
    assert proposals[0]["reason"] == "never cited in 90 days" and proposals[0]["step"] == "citations"
    assert run.counts["archive_proposed"] == 2
    recorded = CompactionRun.objects.get(pk=run.pk)
    assert [c["details"]["entry_id"] for c in recorded.changes if c["action"] == "propose_archive"] == [
        stale.pk,
        stale_b.pk,
    ]
    # proposals only: nothing changed status
    statuses = dict(
        VaultEntry.objects.filter(
            pk__in=[stale.pk, stale_b.pk, young.pk, cited.pk, read.pk, archived.pk, foreign.pk]
        ).values_list("pk", "status")
    )
    assert statuses[stale.pk] == statuses[stale_b.pk] == statuses[foreign.pk] == "active"
    assert statuses[archived.pk] == "archived"
    # once cited, it is no longer proposed
    context_build(agent=agent_a, command="stale cobol")
    again = maintenance.compaction_run(project=agent_a.project, dry_run=True)
    assert [c["details"]["entry_id"] for c in again.changes if c["action"] == "propose_archive"] == [
        stale_b.pk
    ]
