"""An export carries what an agent's memory went through, not only where it ended: entries' edit history,
the project context's and workspace files' earlier texts, sessions' state rows, working buffer and status
transitions; and the `session-{id}` tags of extracted entries name the sessions stored by the import."""

import io
import json
from datetime import timedelta
from pathlib import Path

from django.core.management import call_command
from django.db.models import F

from sessions_app import services as session_services
from sessions_app import transfer
from sessions_app.models import Message, Session, SessionStateEntry, SessionTransition, WorkingBufferEntry
from sessions_app.selectors import archive_messages, archive_payload
from tests.conftest import _token
from tests.sessions_app.test_export_api import agent_memory, import_into, unzip
from vault import services
from vault.models import EntryVersion, ProjectContextVersion, VaultEntry, WorkspaceFileVersion

IMPORTER = "import"  # the author of what an import writes itself (its own audit trail here)


def export_to(path: Path, project) -> Path:
    call_command("export_memory_dir", str(path), "--project", project.slug, stdout=io.StringIO())
    return path


def _chats(project) -> dict[int, str]:
    return {s.pk: s.external_id for s in Session.objects.filter(project=project)}


def _messages(project) -> dict[int, str]:
    """Every message id of the project (those in archives too) -> its client id (or export:<id>)."""
    names = {
        pk: client for pk, client in Message.objects.filter(project=project).values_list("pk", "client_id")
    }
    for session in Session.objects.filter(project=project):
        for row in archive_messages(session):
            names[row["id"]] = row["client_id"] or f"export:{row['id']}"
    return names


def histories(project) -> dict[str, list]:
    """Every history of the project, ids replaced by what names them in both projects (an entry's
    content, a session's chat id, a message's client id); what an import wrote itself is left out."""
    chats, names = _chats(project), _messages(project)
    entries = dict(VaultEntry.objects.filter(project=project).values_list("pk", "content"))
    state_links = {}
    for session in Session.objects.filter(project=project):
        state_links |= {int(k): v for k, v in archive_payload(session).get("state", {}).items()}
    return {
        "entries": sorted(
            (entries.get(v.entry_id), v.action, v.category, v.content, v.tags, v.status, v.importance)
            + (v.changed_by, v.changed_at)
            for v in EntryVersion.objects.filter(agent__project=project).exclude(changed_by=IMPORTER)
        ),
        "context": sorted(
            ProjectContextVersion.objects.filter(project=project)
            .exclude(changed_by=IMPORTER)
            .values_list("content", "changed_by", "changed_at")
        ),
        "files": sorted(
            WorkspaceFileVersion.objects.filter(file__project=project)
            .exclude(changed_by=IMPORTER)
            .values_list("file__path", "action", "content", "changed_by", "changed_at")
        ),
        "state": sorted(
            (
                chats[s.session_id],
                names.get(s.message_id or state_links.get(s.pk)),
                s.category,
                s.text,
                s.trigger,
                s.durable,
                entries.get(s.vault_entry_id),
                s.created_at,
            )
            for s in SessionStateEntry.objects.filter(project=project)
        ),
        "buffer": sorted(
            (chats[b.session_id], names.get(b.message_id), b.side, b.text, b.created_at)
            for b in WorkingBufferEntry.objects.filter(session__project=project)
        ),
        "transitions": sorted(
            (chats.get(t.session_id), t.from_status, t.to_status, t.reason, t.by, t.at)
            for t in SessionTransition.objects.filter(project=project).exclude(by=IMPORTER)
        ),
        "sessions": sorted(
            (s.external_id, s.buffer_started_at, s.status_changed_at, s.restored_at)
            for s in Session.objects.filter(project=project)
            if s.status != "archived"  # the import's own archiving sets the date it archived it
        ),
    }


def memory_with_history(api, token_a, agent_a, project):
    """agent_memory's entries and sessions, plus an entry edited by two people, deleted and restored,
    the project context and a workspace file rewritten, a fact the write-ahead scan keeps, and a
    working buffer."""
    agent_memory(api, token_a, agent_a)
    entry = services.entry_create(agent=agent_a, category="lessons", content="Cache keys need a vesion")
    services.entry_update(
        entry_id=entry.pk,
        changes=services.EntryChanges(content="Cache keys need a version"),
        changed_by="alice",
    )
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(tags=["cache"], importance=0.8), changed_by="bob"
    )
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    services.entry_restore_deleted(entry_id=entry.pk, changed_by="dave")
    services.project_context_set(project=project, content="# Payments\n", changed_by="alice")
    services.project_context_set(project=project, content="# Payments v2\n", changed_by="bob")
    services.file_write(agent=agent_a, path="MEMORY.md", content="- first\n", changed_by="alice")
    services.file_write(agent=agent_a, path="MEMORY.md", content="- second\n", changed_by="bob")
    body = api.post(
        "/agents/agent-a/messages",
        {"session": "chat-3", "messages": [{"id": "w1", "role": "user", "text": "My name is Bobur."}]},
        token=token_a,
    ).json()
    chat = Session.objects.get(pk=body["session"]["id"])
    message = Message.objects.get(session=chat, client_id="w1")
    for side, text in (("human", "My name is Bobur."), ("agent", "Greeted Bobur")):
        WorkingBufferEntry.objects.create(
            session=chat, message_id=message.pk, side=side, text=text, created_at=message.created_at
        )
    Session.objects.filter(pk=chat.pk).update(buffer_started_at=message.created_at)
    # A session restored from an archive says when (its last activity stays that of its messages).
    Session.objects.filter(project=project, external_id="chat-1").update(
        restored_at=message.created_at - timedelta(hours=1)
    )
    session_services.session_close(agent=agent_a, session=chat, changed_by="closer")
    assert SessionStateEntry.objects.filter(session=chat).exists()
    assert SessionTransition.objects.filter(agent=agent_a).count() >= 2


def test_export_then_import_gives_back_every_history(tmp_path, api, project, agent_a, token_a, target):
    """Moving a team to a new server lost each entry's edit history (GET /entries/{id}/history came back
    empty), the project context's and workspace files' earlier texts, and sessions' state rows, working
    buffer and status transitions. The export now carries them (`.versions.json`,
    `.project-versions.json`, the session files) and the import attaches them to what it stores, with
    their authors and dates; a second import adds nothing."""
    memory_with_history(api, token_a, agent_a, project)
    source = histories(project)
    assert all(source.values()), source
    assert any(row[6] for row in source["state"]), "a durable fact names the entry it wrote"
    folder = export_to(tmp_path / "out", project)
    dry = transfer.import_memory_dir(path=folder, project=target, dry_run=True)
    assert dry.counts["entry versions imported"] and dry.counts["session state rows imported"], dry.summary()
    assert not EntryVersion.objects.filter(agent__project=target).exists()
    report = transfer.import_memory_dir(path=folder, project=target)
    assert histories(target) == source, report.summary()
    assert report.problems == [], report.summary()

    counts = {
        model: model.objects.count()
        for model in (
            EntryVersion,
            ProjectContextVersion,
            WorkspaceFileVersion,
            SessionStateEntry,
            WorkingBufferEntry,
            SessionTransition,
        )
    }
    again = transfer.import_memory_dir(path=folder, project=target)
    assert {model: model.objects.count() for model in counts} == counts, again.summary()
    assert not [key for key, value in again.counts.items() if value and key.endswith(" imported")], (
        again.summary()
    )


def test_the_api_zip_carries_the_histories_too(tmp_path, api, project, agent_a, token_a, target):
    memory_with_history(api, token_a, agent_a, project)
    folder = unzip(api.get("/agents/agent-a/export", token=token_a), tmp_path / "zip")
    summary = import_into(folder, target)
    assert histories(target) == histories(project), summary
    shown = api.get(
        f"/entries/{VaultEntry.objects.get(project=project, content='Cache keys need a version').pk}/history",
        token=token_a,
    ).json()
    assert len(shown) >= 4


def test_an_export_made_before_the_histories_still_imports(tmp_path, api, project, agent_a, token_a, target):
    memory_with_history(api, token_a, agent_a, project)
    folder = export_to(tmp_path / "out", project)
    (folder / ".project-versions.json").unlink()
    (folder / "agent-a" / ".versions.json").unlink()
    for path in (folder / "agent-a" / "sessions").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        dates = ("buffer_started_at", "status_changed_at", "restored_at")
        for key in ("state", "buffer", "transitions", *dates):
            data.pop(key)
        path.write_text(json.dumps(data), encoding="utf-8")
    report = transfer.import_memory_dir(path=folder, project=target)
    assert report.problems == [], report.summary()
    assert sorted(VaultEntry.objects.filter(project=target).values_list("content", flat=True)) == sorted(
        VaultEntry.objects.filter(project=project).values_list("content", flat=True)
    )
    assert Session.objects.filter(project=target).count() == Session.objects.filter(project=project).count()
    assert not EntryVersion.objects.filter(agent__project=target).exclude(changed_by=IMPORTER).exists()


def test_a_malformed_history_is_reported_not_fatal(tmp_path, api, project, agent_a, token_a, target):
    """A version or a row of the wrong kind is left out and reported; the rest of the history, and the
    rest of the export, is imported."""
    memory_with_history(api, token_a, agent_a, project)
    folder = export_to(tmp_path / "out", project)
    path = folder / "agent-a" / ".versions.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    entry_id, versions = next(iter(data["entries"].items()))
    versions.append({"action": "bogus", "content": 3, "changed_at": 12})
    data["entries"]["nope"] = "not a list"
    data["files"]["MEMORY.md"].append(["not", "a", "version"])
    path.write_text(json.dumps(data), encoding="utf-8")
    (folder / ".project-versions.json").write_text('{"format": 1, "versions": "none"}', encoding="utf-8")
    session_file = next(
        p for p in (folder / "agent-a" / "sessions").glob("*.json") if json.loads(p.read_text())["state"]
    )
    data = json.loads(session_file.read_text(encoding="utf-8"))
    data["state"].append({"category": 5, "text": None})
    data["buffer"] = "nope"
    data["transitions"].append({"from": "idle", "to": "active", "at": "yesterday"})
    session_file.write_text(json.dumps(data), encoding="utf-8")

    report = transfer.import_memory_dir(path=folder, project=target)
    problems = "\n".join(report.problems)
    assert ".versions.json (entries): 2 version(s) not readable" in problems, problems
    assert ".versions.json (files): 1 version(s) not readable" in problems, problems
    assert ".project-versions.json: 1 version(s) not readable" in problems, problems
    assert "3 state, buffer or transition row(s) of the wrong kind; ignored" in problems, problems
    assert report.counts["entry versions imported"] == len(histories(project)["entries"])
    assert report.counts["file versions imported"] == len(histories(project)["files"])
    assert SessionStateEntry.objects.filter(project=target).count() == len(histories(project)["state"])
    assert (
        VaultEntry.objects.filter(project=target).count()
        == VaultEntry.objects.filter(project=project).count()
    )


def test_session_tags_name_the_sessions_the_import_stored(tmp_path, api, project, agent_a, token_a, target):
    """Entries extracted from a session carry `session-{id}`, the id on the server that exported them:
    imported, the tag named another session here (or another agent's). It now names the session the
    import stored from that session's file; a tag whose session is not in the export is kept, counted."""
    agent_memory(api, token_a, agent_a)
    chat = Session.objects.get(agent=agent_a, external_id="chat-1")
    tagged = VaultEntry.objects.filter(agent=agent_a, tags__contains=[f"session-{chat.pk}"])
    assert tagged.exists()
    services.entry_create(
        agent=agent_a, category="lessons", content="Purged long ago", tags=["session-987654"]
    )
    report = transfer.import_memory_dir(path=export_to(tmp_path / "out", project), project=target)
    here = Session.objects.get(project=target, external_id="chat-1")
    assert here.pk != chat.pk
    for entry in tagged:
        imported = VaultEntry.objects.get(project=target, content=entry.content)
        assert f"session-{here.pk}" in imported.tags and f"session-{chat.pk}" not in imported.tags, (
            imported.tags
        )
    assert VaultEntry.objects.get(project=target, content="Purged long ago").tags == ["session-987654"]
    assert report.counts["session tags whose session is not in the export (kept as is)"] == 1

    before = sorted(VaultEntry.objects.filter(project=target).values_list("pk", "tags", "updated_at"))
    again = transfer.import_memory_dir(path=export_to(tmp_path / "again", project), project=target)
    assert sorted(VaultEntry.objects.filter(project=target).values_list("pk", "tags", "updated_at")) == before
    assert again.counts["entries updated (changed in the source)"] == 0, again.summary()

    entry = tagged.first()
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(tags=[*entry.tags, "db"]), changed_by="t"
    )
    newer = transfer.import_memory_dir(path=export_to(tmp_path / "newer", project), project=target)
    assert newer.counts["entries updated (changed in the source)"] == 1, newer.summary()
    imported = VaultEntry.objects.get(project=target, content=entry.content)
    assert f"session-{here.pk}" in imported.tags and "db" in imported.tags, imported.tags
    assert f"session-{chat.pk}" not in imported.tags, imported.tags


def test_a_newer_export_brings_an_edit_of_an_entry_whose_history_came_with_it(
    tmp_path, project, agent_a, target
):
    """The versions an import attached are the source's history, not an edit made here: the source's next
    edit, in a newer export, is applied, not kept back as "edited here too"."""
    entry = services.entry_create(agent=agent_a, category="lessons", content="Retry twice")
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Retry thrice"), changed_by="alice"
    )
    transfer.import_memory_dir(path=export_to(tmp_path / "first", project), project=target)
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Retry once"), changed_by="bob"
    )
    report = transfer.import_memory_dir(path=export_to(tmp_path / "second", project), project=target)
    assert report.counts["entries updated (changed in the source)"] == 1, report.summary()
    assert VaultEntry.objects.get(project=target).content == "Retry once"
    assert histories(target)["entries"] == histories(project)["entries"]


def test_history_moved_into_a_redacting_project_is_redacted_as_its_entries_are(
    tmp_path, project, agent_a, target
):
    """A project with redaction off moved into one that redacts (and keeps its setting, holding memory):
    the entries and files came in redacted, and so must their history and the session's state rows and
    buffer, or the address an entry no longer shows stayed readable in GET /entries/{id}/history."""
    services.project_redaction_set(project=project, enabled=False)
    text = "Page ops at alice@example.com"
    entry = services.entry_create(agent=agent_a, category="lessons", content=text)
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Page ops"), changed_by="t"
    )
    services.file_write(agent=agent_a, path="memories/contacts.md", content=text + "\n", changed_by="t")
    services.file_write(agent=agent_a, path="memories/contacts.md", content="none\n", changed_by="t")
    chat = session_services.messages_append(
        agent=agent_a, session_key="c", messages=[{"role": "user", "text": text, "client_id": "u1"}]
    ).session
    WorkingBufferEntry.objects.create(session=chat, side="human", text=text, created_at=chat.created_at)
    services.entry_create(
        agent=services.agent_ensure(project=target, slug="ops"), category="lessons", content="x"
    )
    report = transfer.import_memory_dir(path=export_to(tmp_path / "out", project), project=target)
    assert report.counts["entry versions imported"] == 1 and report.counts["file versions imported"] >= 1
    history = list(EntryVersion.objects.filter(agent__project=target).values_list("content", flat=True))
    history += list(
        WorkspaceFileVersion.objects.filter(file__project=target).values_list("content", flat=True)
    )
    history += list(WorkingBufferEntry.objects.filter(session__project=target).values_list("text", flat=True))
    assert history and not [row for row in history if "alice@example.com" in row], history


def test_a_newer_export_brings_a_later_restore_of_a_session_already_here(
    tmp_path, api, project, agent_a, token_a, target
):
    """A session restored at the source after it was imported: the next import gives the session here its
    restored_at (the lifecycle counts its quiet days from it), and an older one never replaces a newer."""
    agent_memory(api, token_a, agent_a)
    transfer.import_memory_dir(path=export_to(tmp_path / "first", project), project=target)
    # Both sessions' activity 60 days back, so that a restore 40 days after it is in the past (an import
    # stores no date to come: memoryproject/timestamps.py).
    Session.objects.filter(external_id="chat-1").update(
        last_activity_at=F("last_activity_at") - timedelta(days=60)
    )
    here = Session.objects.get(project=target, external_id="chat-1")
    assert here.restored_at is None
    later = here.last_activity_at + timedelta(days=40)
    Session.objects.filter(project=project, external_id="chat-1").update(restored_at=later)
    transfer.import_memory_dir(path=export_to(tmp_path / "second", project), project=target)
    assert Session.objects.get(pk=here.pk).restored_at == later
    Session.objects.filter(project=project, external_id="chat-1").update(
        restored_at=later - timedelta(days=1)
    )
    transfer.import_memory_dir(path=export_to(tmp_path / "third", project), project=target)
    assert Session.objects.get(pk=here.pk).restored_at == later


def test_an_export_into_a_folder_of_an_earlier_one_leaves_no_project_history_it_does_not_hold(
    tmp_path, project, other_project, target
):
    """`.project-versions.json` is written only when the project context has earlier texts: exporting a
    project without any into the folder of an earlier export (of another project, say) left the earlier
    one's file, and importing the folder gave the project another project's context history."""
    services.project_context_set(project=project, content="# Acme v2\n", changed_by="alice")
    folder = export_to(tmp_path / "out", project)
    assert (folder / ".project-versions.json").is_file()
    assert not ProjectContextVersion.objects.filter(project=other_project).exists()
    export_to(folder, other_project)
    assert not (folder / ".project-versions.json").exists()
    transfer.import_memory_dir(path=folder, project=target)
    assert not ProjectContextVersion.objects.filter(project=target).exclude(changed_by=IMPORTER).exists()


def test_an_applied_source_edit_shows_each_earlier_text_once_with_its_author(
    tmp_path, api, project, agent_a, target
):
    """An import that applied the source's edit of an entry wrote its own version of the text it replaced
    (by "import", dated now) and then attached the source's version of that same text: GET
    /entries/{id}/history showed it twice. The import's version now takes the source's author and date
    when the source's history holds that text, for entries, workspace files and the project context."""
    entry = services.entry_create(agent=agent_a, category="lessons", content="Retry twice")
    services.file_write(agent=agent_a, path="MEMORY.md", content="- first\n", changed_by="alice")
    transfer.import_memory_dir(path=export_to(tmp_path / "first", project), project=target)
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Retry thrice"), changed_by="alice"
    )
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Retry once"), changed_by="bob"
    )
    services.file_write(agent=agent_a, path="MEMORY.md", content="- second\n", changed_by="bob")
    services.project_context_set(project=project, content="# Acme v2\n", changed_by="carol")
    report = transfer.import_memory_dir(path=export_to(tmp_path / "second", project), project=target)
    assert report.counts["entries updated (changed in the source)"] == 1, report.summary()

    here = VaultEntry.objects.get(project=target)
    token = _token(target, here.agent)
    shown = api.get(f"/entries/{here.pk}/history", token=token).json()
    source = api.get(f"/entries/{entry.pk}/history", token=_token(project, agent_a)).json()
    assert [(v["content"], v["changed_by"], v["changed_at"]) for v in shown] == [
        (v["content"], v["changed_by"], v["changed_at"]) for v in source
    ]
    assert histories(target) == histories(project)
    for model, where in ((WorkspaceFileVersion, "file__project"), (ProjectContextVersion, "project")):
        rows = list(model.objects.filter(**{where: target}).values_list("content", "changed_by"))
        assert len(rows) == len({content for content, _ in rows}), rows


def test_two_agents_merged_by_agent_map_keep_their_entries_of_one_id_apart(
    tmp_path, project, agent_a, agent_b, target
):
    """Two source agents whose entries share an id (both imported from seed folders numbering from 1),
    merged onto one agent with --agent-map: the first import kept them apart (the second one's stored
    under a new id, the clash reported), but running the import again took agent-b's entry for
    agent-a's, "edited in the source", and overwrote agent-a's text with agent-b's. agent-b's history
    was read as agent-a's too. Each now follows its own entry, with its own history, however often the
    import runs."""
    first = services.entry_create(agent=agent_a, category="lessons", content="Retry twice")
    services.entry_update(
        entry_id=first.pk, changes=services.EntryChanges(content="Retry thrice"), changed_by="alice"
    )
    second = services.entry_create(agent=agent_b, category="lessons", content="Deploy on Fridays")
    VaultEntry.objects.filter(pk__in=[first.pk, second.pk]).update(legacy_id="1")
    VaultEntry.objects.filter(pk=second.pk).update(created_at=second.created_at - timedelta(minutes=5))
    folder = export_to(tmp_path / "out", project)
    merge = {"agent-a": "team", "agent-b": "team"}

    def stored():
        return sorted(
            VaultEntry.objects.filter(project=target).values_list("content", "updated_at", "legacy_id")
        )

    def history():
        return sorted(
            EntryVersion.objects.filter(agent__project=target).values_list(
                "entry__content", "content", "changed_by"
            )
        )

    report = transfer.import_memory_dir(path=folder, project=target, agent_map=merge)
    assert [content for content, *_ in stored()] == ["Deploy on Fridays", "Retry thrice"], report.summary()
    assert history() == [("Retry thrice", "Retry twice", "alice")]
    before = (stored(), history())
    for _ in range(2):
        again = transfer.import_memory_dir(path=folder, project=target, agent_map=merge)
        assert (stored(), history()) == before, again.summary()
        assert again.counts["entries updated (changed in the source)"] == 0, again.summary()
        assert again.counts["entries kept as edited here (changed in the source too)"] == 0, again.summary()

    services.entry_update(
        entry_id=second.pk, changes=services.EntryChanges(content="Never deploy on Fridays"), changed_by="bob"
    )
    newer = transfer.import_memory_dir(
        path=export_to(tmp_path / "newer", project), project=target, agent_map=merge
    )
    assert newer.counts["entries updated (changed in the source)"] == 1, newer.summary()
    assert [content for content, *_ in stored()] == ["Never deploy on Fridays", "Retry thrice"]
    assert history() == [
        ("Never deploy on Fridays", "Deploy on Fridays", "bob"),
        ("Retry thrice", "Retry twice", "alice"),
    ]


def test_a_deleted_entrys_history_moves_with_the_export_and_can_be_restored(
    tmp_path, project, agent_a, target
):
    """A curator sees a deleted entry's history (its page, /entries/{id}/) and can restore it from there;
    moved to a new server, the deleted entries were gone, their history with them (the export left them
    out: no entry to attach it to). The export now carries them (`.versions.json`, "deleted"), and the
    import stores each under a new id, its page showing the same versions and restoring it as it was;
    a second import adds nothing, and the entry is not brought back as live."""
    from django.test import Client
    from django.urls import reverse

    from tests.factories import CuratorFactory

    entry = services.entry_create(agent=agent_a, category="decisions", content="Use Redis for sessions")
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Use Redis for caching"), changed_by="alice"
    )
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    source = list(
        EntryVersion.objects.filter(entry_id=entry.pk).values_list(
            "action", "content", "changed_by", "changed_at"
        )
    )
    folder = export_to(tmp_path / "out", project)
    report = transfer.import_memory_dir(path=folder, project=target)
    assert report.counts["deleted entries' histories imported"] == 1, report.summary()
    deletion = EntryVersion.objects.get(agent__project=target, action="delete")
    assert not VaultEntry.objects.filter(pk=deletion.entry_id).exists()
    assert sorted(
        EntryVersion.objects.filter(entry_id=deletion.entry_id).values_list(
            "action", "content", "changed_by", "changed_at"
        )
    ) == sorted(source)

    client = Client()
    client.force_login(CuratorFactory(username="tina", project=target))
    html = client.get(reverse("vault-entry-detail", args=[deletion.entry_id])).content.decode()
    assert f"Entry #{deletion.entry_id} (deleted)" in html and "by carol" in html
    again = transfer.import_memory_dir(path=folder, project=target)
    assert again.counts["deleted entries' histories already imported (skipped)"] == 1, again.summary()
    assert EntryVersion.objects.filter(agent__project=target).count() == len(source)
    assert not VaultEntry.objects.filter(project=target).exists()

    oldest = EntryVersion.objects.filter(entry_id=deletion.entry_id).earliest("changed_at")
    client.post(reverse("vault-entry-restore", args=[deletion.entry_id, oldest.pk]))
    restored = VaultEntry.objects.get(pk=deletion.entry_id)
    assert (restored.content, restored.created_at) == ("Use Redis for sessions", entry.created_at)
    third = transfer.import_memory_dir(path=folder, project=target)
    assert VaultEntry.objects.filter(project=target).count() == 1, third.summary()


def test_a_hand_edited_export_says_what_it_left_out_and_stores_nothing_half(
    tmp_path, api, project, agent_a, token_a, target
):
    """An export edited by hand, as people do: a category file renamed (`decisions (copy).md`) was
    skipped without a word, its entries gone; a truncated `.entries.json` was reported "skipped" while
    the folder's entries were stored without their author, source, edit date, access counts and
    provenance, which no later import gives back. A file of an agent folder the export does not write is
    now reported, and a `.entries.json` that is not JSON keeps the folder's entries out (reported, with
    what to do): the import run again with the file restored stores them whole."""
    memory_with_history(api, token_a, agent_a, project)
    folder = export_to(tmp_path / "out", project)
    good = (folder / "agent-a" / ".entries.json").read_bytes()
    (folder / "agent-a" / "decisions.md").rename(folder / "agent-a" / "decisions (copy).md")
    (folder / "agent-a" / ".entries.json").write_bytes(good[: len(good) // 2])
    report = transfer.import_memory_dir(path=folder, project=target)
    problems = "\n".join(report.problems)
    assert "decisions (copy).md: not a file this export writes" in problems, problems
    assert ".entries.json: corrupt JSON" in problems and "entries are not imported" in problems, problems
    assert not VaultEntry.objects.filter(project=target).exists()
    assert Session.objects.filter(project=target).count() == Session.objects.filter(project=project).count()

    (folder / "agent-a" / "decisions (copy).md").rename(folder / "agent-a" / "decisions.md")
    (folder / "agent-a" / ".entries.json").write_bytes(good)
    again = transfer.import_memory_dir(path=folder, project=target)
    assert again.problems == [], again.summary()

    def entries(where):
        return sorted(
            VaultEntry.objects.filter(project=where).values_list(
                "content", "source", "created_at", "updated_at", "access_count", "confidence"
            )
        )

    assert entries(target) == entries(project)
