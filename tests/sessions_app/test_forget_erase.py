"""Forgetting a message erases its text everywhere it was copied: the agent's daily note (and that
note's version history and queued exchanges), the session state the write-ahead scan took from it, and
what search finds; the deletion audit records the erasure without the text."""

import importlib
import io
import zipfile
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from memoryproject import maintenance
from memoryproject.schedules import schedules_declared
from search.models import Embedding
from sessions_app import services as sessions_services
from sessions_app.models import Message, Session, SessionStateEntry
from vault import services as vault_services
from vault.models import DeletionAudit, QueuedNoteAppend, WorkspaceFile, WorkspaceFileVersion
from vault.selectors import daily_note_path


def log(api, token, pairs, session="s"):
    messages = []
    for n, (user, reply) in enumerate(pairs):
        messages += [
            {"id": f"{session}-u{n}", "role": "user", "text": user},
            {"id": f"{session}-a{n}", "role": "assistant", "text": reply},
        ]
    response = api.post("/agents/agent-a/messages", {"session": session, "messages": messages}, token=token)
    assert response.status_code == 200, response.content
    return messages


def note_text(api, token):
    path = daily_note_path(timezone.localdate())
    response = api.get(f"/agents/agent-a/files/{path}", token=token)
    assert response.status_code == 200, response.content
    return response.json()["content"]


def forget(api, admin_token, *client_ids):
    ids = list(Message.objects.filter(client_id__in=client_ids).values_list("pk", flat=True))
    response = api.post("/forget", {"message_ids": ids}, token=admin_token)
    assert response.status_code == 200, response.content
    return response.json()


def test_it_erases_a_forgotten_message_from_the_daily_note(api, admin_token, token_a, agent_a, settings):
    """The message row went, but its exchange stayed in memory/YYYY-MM-DD.md, which the recovery block
    reads: the forgotten text came back in the next context."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker"), ("deploy on friday", "friday it is")])
    assert "4417" in note_text(api, token_a)
    assert forget(api, admin_token, "s-u0")["messages"] == 1
    text = note_text(api, token_a)
    assert "4417" not in text
    assert "noted the locker" in text and "deploy on friday" in text  # the rest of the note stays
    assert "[forgotten]" in text
    searched = api.get("/search?q=4417&kinds=files,messages&mode=lexical", token=token_a).json()
    assert searched["results"] == [], [(r["kind"], r["snippet"]) for r in searched["results"]]


def test_it_erases_the_text_from_the_notes_version_history(api, admin_token, token_a, agent_a, settings):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker")])
    path = daily_note_path(timezone.localdate())
    edited = api.post(
        f"/agents/agent-a/files/{path}/edit", {"old_text": "noted", "new_text": "written down"}, token=token_a
    )
    assert edited.status_code == 200, edited.content
    assert WorkspaceFileVersion.objects.filter(content__contains="4417").exists()
    forget(api, admin_token, "s-u0")
    assert not WorkspaceFileVersion.objects.filter(content__contains="4417").exists()
    assert not WorkspaceFile.objects.filter(content__contains="4417").exists()


def test_it_erases_a_queued_exchange_and_keeps_the_others(api, admin_token, token_a, agent_a, settings):
    """An exchange queued for the note's next write (QueuedNoteAppend) was written after the forget."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 3600
    log(api, token_a, [("hello there", "hi")], session="s1")
    log(api, token_a, [("my locker code is 4417", "noted the locker")], session="s2")
    log(api, token_a, [("deploy on friday", "friday it is")], session="s3")
    assert QueuedNoteAppend.objects.exists()
    forget(api, admin_token, "s2-u0")
    assert "4417" not in str(list(QueuedNoteAppend.objects.values_list("parts", flat=True)))
    text = note_text(api, token_a)  # the read writes the queue out
    assert "4417" not in text
    assert "noted the locker" in text and "deploy on friday" in text and "hello there" in text


def test_it_erases_a_reply_and_leaves_a_short_text_elsewhere_alone(
    api, admin_token, token_a, agent_a, settings
):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("is it ok", "ok"), ("and the ok button", "fine")])
    forget(api, admin_token, "s-a0")
    text = note_text(api, token_a)
    assert "**Agent:** [forgotten]" in text
    assert "is it ok" in text and "and the ok button" in text


def test_it_erases_the_session_state_taken_from_the_message(api, admin_token, token_a, agent_a, settings):
    """The write-ahead scan's facts copy the user's words; the recovery block lists them."""
    log(api, token_a, [("I prefer the locker code 4417, remember that", "ok")])
    message = Message.objects.get(client_id="s-u0")
    assert SessionStateEntry.objects.filter(message=message).exists()
    forget(api, admin_token, "s-u0")
    assert not SessionStateEntry.objects.filter(text__contains="4417").exists()


def test_the_audit_records_the_erasure_without_the_text(api, admin_token, token_a, agent_a, settings):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker")])
    forget(api, admin_token, "s-u0")
    audits = list(DeletionAudit.objects.values())
    assert audits and "4417" not in str(audits)
    assert any(a["kind"] == "message" for a in audits)


def test_a_reply_is_no_longer_found_by_the_text_it_answered(api, admin_token, token_a, agent_a):
    """A reply's reply_to_text (its parent's text, searched at the lowest weight) kept the forgotten
    words searchable: /search?q=4417 found "noted the locker"."""
    log(api, token_a, [("my locker code is 4417", "noted the locker")])
    forget(api, admin_token, "s-u0")
    assert Message.objects.get(client_id="s-a0").reply_to_text == ""
    searched = api.get("/search?q=4417&kinds=messages&mode=lexical", token=token_a).json()
    assert searched["results"] == []


def test_the_retention_purge_erases_the_daily_note_too(api, token_a, agent_a, settings):
    from datetime import timedelta

    import time_machine

    from memoryproject import maintenance

    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    then = timezone.now() - timedelta(days=400)
    with time_machine.travel(then, tick=True):
        log(api, token_a, [("my locker code is 4417", "noted the locker")])
    now = timezone.now()
    maintenance.retention_run(project=agent_a.project, dry_run=False, now=now)
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=now + timedelta(days=60))
    assert run.counts["messages_purged"] == 2
    note = WorkspaceFile.objects.get(path=daily_note_path(timezone.localtime(then).date()))
    assert "4417" not in note.content and "noted the locker" not in note.content


def test_an_export_after_the_forget_holds_none_of_the_text(api, admin_token, token_a, agent_a, settings):
    """The export writes out the notes, their versions and the queue: none may bring the text back."""
    import io
    import zipfile

    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker")], session="s1")
    path = daily_note_path(timezone.localdate())
    api.post(f"/agents/agent-a/files/{path}/edit", {"old_text": "noted", "new_text": "kept"}, token=token_a)
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 3600
    log(api, token_a, [("and 4417 opens it", "right")], session="s2")
    forget(api, admin_token, "s1-u0", "s2-u0")
    response = api.get("/agents/agent-a/export", token=token_a)
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(response.getvalue()))
    held = [name for name in archive.namelist() if b"4417" in archive.read(name)]
    assert held == []
    assert any(b"[forgotten]" in archive.read(name) for name in archive.namelist())


def test_it_reads_only_the_notes_of_the_days_of_the_messages_session(
    api, admin_token, token_a, agent_a, settings
):
    """A message is logged on the day of a reply in its session: the notes of that day are erased, and
    the notes of other days are not read (the nightly purge erases thousands of old messages)."""
    from datetime import timedelta

    import time_machine

    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    then = timezone.now() - timedelta(days=3)
    with time_machine.travel(then, tick=True):
        log(api, token_a, [("my locker code is 4417", "noted the locker")], session="old")
    log(api, token_a, [("my locker code is 4417", "noted again")], session="new")
    forget(api, admin_token, "old-u0")
    old_note = WorkspaceFile.objects.get(path=daily_note_path(timezone.localtime(then).date()))
    assert "4417" not in old_note.content and "[forgotten]" in old_note.content
    assert "4417" in note_text(api, token_a)  # another message's words, another day's note


def _embedded(file: WorkspaceFile, agent) -> Embedding:
    """An embedding of the file's present text, as the refresh job stores it (the vector itself, a
    pgvector column where the extension exists, plays no part here)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT md5(path || E'\\n\\n' || content) FROM vault_workspacefile WHERE id = %s", [file.pk]
        )
        source_hash = cursor.fetchone()[0]
    return Embedding.objects.create(
        kind="file", object_id=file.pk, project_id=file.project_id, agent=agent, model="m", dimensions=3,
        source_hash=source_hash,
    )  # fmt: skip


def test_the_notes_old_vector_goes_with_the_text(api, admin_token, token_a, agent_a, settings):
    """The erased note kept its embedding until the refresh job saw it had changed: semantic search could
    rank the note for the forgotten text's meaning meanwhile. Files whose text did not change keep theirs."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker")])
    note = WorkspaceFile.objects.get(agent=agent_a, path=daily_note_path(timezone.localdate()))
    other = WorkspaceFile.objects.filter(agent=agent_a).exclude(pk=note.pk).first()
    assert other is not None
    _embedded(note, agent_a)
    kept = _embedded(other, agent_a)
    forget(api, admin_token, "s-u0")
    assert list(Embedding.objects.filter(kind="file").values_list("pk", flat=True)) == [kept.pk]


def test_the_retention_purge_drops_the_notes_old_vector_too(api, token_a, agent_a, settings):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    then = timezone.now() - timedelta(days=400)
    with time_machine.travel(then, tick=True):
        log(api, token_a, [("my locker code is 4417", "noted the locker")])
    note = WorkspaceFile.objects.get(path=daily_note_path(timezone.localtime(then).date()))
    _embedded(note, agent_a)
    now = timezone.now()
    maintenance.retention_run(project=agent_a.project, dry_run=False, now=now)
    assert Embedding.objects.filter(kind="file", object_id=note.pk).exists()  # archived, not yet purged
    run = maintenance.retention_run(project=agent_a.project, dry_run=False, now=now + timedelta(days=60))
    assert run.counts["messages_purged"] == 2
    assert not Embedding.objects.filter(kind="file", object_id=note.pk).exists()


def append(api, token, *messages, session="s"):
    response = api.post(
        "/agents/agent-a/messages", {"session": session, "messages": list(messages)}, token=token
    )
    assert response.status_code == 200, response.content


def conversation(api, token, session="s"):
    response = api.get(f"/agents/agent-a/messages?session={session}&limit=100", token=token)
    assert response.status_code == 200, response.content
    return [m["client_id"] for m in response.json()["items"]]


def test_it_keeps_the_messages_before_a_forgotten_one_in_the_conversation(api, admin_token, token_a, agent_a):
    """A message is its successor's parent: forgetting one in the middle cut the conversation there,
    and the messages before it vanished from every read of the session with it."""
    log(api, token_a, [("first question", "first answer"), ("second question", "second answer")])
    forget(api, admin_token, "s-a0")
    assert conversation(api, token_a) == ["s-u0", "s-u1", "s-a1"]
    forget(api, admin_token, "s-u1", "s-a1")  # several at once, in a row
    assert conversation(api, token_a) == ["s-u0"]


def test_it_keeps_a_branch_whose_head_or_branch_point_is_forgotten(api, admin_token, token_a, agent_a):
    """A branch's head forgotten left the branch empty, its other messages out of every read."""
    log(api, token_a, [("first question", "first answer"), ("second question", "second answer")])
    created = api.post(
        "/agents/agent-a/sessions/s/branches", {"name": "alt", "message": "s-a0"}, token=token_a
    )
    assert created.status_code == 201, created.content
    checkout = api.post("/agents/agent-a/sessions/s/checkout", {"branch": "alt"}, token=token_a)
    assert checkout.status_code == 200, checkout.content
    append(
        api,
        token_a,
        {"id": "x-u", "role": "user", "text": "idea"},
        {"id": "x-a", "role": "assistant", "text": "ok"},
    )
    forget(api, admin_token, "x-a", "s-a0")
    assert conversation(api, token_a) == ["s-u0", "x-u"]
    branches = {b["name"]: b for b in api.get("/agents/agent-a/sessions/s/branches", token=token_a).json()}
    assert branches["alt"]["message_count"] == 2 and branches["main"]["message_count"] == 3
    append(api, token_a, {"id": "x-u2", "role": "user", "text": "go on"})
    assert conversation(api, token_a) == ["s-u0", "x-u", "x-u2"]


def test_it_forgets_a_message_of_an_archived_session(api, admin_token, token_a, agent_a, settings):
    """An archived session's messages are in cold storage: a forget by id answered not_found, by
    criteria found nothing, and search, the daily note and a restore still gave the text back."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my passport is XK447781", "noted the passport"), ("deploy on friday", "ok")])
    ids = {m.client_id: m.pk for m in Message.objects.all()}
    assert api.post("/agents/agent-a/sessions/s/archive", token=token_a).status_code == 200
    answer = api.post("/forget", {"message_ids": [ids["s-u0"], 999999]}, token=admin_token).json()
    assert (answer["messages"], answer["not_found"]) == (1, [999999])
    searched = api.get(
        "/search?q=XK447781&status=all&kinds=files,messages&mode=lexical", token=token_a
    ).json()
    assert searched["results"] == [], [(r["kind"], r["snippet"]) for r in searched["results"]]
    stats = api.get("/agents/agent-a/sessions/s/stats", token=token_a).json()
    assert stats["status"] == "archived" and stats["messages"] == 3
    assert api.post("/agents/agent-a/sessions/s/restore", token=token_a).status_code == 200
    assert conversation(api, token_a) == ["s-a0", "s-u1", "s-a1"]
    assert DeletionAudit.objects.filter(kind="message", object_id=ids["s-u0"]).count() == 1


def test_a_forget_by_criteria_reaches_archived_sessions(api, admin_token, token_a, agent_a):
    log(api, token_a, [("my passport is XK447781", "noted the passport")], session="old")
    assert api.post("/agents/agent-a/sessions/old/archive", token=token_a).status_code == 200
    log(api, token_a, [("deploy on friday", "ok")], session="new")
    forgotten = {"agent": "agent-a", "kinds": ["messages"]}
    answer = api.post("/forget", forgotten, token=admin_token).json()
    assert answer["messages"] == 4
    assert api.post("/agents/agent-a/sessions/old/restore", token=token_a).status_code == 200
    assert conversation(api, token_a, session="old") == []


def test_it_erases_a_forgotten_message_from_the_compaction_summary(api, admin_token, token_a, agent_a):
    """The heuristic summary that replaced compacted messages quotes the user's requests, facts and
    decisions: a forgotten message's text stayed there, in the conversation a model reads and in an
    export."""
    filler = [(f"filler question {n} about the pipeline", f"answer {n}") for n in range(12)]
    secret = ("my locker code is 88172, we decided to use locker 88172", "noted")
    log(api, token_a, [*filler[:5], secret, *filler[5:]])
    compacted = api.post(
        "/agents/agent-a/sessions/s/compact", {"force": True, "max_input_tokens": 1000}, token=token_a
    )
    assert compacted.status_code == 200 and compacted.json()["compacted"], compacted.content
    assert "88172" in compacted.json()["summary"]["text"]
    forget(api, admin_token, "s-u5")
    response = api.get("/agents/agent-a/messages?session=s&limit=100", token=token_a)
    summary = next(m["text"] for m in response.json()["items"] if m["text"].startswith("[Conversation"))
    assert "88172" not in summary and "[forgotten]" in summary
    assert "filler question 4 about the pipeline" in summary  # the rest of the summary stays


@pytest.mark.parametrize("summary_tokens", [1000, 298])
def test_it_erases_a_quote_the_summary_cut_off_midway(
    api, admin_token, token_a, agent_a, settings, summary_tokens
):
    """The summary is cut to its length limit (1,200 characters, marked "...", or
    MEMORY_COMPACT_SUMMARY_TOKENS, after its last whole sentence): a forgotten message's quote cut there
    was no whole line of it, and its start stayed in the conversation and the export."""
    settings.MEMORY_COMPACT_SUMMARY_TOKENS = summary_tokens
    filler = [(f"filler question {n} about the pipeline " + "and the staging cluster rollout " * 4, f"answer {n}")
              for n in range(12)]  # fmt: skip
    filler[1] = ("my name is Ana Beatriz Duarte and I prefer dark roast coffee in the morning before standup",
                 "ok")  # fmt: skip
    secret = (
        "my locker code is 88172. The spare key sits in the blue drawer. Room 4 has the window",
        "noted",
    )
    log(api, token_a, [*filler[:10], secret, *filler[10:]])
    compacted = api.post(
        "/agents/agent-a/sessions/s/compact", {"force": True, "max_input_tokens": 1000}, token=token_a
    )
    assert compacted.status_code == 200 and compacted.json()["compacted"], compacted.content
    last_line = compacted.json()["summary"]["text"].split("\n")[-1]
    # cut midway, after "drawer." (298) or marked (1000): no quote whole, no fact the scan found in it
    assert last_line.startswith("- my locker code is 88172. The spare key sits in the blue drawer."), (
        last_line
    )
    assert secret[0] not in last_line
    forget(api, admin_token, "s-u10")
    response = api.get("/agents/agent-a/messages?session=s&limit=100", token=token_a)
    summary = next(m["text"] for m in response.json()["items"] if m["text"].startswith("[Conversation"))
    assert "88172" not in summary and summary.endswith("\n- [forgotten]")
    assert "filler question 9 about the pipeline" in summary  # the rest of the summary stays
    export = api.get("/agents/agent-a/export", token=token_a)
    assert export.status_code == 200
    with zipfile.ZipFile(io.BytesIO(b"".join(export.streaming_content))) as archive:
        assert not [name for name in archive.namelist() if b"88172" in archive.read(name)]


def test_a_short_last_line_that_begins_a_forgotten_text_is_kept(api, admin_token, token_a, agent_a):
    """A cut quote is matched only from SUMMARY_CUT_QUOTE_MIN_CHARS characters on: a short last line that
    begins the forgotten text ("- deploy", another message's request) is no cut quote of it."""
    pairs = [(f"question {n} about the pipeline", f"answer {n}") for n in range(13)]
    pairs[4] = ("deploy the ledger service to staging on friday at noon", "ok")
    pairs[10] = ("deploy", "on it")
    log(api, token_a, pairs)
    compacted = api.post(
        "/agents/agent-a/sessions/s/compact", {"force": True, "max_input_tokens": 1000}, token=token_a
    )
    assert compacted.status_code == 200 and compacted.json()["compacted"], compacted.content
    assert compacted.json()["summary"]["text"].endswith("\n- deploy")
    forget(api, admin_token, "s-u4")
    response = api.get("/agents/agent-a/messages?session=s&limit=100", token=token_a)
    summary = next(m["text"] for m in response.json()["items"] if m["text"].startswith("[Conversation"))
    assert "ledger" not in summary and "- [forgotten]\n" in summary and summary.endswith("\n- deploy")


def test_a_session_the_lifecycle_deletes_takes_its_exchanges_out_of_the_daily_notes(
    api, token_a, agent_a, settings
):
    """Retention deleted the session, its messages and its archive, but its exchanges stayed in the
    daily notes, which the recovery block, consolidation, search and exports read for good."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker")], session="old")
    log(api, token_a, [("deploy on friday", "friday it is")], session="kept")
    assert "4417" in note_text(api, token_a)
    assert api.post("/agents/agent-a/sessions/old/archive", token=token_a).status_code == 200
    later = timezone.now() + timedelta(days=settings.MEMORY_SESSION_RETENTION_DAYS + 1)
    Session.objects.filter(external_id="kept").update(last_activity_at=later)
    assert sessions_services.lifecycle_run(now=later)["deleted"] == 1
    text = note_text(api, token_a)
    assert "4417" not in text and "noted the locker" not in text
    assert "deploy on friday" in text and "friday it is" in text
    versions = WorkspaceFileVersion.objects.filter(file__path=daily_note_path(timezone.localdate()))
    assert not [v.pk for v in versions if "4417" in v.content]


def test_the_scheduled_lifecycle_drops_the_old_vector_of_a_note_it_erased(api, token_a, agent_a, settings):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker")], session="old")
    assert api.post("/agents/agent-a/sessions/old/archive", token=token_a).status_code == 200
    note = WorkspaceFile.objects.get(agent=agent_a, path=daily_note_path(timezone.localdate()))
    other = WorkspaceFile.objects.filter(agent=agent_a).exclude(pk=note.pk).first()
    _embedded(note, agent_a)
    kept = _embedded(other, agent_a)
    (spec,) = [s for s in schedules_declared() if s["name"].startswith("sessions: lifecycle")]
    module, name = spec["func"].rsplit(".", 1)
    with time_machine.travel(timezone.now() + timedelta(days=settings.MEMORY_SESSION_RETENTION_DAYS + 1)):
        assert getattr(importlib.import_module(module), name)()["deleted"] == 1
    assert list(Embedding.objects.filter(kind="file").values_list("pk", flat=True)) == [kept.pk]


def test_the_lifecycle_drops_old_note_vectors_only_of_the_agents_it_deleted_from(
    api, token_a, agent_a, agent_b, outsider_agent, settings
):
    """A lifecycle pass that deleted a session dropped the stale vectors of every note of every project:
    a note edited elsewhere (another agent, another project), which keeps the vectors of its unchanged
    chunks until the refresh job embeds it again, lost them, and each project's notes were read."""
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    log(api, token_a, [("my locker code is 4417", "noted the locker")], session="old")
    assert api.post("/agents/agent-a/sessions/old/archive", token=token_a).status_code == 200
    note = WorkspaceFile.objects.get(agent=agent_a, path=daily_note_path(timezone.localdate()))
    _embedded(note, agent_a)
    elsewhere = []
    for agent in (agent_b, outsider_agent):  # the same project's other agent, and another project's
        edited, _ = vault_services.file_write(
            agent=agent, path="MEMORY.md", content="- tea\n", changed_by="t"
        )
        elsewhere.append(_embedded(edited, agent).pk)
        vault_services.file_write(
            agent=agent, path="MEMORY.md", content="- tea\n- and cake\n", changed_by="t"
        )
    later = timezone.now() + timedelta(days=settings.MEMORY_SESSION_RETENTION_DAYS + 1)
    assert maintenance.lifecycle_run(now=later)["deleted"] == 1
    assert sorted(Embedding.objects.filter(kind="file").values_list("pk", flat=True)) == sorted(elsewhere)
