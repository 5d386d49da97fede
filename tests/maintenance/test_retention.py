import threading
from datetime import timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memoryproject import maintenance
from memoryproject.tasks import retention_scheduled
from sessions_app.models import Message, Session
from tests.conftest import until_another_connection_waits_for_a_lock
from tests.maintenance.conftest import session_make
from vault import services
from vault.maintenance import retention
from vault.models import CompactionRun, DeletionAudit, EntryVersion, RetentionMark, VaultEntry

pytestmark = pytest.mark.django_db


def test_expired_entries_are_archived_then_purged_after_the_grace_period(agent_a):
    start = timezone.now()
    with time_machine.travel(start - timedelta(days=200)):
        lesson = services.entry_create(agent=agent_a, category="lessons", content="Old lesson about caches")
        decision = services.entry_create(agent=agent_a, category="decisions", content="Old decision")
        restored = services.entry_create(agent=agent_a, category="lessons", content="Lesson brought back")
    services.entry_update(entry_id=lesson.pk, changes=services.EntryChanges(importance=0.9), changed_by="t")
    VaultEntry.objects.filter(pk=lesson.pk).update(updated_at=start - timedelta(days=190))

    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=start)
    assert run.counts["entries_expired"] == 2
    assert VaultEntry.objects.get(pk=lesson.pk).status == "archived"
    assert VaultEntry.objects.get(pk=decision.pk).status == "active"  # 365 days for decisions
    services.entry_update(
        entry_id=restored.pk, changes=services.EntryChanges(status="active"), changed_by="t"
    )

    later = start + timedelta(days=31)
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=later)
    assert run.counts["entries_purged"] == 1
    assert not VaultEntry.objects.filter(pk=lesson.pk).exists()
    assert not EntryVersion.objects.filter(entry_id=lesson.pk).exists()  # the content is really gone
    audit = DeletionAudit.objects.get()
    assert (audit.reason, audit.kind, audit.object_id, audit.category) == (
        "purge",
        "entry",
        lesson.pk,
        "lessons",
    )
    assert audit.versions_deleted == 2 and audit.content_chars == len("Old lesson about caches")
    assert VaultEntry.objects.get(pk=restored.pk).status == "active"
    assert not RetentionMark.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_entry_edited_after_the_run_listed_it_is_not_archived(agent_a):
    """Retention lists the expired entries of a category, then archives them one by one (and purges
    them after the grace period). An entry an agent edited in between was archived all the same, its
    fresh text marked to be deleted for good."""
    start = timezone.now()
    with time_machine.travel(start - timedelta(days=200)):
        lesson = services.entry_create(agent=agent_a, category="lessons", content="Old lesson about caches")
    errors = []

    def agent_edit():
        try:
            with transaction.atomic():
                VaultEntry.objects.select_for_update().get(pk=lesson.pk)
                ready.set()
                until_another_connection_waits_for_a_lock()
                services.entry_update(
                    entry_id=lesson.pk,
                    changes=services.EntryChanges(content="Cache keys need the schema version"),
                    changed_by="agent",
                    review=True,
                )
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    ready = threading.Event()
    thread = threading.Thread(target=agent_edit)
    thread.start()
    ready.wait(10)
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=start)
    thread.join()
    assert errors == []
    lesson.refresh_from_db()
    assert (lesson.status, lesson.content) == ("active", "Cache keys need the schema version")
    assert run.counts["entries_expired"] == 0 and not RetentionMark.objects.exists()


def test_an_archived_entry_another_run_marked_meanwhile_is_marked_once(agent_a, monkeypatch):
    """Two retention runs at once (the schedule and the command) both listed an archived, expired
    entry; the second to lock it created its mark again, and the unique constraint failed its whole
    expire step."""
    start = timezone.now()
    with time_machine.travel(start - timedelta(days=200)):
        lesson = services.entry_create(agent=agent_a, category="lessons", content="Old lesson about caches")
        services.entry_update(
            entry_id=lesson.pk, changes=services.EntryChanges(status="archived"), changed_by="curator"
        )
    lock = retention._expired_entry_lock

    def the_other_run_first(entry_id, cutoff):
        # what the other run did between this run's listing and its lock
        RetentionMark.objects.get_or_create(
            project=agent_a.project,
            kind=RetentionMark.Kind.ENTRY,
            object_id=entry_id,
            defaults={"marked_at": start},
        )
        return lock(entry_id, cutoff)

    monkeypatch.setattr(retention, "_expired_entry_lock", the_other_run_first)
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=start)
    assert run.counts.get("errors", 0) == 0 and not run.notes
    assert run.counts.get("entries_expired", 0) == 0
    assert RetentionMark.objects.filter(object_id=lesson.pk).count() == 1


def test_messages_another_run_marked_meanwhile_are_marked_once(agent_a, monkeypatch):
    """Two runs at once listed the same expired messages; the second's marks conflicted with the
    first's and failed its step. It now marks (and counts) only those still unmarked."""
    from sessions_app.maintenance import retention as message_retention

    session_make(agent_a, ["old question here", "old answer"], start=timezone.now() - timedelta(days=100))
    now = timezone.now()
    mark = message_retention._messages_mark

    def the_other_run_first(project, ids, when):
        RetentionMark.objects.create(
            project=project, kind=RetentionMark.Kind.MESSAGE, object_id=ids[0], marked_at=when
        )
        return mark(project, ids, when)

    monkeypatch.setattr(message_retention, "_messages_mark", the_other_run_first)
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=now)
    assert run.counts.get("errors", 0) == 0 and not run.notes
    assert run.counts["messages_expired"] == 1
    assert RetentionMark.objects.filter(kind="message").count() == 2
    assert Message.objects.filter(archived=True).count() == 1  # the other run archives its own


def test_expired_messages_are_archived_then_purged(agent_a):
    session = session_make(
        agent_a, ["old question here", "old answer"], start=timezone.now() - timedelta(days=100)
    )
    now = timezone.now()
    assert (
        maintenance.retention_run(project=agent_a.project, dry_run=False, now=now).counts["messages_expired"]
        == 2
    )
    assert Message.objects.filter(session=session, archived=True).count() == 2
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=now + timedelta(days=30))
    assert run.counts["messages_purged"] == 2
    assert DeletionAudit.objects.filter(kind="message", reason="purge").count() == 2


def test_an_active_sessions_early_messages_age_by_the_sessions_last_activity(agent_a):
    """Retention aged each message by its own date: a session in use for months lost its first
    messages while the conversation went on. A conversation's retention (seed 004's conversation_days)
    counts from the session's last activity, as the lifecycle's archive and delete do."""
    start = timezone.now() - timedelta(days=100)
    ongoing = session_make(agent_a, ["early question here", "early answer"], start=start)
    Session.objects.filter(pk=ongoing.pk).update(last_activity_at=timezone.now() - timedelta(hours=1))
    quiet = session_make(agent_a, ["old question here", "old answer"], start=start, external_id="chat-2")
    now = timezone.now()
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=now)
    assert run.counts["messages_expired"] == 2
    assert set(Message.objects.filter(archived=True).values_list("session_id", flat=True)) == {quiet.pk}


def test_a_message_whose_session_came_back_in_the_grace_period_is_not_purged(agent_a):
    """A quiet session's messages expire; a message to it before the purge keeps them (their mark is
    dropped: they age again from the session's new activity)."""
    start = timezone.now() - timedelta(days=100)
    session = session_make(agent_a, ["old question here", "old answer"], start=start)
    now = timezone.now()
    assert (
        maintenance.retention_run(project=agent_a.project, dry_run=False, now=now).counts["messages_expired"]
        == 2
    )
    Session.objects.filter(pk=session.pk).update(last_activity_at=now + timedelta(days=1))
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=now + timedelta(days=31))
    assert run.counts.get("messages_purged", 0) == 0
    assert Message.objects.filter(session=session).count() == 2
    assert not RetentionMark.objects.filter(kind="message").exists()


def test_a_retention_dry_run_changes_nothing(agent_a):
    with time_machine.travel(timezone.now() - timedelta(days=200)):
        services.entry_create(agent=agent_a, category="lessons", content="Old lesson")
    run = maintenance.retention_run(project=agent_a.project, dry_run=True)
    assert run.counts["entries_expired"] == 1 and run.pk is None
    assert VaultEntry.objects.get().status == "active" and not RetentionMark.objects.exists()


def test_size_limit_archives_the_least_relevant_items(agent_a, settings):
    settings.MEMORY_AGENT_MAX_BYTES = 1500
    now = timezone.now()
    made = []
    for i in range(10):
        with time_machine.travel(now - timedelta(days=10 - i)):
            made.append(services.entry_create(agent=agent_a, category="lessons", content=f"{i} " + "x" * 198,
                                              importance=0.5))  # fmt: skip
    VaultEntry.objects.filter(pk=made[0].pk).update(importance=1.0, access_count=50)
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=now)
    assert run.counts["entries_archived_for_size"] == 2
    archived = set(VaultEntry.objects.filter(status="archived").values_list("pk", flat=True))
    assert archived == {made[1].pk, made[2].pk}  # the oldest ones, but not the important, often used one
    change = next(c for c in run.changes if c["step"] == "size")
    assert change["details"]["bytes_before"] == 2000 and change["details"]["bytes_after"] == 1600


def test_size_limit_counts_bytes_not_characters(agent_a, settings):
    """MEMORY_AGENT_MAX_BYTES was compared with characters: an agent writing CJK (3 bytes a character)
    or emoji (4) could hold three or four times the limit."""
    settings.MEMORY_AGENT_MAX_BYTES = 1500
    for i in range(10):
        services.entry_create(agent=agent_a, category="lessons", content=f"{i} " + "数" * 98)
    run = maintenance.retention_run(project=agent_a.project, dry_run=False)
    assert run.counts["entries_archived_for_size"] == 2
    change = next(c for c in run.changes if c["step"] == "size")
    assert change["details"]["bytes_before"] == 10 * (2 + 98 * 3)
    assert "bytes of active memory is over MEMORY_AGENT_MAX_BYTES=1500" in change["reason"]


def purge_due(agent, tag: str) -> dict:
    """Old memory of `agent` that a first retention run archived and marked, its marks then moved past
    the grace period, as a real database holds it a month later: what the next run must purge, and
    what it must keep (an entry and a message restored since, a pending and a superseded entry, which
    retention never archives, and an entry it archives only now)."""
    with time_machine.travel(timezone.now() - timedelta(days=200)):
        made = {
            name: services.entry_create(agent=agent, category="lessons", content=f"{tag}: {text}")
            for name, text in [
                ("purged", "the cache warms up in the night job"),
                ("restored", "the build cache lives in the second bucket"),
                ("pending", "the staging database is refreshed on Mondays"),
                ("superseded", "deployments freeze on Friday afternoons"),
            ]
        }
    VaultEntry.objects.filter(pk=made["pending"].pk).update(status="pending")
    VaultEntry.objects.filter(pk=made["superseded"].pk).update(status="superseded")
    session = session_make(
        agent, [f"{tag} old question", f"{tag} old answer", f"{tag} old follow-up"],
        start=timezone.now() - timedelta(days=100), external_id=f"chat-{tag}",
    )  # fmt: skip
    maintenance.retention_run(project=agent.project, dry_run=False)
    services.entry_update(
        entry_id=made["restored"].pk, changes=services.EntryChanges(status="active"), changed_by="t"
    )
    messages = list(Message.objects.filter(session=session).order_by("pk"))
    Message.objects.filter(pk=messages[-1].pk).update(archived=False)  # restored
    RetentionMark.objects.filter(project=agent.project).update(marked_at=F("marked_at") - timedelta(days=31))
    with time_machine.travel(timezone.now() - timedelta(days=200)):
        made["expired_now"] = services.entry_create(
            agent=agent, category="lessons", content=f"{tag}: the queue drains before each release"
        )
    made["messages_purged"], made["message_kept"] = messages[:-1], messages[-1]
    return made


def assert_purged_and_kept(made: dict) -> None:
    assert not VaultEntry.objects.filter(pk=made["purged"].pk).exists()
    assert not EntryVersion.objects.filter(entry_id=made["purged"].pk).exists()
    assert not Message.objects.filter(pk__in=[m.pk for m in made["messages_purged"]]).exists()
    purged = {(a.kind, a.object_id) for a in DeletionAudit.objects.filter(reason="purge")}
    assert {("entry", made["purged"].pk)} | {("message", m.pk) for m in made["messages_purged"]} <= purged
    statuses = dict(
        VaultEntry.objects.filter(
            pk__in=[made[n].pk for n in ("restored", "pending", "superseded", "expired_now")]
        ).values_list("pk", "status")
    )
    assert statuses == {
        made["restored"].pk: "active",
        made["pending"].pk: "pending",
        made["superseded"].pk: "superseded",
        made["expired_now"].pk: "archived",  # its grace period starts now
    }
    assert Message.objects.filter(pk=made["message_kept"].pk, archived=False).exists()


@pytest.mark.django_db(transaction=True)
def test_the_retention_command_purges_what_is_due(agent_a, capsys):
    """Outside a test transaction, as on a server: the purge locked its rows with no transaction around
    them and every real run failed with TransactionManagementError, so nothing was ever purged."""
    made = purge_due(agent_a, "acme")
    call_command("retention")
    out = capsys.readouterr().out
    assert "entries_purged=1" in out and "messages_purged=2" in out and "errors" not in out
    assert_purged_and_kept(made)


@pytest.mark.django_db(transaction=True)
def test_the_retention_api_purges_what_is_due(api, admin_token, agent_a):
    made = purge_due(agent_a, "acme")
    response = api.post("/maintenance/retention", token=admin_token, dry_run="false")
    assert response.status_code == 200, response.content
    counts = response.json()["counts"]
    assert (counts["entries_purged"], counts["messages_purged"], counts["errors"]) == (1, 2, 0)
    assert_purged_and_kept(made)


@pytest.mark.django_db(transaction=True)
def test_the_scheduled_retention_purges_every_project_though_a_purge_fails(
    agent_a, outsider_agent, monkeypatch
):
    """A purge that fails is rolled back alone and noted: the rest of its project and the projects
    after it are purged all the same, and the nightly job finishes."""
    acme, globex = purge_due(agent_a, "acme"), purge_due(outsider_agent, "globex")
    broken = acme["purged"].pk
    erase = retention.entry_erase

    def entry_erase(entry, **kwargs):
        entry_id = entry.pk
        erase(entry, **kwargs)
        if entry_id == broken:  # fails after its deletes: they must be rolled back
            raise RuntimeError("disk full")

    monkeypatch.setattr(retention, "entry_erase", entry_erase)
    summary = retention_scheduled()

    assert [(s["project"], s["counts"]["entries_purged"], s["counts"]["messages_purged"],
             s["counts"]["errors"]) for s in summary] == [("acme", 0, 2, 1), ("globex", 1, 2, 0)]  # fmt: skip
    assert VaultEntry.objects.get(pk=broken).status == "archived"
    assert EntryVersion.objects.filter(entry_id=broken).exists()
    assert RetentionMark.objects.filter(kind="entry", object_id=broken).exists()  # tried again next run
    assert not DeletionAudit.objects.filter(kind="entry", object_id=broken).exists()
    run = CompactionRun.objects.get(project=agent_a.project, trigger="schedule")
    assert run.notes == [f"entry {broken}: failed and skipped (RuntimeError: disk full)"]
    assert_purged_and_kept(globex)


@pytest.mark.django_db(transaction=True)
def test_a_failing_retention_step_is_noted_and_the_other_steps_and_projects_go_on(
    agent_a, outsider_agent, monkeypatch
):
    """An exception out of a step ended the scheduled job: the run was left half recorded and the
    projects after it got no retention that night."""
    acme, globex = purge_due(agent_a, "acme"), purge_due(outsider_agent, "globex")
    update = services.entry_update

    def entry_update(*, entry_id, **kwargs):
        if entry_id == acme["expired_now"].pk:
            raise RuntimeError("lock timeout")
        return update(entry_id=entry_id, **kwargs)

    monkeypatch.setattr(services, "entry_update", entry_update)
    summary = retention_scheduled()

    assert [(s["project"], s["counts"]["entries_purged"], s["counts"]["messages_purged"],
             s["counts"]["errors"]) for s in summary] == [("acme", 1, 2, 1), ("globex", 1, 2, 0)]  # fmt: skip
    run = CompactionRun.objects.get(project=agent_a.project, trigger="schedule")
    assert run.notes == [
        "step retention_step_expire_entries: failed and stopped (RuntimeError: lock timeout)"
    ]
    assert run.duration_ms is not None
    assert VaultEntry.objects.get(pk=acme["expired_now"].pk).status == "active"
    assert_purged_and_kept(globex)


@pytest.mark.django_db(transaction=True)
def test_the_retention_command_says_what_failed_and_exits_non_zero(
    agent_a, outsider_agent, monkeypatch, capsys
):
    """A failed purge printed "errors=1" without saying what failed, and the command exited 0, so a
    cron wrapper or an operator's script saw a clean run."""
    acme, globex = purge_due(agent_a, "acme"), purge_due(outsider_agent, "globex")
    broken = acme["purged"].pk
    erase = retention.entry_erase

    def entry_erase(entry, **kwargs):
        if entry.pk == broken:
            raise RuntimeError("disk full")
        erase(entry, **kwargs)

    monkeypatch.setattr(retention, "entry_erase", entry_erase)
    with pytest.raises(CommandError, match="1 error in project acme"):
        call_command("retention")
    out = capsys.readouterr().out
    assert f"entry {broken}: failed and skipped (RuntimeError: disk full)" in out
    assert "globex: " in out  # the projects after it were still done
    assert_purged_and_kept(globex)


def test_the_retention_report_says_what_happens_to_each_entry(agent_a, capsys):
    """A pending entry was reported "archived, purged after 30 days unless restored": retention never
    archives nor purges a pending, superseded or rejected entry."""
    with time_machine.travel(timezone.now() - timedelta(days=200)):
        made = {
            status: services.entry_create(
                agent=agent_a, category="lessons", content=f"an old lesson that is {status} now"
            )
            for status in ("active", "archived", "pending", "superseded", "rejected")
        }
    for status, entry in made.items():
        VaultEntry.objects.filter(pk=entry.pk).update(status=status)
    call_command("retention", "--dry-run")
    out = capsys.readouterr().out
    assert "entries_expired=2" in out
    assert (
        f"retention expire-entry entry {made['active'].pk}: lessons older than 180 days: archived, "
        "purged after 30 days unless restored"
    ) in out
    assert (
        f"retention expire-entry entry {made['archived'].pk}: lessons older than 180 days: already "
        "archived, purged after 30 days unless restored"
    ) in out
    for status in ("pending", "superseded", "rejected"):
        assert f"entry {made[status].pk}:" not in out

    run = maintenance.retention_run(project=agent_a.project, dry_run=False)
    assert run.counts["entries_expired"] == 2
    marked = set(RetentionMark.objects.values_list("object_id", flat=True))
    assert marked == {made["active"].pk, made["archived"].pk}
    purge = maintenance.retention_run(
        project=agent_a.project, dry_run=False, now=timezone.now() + timedelta(days=31)
    )
    assert purge.counts["entries_purged"] == 2
    assert sorted(VaultEntry.objects.values_list("status", flat=True)) == [
        "pending",
        "rejected",
        "superseded",
    ]


# --- POST /forget -------------------------------------------------------------------------------


def test_forget_by_ids_deletes_with_an_audit_row(api, admin_token, entry_a, entry_b):
    services.entry_update(entry_id=entry_a.pk, changes=services.EntryChanges(content="edited #database"),
                          changed_by="t")  # fmt: skip
    response = api.post("/forget", {"ids": [entry_a.pk, 999999]}, token=admin_token)
    assert response.status_code == 200
    assert response.json() == {
        "count": 1,
        "entries": 1,
        "derived_entries": 0,
        "entries_rewritten": 0,
        "messages": 0,
        "summaries_rewritten": 0,
        "not_found": [999999],
    }
    assert not VaultEntry.objects.filter(pk=entry_a.pk).exists()
    assert not EntryVersion.objects.filter(entry_id=entry_a.pk).exists()
    audit = DeletionAudit.objects.get()
    assert audit.reason == "forget" and audit.criteria["ids"] == [entry_a.pk, 999999]
    assert audit.deleted_by.startswith("token:") and "edited" not in str(audit.criteria)


def test_forget_by_criteria(api, admin_token, agent_a):
    keep = services.entry_create(agent=agent_a, category="lessons", content="keep me #public")
    gone = [
        services.entry_create(agent=agent_a, category="lessons", content=f"secret {i} #sensitive")
        for i in range(3)
    ]
    services.entry_create(agent=agent_a, category="decisions", content="other category #sensitive")
    response = api.post("/forget", {"category": "lessons", "tags": ["sensitive"]}, token=admin_token)
    assert response.json()["count"] == 3
    assert not VaultEntry.objects.filter(pk__in=[e.pk for e in gone]).exists()
    assert VaultEntry.objects.filter(pk=keep.pk).exists() and VaultEntry.objects.count() == 2
    assert DeletionAudit.objects.filter(reason="forget").count() == 3


def test_forget_by_tags_checks_each_tag_and_refuses_a_blank_one(api, admin_token, agent_a):
    """A forget's tags were compared as sent: of any length, and " sensitive" (a space) matched
    nothing. Each is read now as a write stores it, by the same rule; a blank one is refused rather
    than dropped, which would have widened the forget to the agent's every entry."""
    keep = services.entry_create(agent=agent_a, category="lessons", content="keep me #public")
    gone = services.entry_create(agent=agent_a, category="lessons", content="secret #sensitive")
    for tags, message in [
        ([" "], "must not hold a blank tag"),
        (["sensitive", ""], "must not hold a blank tag"),
        (["c++"], "Invalid tag 'c++'"),
        (["a" * 10_000], "Invalid tag 'aaaa"),
        ([f"t{i}" for i in range(65)], "List should have at most 64 items"),
    ]:
        response = api.post("/forget", {"agent": "agent-a", "tags": tags}, token=admin_token)
        assert response.status_code == 422 and message in response.json()["detail"], (tags, response.content)
        assert len(response.json()["detail"]) < 300
    assert VaultEntry.objects.count() == 2
    response = api.post("/forget", {"agent": "agent-a", "tags": [" #Sensitive "]}, token=admin_token)
    assert response.json()["count"] == 1, response.content
    assert (
        not VaultEntry.objects.filter(pk=gone.pk).exists() and VaultEntry.objects.filter(pk=keep.pk).exists()
    )
    assert DeletionAudit.objects.get().criteria["tags"] == ["sensitive"]


def test_forget_messages_in_a_time_range(api, admin_token, agent_a):
    session_make(agent_a, ["yesterday one", "yesterday two"], start=timezone.now() - timedelta(days=1))
    session_make(agent_a, ["today"], external_id="chat-2")
    since = (timezone.now() - timedelta(days=2)).isoformat()
    until = (timezone.now() - timedelta(hours=12)).isoformat()
    body = api.post(
        "/forget", {"kinds": ["messages"], "since": since, "until": until}, token=admin_token
    ).json()
    assert body["messages"] == 2 and Message.objects.count() == 1


def test_forget_and_search_read_one_time_range_alike(api, admin_token, agent_a):
    """`until` was "before" in /search and "at or before" in /forget: a forget with the range a search had
    previewed also deleted what was written at `until` itself, which the preview never showed."""
    at = "2026-03-01T10:00:00Z"
    edge = services.entry_create(agent=agent_a, category="lessons", content="the rollout checklist")
    earlier = services.entry_create(agent=agent_a, category="lessons", content="the rollout plan")
    VaultEntry.objects.filter(pk=edge.pk).update(created_at=timezone.datetime.fromisoformat(at))
    VaultEntry.objects.filter(pk=earlier.pk).update(
        created_at=timezone.datetime.fromisoformat(at) - timedelta(seconds=1)
    )
    since = "2026-02-01T00:00:00Z"
    found = api.get("/search", token=admin_token, q="rollout", since=since, until=at).json()["results"]
    assert [r["id"] for r in found] == [earlier.pk]
    body = api.post("/forget", {"category": "lessons", "since": since, "until": at}, token=admin_token).json()
    assert body["count"] == 1 and list(VaultEntry.objects.values_list("pk", flat=True)) == [edge.pk]
    for path in ("/search", "/forget"):  # an empty range is refused alike
        response = (
            api.get(path, token=admin_token, q="rollout", since=at, until=at)
            if path == "/search"
            else api.post(path, {"category": "lessons", "since": at, "until": at}, token=admin_token)
        )
        assert response.status_code == 422 and "since must be earlier than until" in response.json()["detail"]
    assert VaultEntry.objects.count() == 1


def test_forget_and_search_read_any_utc_offset_as_its_instant(api, admin_token, agent_a):
    """Python reads offsets up to 23:59; PostgreSQL refused those past 15:59 (400 from the database)."""
    from vault.models import VaultEntry

    services.entry_create(agent=agent_a, category="lessons", content="the rollout checklist")
    far_east = (timezone.now() + timedelta(hours=23)).astimezone(timezone.get_fixed_timezone(23 * 60))
    found = api.get("/search", token=admin_token, q="rollout", until=far_east.isoformat())
    assert found.status_code == 200, found.content
    assert len(found.json()["results"]) == 1
    gone = api.get("/search", token=admin_token, q="rollout", since=far_east.isoformat())
    assert gone.status_code == 200 and gone.json()["results"] == []
    body = api.post("/forget", {"category": "lessons", "until": far_east.isoformat()}, token=admin_token)
    assert body.status_code == 200, body.content
    assert body.json()["count"] == 1 and not VaultEntry.objects.exists()


def test_forget_tenancy(api, token_a, read_token_a, outsider_token, project, entry_a, entry_b):
    from vault.models import TokenScope

    assert api.post("/forget", {"ids": [entry_a.pk]}, token=read_token_a).status_code == 403
    writer = services.token_create(project=project, scope=TokenScope.WRITE)[1]
    assert api.post("/forget", {"ids": [entry_a.pk]}, token=writer).status_code == 403
    assert api.post("/forget", {"ids": [entry_a.pk]}, token=outsider_token).json()["not_found"] == [
        entry_a.pk
    ]
    assert api.post("/forget", {"ids": [entry_b.pk]}, token=token_a).json()["not_found"] == [entry_b.pk]
    assert api.post("/forget", {"agent": "agent-b", "category": "lessons"}, token=token_a).status_code == 404
    assert VaultEntry.objects.count() == 2
    assert api.post("/forget", {"ids": [entry_a.pk]}, token=token_a).json()["count"] == 1


@pytest.mark.parametrize(
    "body, message",
    [
        ({}, "Say what to forget"),
        ({"ids": [1], "category": "lessons"}, "not both"),
        (
            {"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
            "since must be earlier than until",
        ),
        ({"kinds": ["messages"], "category": "lessons"}, "entries only"),
        ({"category": "nope"}, "Invalid input"),
    ],
)
def test_forget_rejects_unclear_requests(api, admin_token, entry_a, body, message):
    response = api.post("/forget", body, token=admin_token)
    assert response.status_code == 422 and message in response.json()["detail"]
    assert VaultEntry.objects.count() == 1


def test_api_retention_run_needs_a_project_admin(api, admin_token, token_a, outsider_token, agent_a):
    assert api.post("/maintenance/retention", token=token_a).status_code == 403
    assert api.post("/maintenance/retention", token=outsider_token).json()["project"] == "globex"
    assert api.post("/maintenance/retention", token=admin_token).json()["kind"] == "retention"
    assert api.get("/maintenance/retention", token=admin_token).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_two_size_limits_at_once_archive_the_agents_overflow_once(agent_a, settings):
    """The schedule and `manage.py retention` (or POST /maintenance/retention) at once: the second had
    measured the agent over the limit before the first archived its overflow, waited for its row locks,
    then archived a fifth of what was left too, though the first had brought the agent within the
    limit (10 entries of 200 bytes over 1,700: 4 archived, not 2)."""
    settings.MEMORY_AGENT_MAX_BYTES = 1700
    for i in range(10):
        services.entry_create(agent=agent_a, category="lessons", content=f"{i} " + "x" * 198)
    out = {}

    def second_run():
        try:
            out["run"] = maintenance.retention_run(project=agent_a.project, dry_run=False)
        finally:
            connection.close()

    with transaction.atomic():
        first = maintenance.retention_run(project=agent_a.project, dry_run=False)
        thread = threading.Thread(target=second_run)
        thread.start()
        until_another_connection_waits_for_a_lock()
    thread.join(20)
    assert first.counts["entries_archived_for_size"] == 2
    assert out["run"].counts["entries_archived_for_size"] == 0
    assert VaultEntry.objects.filter(status="archived").count() == 2


def test_an_entry_restored_then_archived_again_by_a_curator_is_not_purged(agent_a):
    """Retention archives an expired entry and purges it after the grace period "unless it was
    restored". An entry a curator restored and then archived again by hand within the grace period
    (archive: kept, out of the way; undone at will) was deleted for good with its history, as if
    retention had archived it: the purge looked at its status only. A change by anyone but retention
    since the mark now drops the mark; retention marks the entry again when it expires again."""
    start = timezone.now()
    with time_machine.travel(start - timedelta(days=200)):
        kept = services.entry_create(agent=agent_a, category="lessons", content="Lesson a curator keeps")
        purged = services.entry_create(agent=agent_a, category="lessons", content="Lesson nobody wants")
    maintenance.retention_run(project=agent_a.project, dry_run=False, now=start)
    assert VaultEntry.objects.get(pk=kept.pk).status == "archived"
    with time_machine.travel(start + timedelta(days=5)):
        for status in ("active", "archived"):
            services.entry_update(
                entry_id=kept.pk, changes=services.EntryChanges(status=status), changed_by="curator"
            )

    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=start + timedelta(days=31))
    assert run.counts["entries_purged"] == 1
    assert not VaultEntry.objects.filter(pk=purged.pk).exists()
    assert VaultEntry.objects.get(pk=kept.pk).status == "archived"
    assert EntryVersion.objects.filter(entry_id=kept.pk).count() == 3
    assert not RetentionMark.objects.filter(object_id=kept.pk).exists()
