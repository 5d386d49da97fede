"""GET /agents/{agent}/export: the agent's whole memory, sessions included, as a zip that
`import_memory_dir` restores exactly."""

import io
import zipfile
from pathlib import Path

from django.core.management import call_command

from sessions_app import services as session_services
from sessions_app.models import Checkpoint, Message, Session
from sessions_app.selectors import archive_payload
from tests.sessions_app.test_session_files import sessions
from vault import services
from vault.models import EntrySource, VaultEntry


def unzip(response, where: Path) -> Path:
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    zipfile.ZipFile(io.BytesIO(response.getvalue())).extractall(where)
    return where


def import_into(folder: Path, project) -> str:
    out = io.StringIO()
    call_command("import_memory_dir", str(folder), "--project", project.slug, stdout=out)
    return out.getvalue()


def message_names(project) -> dict[int, str]:
    """Every message of the project (archived ones too) by id: its client id, or "export:<id>" for one
    without (what the import gives it), so that two projects' messages compare."""
    names = {}
    for session in Session.objects.filter(project=project):
        rows = archive_payload(session).get("messages") or list(
            Message.objects.filter(session=session).values("id", "client_id")
        )
        names |= {row["id"]: row["client_id"] or f"export:{row['id']}" for row in rows}
    return names


def session_tag_named(tag: str, chats: dict[int, str]) -> str:
    """A `session-{id}` tag by its session's chat id: the ids differ between two projects."""
    number = tag.removeprefix("session-")
    return f"session:{chats[int(number)]!r}" if number.isdigit() and int(number) in chats else tag


def entries(project, slug="agent-a") -> list[tuple]:
    """Every entry of the agent, every field a user sees, provenance by chat id and client ids."""
    chats = {s.pk: s.external_id for s in Session.objects.filter(project=project)}
    names = message_names(project)
    return sorted(
        (
            (
                e.category,
                e.content,
                [session_tag_named(tag, chats) for tag in e.tags],
                e.status,
                e.source,
                e.importance,
                e.confidence,
                e.created_by,
                e.created_at,
                e.updated_at,
                e.access_count,
                e.last_accessed_at,
                chats.get(e.source_session_id, e.source_session_id),
                [names.get(pk, pk) for pk in e.source_message_ids],
            )
            for e in VaultEntry.objects.filter(project=project, agent__slug=slug)
        ),
        key=repr,
    )


def agent_memory(api, token_a, agent_a):
    """Entries written the ways an agent writes them (the API, a sleep extracting with provenance, a
    duplicate bumping the access count, an edit), sessions with a tree, branches, tool calls, an archived
    one, and a checkpoint."""
    written = api.post(
        "/agents/agent-a/entries",
        {"category": "decisions", "content": "Payments run on PostgreSQL 16", "importance": 0.7},
        token=token_a,
    ).json()
    api.post(
        "/agents/agent-a/entries",
        {"category": "decisions", "content": "Payments run on PostgreSQL 16"},
        token=token_a,
    )
    api.patch(f"/entries/{written['id']}", {"tags": ["db"]}, token=token_a)
    api.post(
        "/agents/agent-a/messages",
        {
            "session": "chat-1",
            "messages": [
                {"id": "m1", "role": "user", "text": "We decided to use Redis for caching the sessions."},
                {"id": "m2", "role": "assistant", "text": "Lesson learned: always set a TTL on cache keys."},
            ],
        },
        token=token_a,
    )
    assert api.post("/agents/agent-a/sleep", {"session": "chat-1"}, token=token_a).status_code == 200
    chat = Session.objects.get(agent=agent_a, external_id="chat-1")
    first = Message.objects.get(session=chat, client_id="m1")
    session_services.messages_append(
        agent=agent_a,
        session=chat,
        messages=[
            {
                "role": "assistant",
                "text": "",
                "tool_calls": [{"id": "c1", "name": "search", "arguments": {}}],
            },
            {"role": "tool", "text": "found", "tool_call_id": "c1", "client_id": "t1"},
        ],
    )
    session_services.message_checkout(session=chat, message=first)
    session_services.messages_append(
        agent=agent_a, session=chat, messages=[{"role": "user", "text": "Another way", "client_id": "b1"}]
    )
    session_services.branch_create(session=chat, name="idea", message=first)
    old = session_services.messages_append(
        agent=agent_a,
        session_key="",
        messages=[{"role": "user", "text": "We decided to deploy on Fridays never again."}],
    ).session
    session_services.session_close(agent=agent_a, session=old, changed_by="closer")
    session_services.session_archive(session=old, reason="test")
    session_services.checkpoint_save(agent=agent_a, session=chat, chat_id="chat-1", model_id="gpt-x")


def test_the_api_export_restores_the_agent_exactly_sessions_and_entry_metadata_included(
    tmp_path, api, project, agent_a, token_a, target
):
    """The REST zip held no sessions and no checkpoint (only the export command wrote them), and no
    entry kept its author, source, provenance, edit date or access count: an agent moved with its
    downloaded zip lost its conversations, and every entry came back "import", never read, and tied to
    no session. The zip now holds what the folder export holds, and import_memory_dir gives it all back,
    provenance pointing at the imported sessions and messages."""
    agent_memory(api, token_a, agent_a)
    provenance = VaultEntry.objects.filter(agent=agent_a, source_session_id__isnull=False)
    assert provenance.count() >= 3 and VaultEntry.objects.filter(agent=agent_a, access_count=1).exists()
    folder = unzip(api.get("/agents/agent-a/export", token=token_a), tmp_path / "zip")
    summary = import_into(folder, target)
    assert entries(target) == entries(project), summary
    assert [s for s in sessions(target)] == [s for s in sessions(project) if s[0] == "agent-a"]
    checkpoint, original = Checkpoint.objects.get(project=target), Checkpoint.objects.get(project=project)
    assert (checkpoint.messages, checkpoint.chat_id, checkpoint.model_id, checkpoint.saved_at) == (
        original.messages,
        original.chat_id,
        original.model_id,
        original.saved_at.replace(microsecond=original.saved_at.microsecond // 1000 * 1000),
    )
    again = import_into(folder, target)
    assert entries(target) == entries(project) and "entries created" not in again, again


def test_provenance_whose_session_is_not_in_the_export_is_left_empty_and_counted(
    tmp_path, api, project, agent_a, token_a, target
):
    """An entry extracted from a session that is gone since (purged, say) keeps no provenance on import:
    the session id here would name another session, or none. The summary counts it."""
    session = session_services.messages_append(
        agent=agent_a, session_key="kept", messages=[{"role": "user", "text": "hello", "client_id": "k1"}]
    ).session
    kept = Message.objects.get(session=session)
    services.entry_create(
        agent=agent_a,
        category="lessons",
        content="From a session still here",
        source=EntrySource.EXTRACTION,
        source_session_id=session.pk,
        source_message_ids=[kept.pk, kept.pk + 10_000],
    )
    services.entry_create(
        agent=agent_a,
        category="lessons",
        content="From a session purged since",
        source=EntrySource.EXTRACTION,
        source_session_id=session.pk + 10_000,
        source_message_ids=[kept.pk + 10_001],
    )
    folder = unzip(api.get("/agents/agent-a/export", token=token_a), tmp_path / "zip")
    summary = import_into(folder, target)
    imported = {e.content: e for e in VaultEntry.objects.filter(project=target)}
    here = Session.objects.get(project=target, external_id="kept")
    assert imported["From a session still here"].source_session_id == here.pk
    assert imported["From a session still here"].source_message_ids == [
        Message.objects.get(session=here, client_id="k1").pk
    ]
    gone = imported["From a session purged since"]
    assert (gone.source_session_id, gone.source_message_ids) == (None, [])
    assert "entries whose source session is not in the export (provenance left empty): 1" in summary
    assert "source message ids not in the export (dropped): 1" in summary


def test_an_agents_zip_never_holds_another_agents_or_projects_sessions(
    tmp_path, api, agent_a, agent_b, token_a, outsider_agent, outsider_token
):
    for agent, text in (
        (agent_a, "agent A's own talk"),
        (agent_b, "agent B's own talk"),
        (outsider_agent, "Globex's own talk"),
    ):
        chat = session_services.messages_append(
            agent=agent, session_key="chat-1", messages=[{"role": "user", "text": text, "client_id": "m1"}]
        ).session
        session_services.checkpoint_save(agent=agent, session=chat, chat_id="chat-1")
    folder = unzip(api.get("/agents/agent-a/export", token=token_a), tmp_path / "a")
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert [n for n in names if "sessions" in n or "checkpoints" in n] == [
        ".vault/checkpoints/agent-a.json",
        f"agent-a/sessions/{Session.objects.get(agent=agent_a).pk}.json",
    ]
    text = "".join((folder / name).read_text() for name in names)
    assert "agent A's own talk" in text
    assert "agent B's own talk" not in text and "Globex's own talk" not in text
    other = unzip(api.get("/agents/agent-a/export", token=outsider_token), tmp_path / "globex")
    text = "".join(p.read_text() for p in other.rglob("*") if p.is_file())
    assert "Globex's own talk" in text and "agent A's own talk" not in text
    assert api.get("/agents/agent-b/export", token=token_a).status_code == 404


def test_an_export_without_entry_metadata_or_with_broken_values_still_imports(
    tmp_path, api, agent_a, token_a, target
):
    """Exports made before `.entries.json` existed import as before (author "import", never read); a
    value of the wrong kind in it is reported and ignored, the rest of the entry kept."""
    api.post("/agents/agent-a/entries", {"category": "lessons", "content": "Pin the versions"}, token=token_a)
    api.post("/agents/agent-a/entries", {"category": "tasks", "content": "- [ ] ship it"}, token=token_a)
    old = unzip(api.get("/agents/agent-a/export", token=token_a), tmp_path / "old")
    (old / "agent-a" / ".entries.json").unlink()
    import_into(old, target)
    assert sorted(
        VaultEntry.objects.filter(project=target).values_list("created_by", "source", "access_count")
    ) == [
        ("import", "import", 0),
        ("import", "import", 0),
    ]
    broken = unzip(api.get("/agents/agent-a/export", token=token_a), tmp_path / "broken")
    about = broken / "agent-a" / ".entries.json"
    lesson = VaultEntry.objects.get(agent=agent_a, category="lessons")
    about.write_text(
        about.read_text().replace(
            f'"{lesson.pk}": {{"author": "{lesson.created_by}"',
            f'"{lesson.pk}": {{"access_count": -3, "confidence": true, "last_accessed_at": "soon", '
            f'"source_session": [1], "author": "{lesson.created_by}"',
        )
    )
    other = type(target).objects.create(slug="other", name="Other")
    summary = import_into(broken, other)
    assert (
        "access_count, last_accessed_at, confidence, source_session in .entries.json not readable; ignored"
        in summary
    )
    imported = VaultEntry.objects.get(project=other, category="lessons")
    assert (imported.created_by, imported.source, imported.access_count, imported.confidence) == (
        lesson.created_by,
        "api",
        0,
        None,
    )
    about.write_text("[1, 2]")
    third = type(target).objects.create(slug="third", name="Third")
    assert "is not an entries file of format 1" in import_into(broken, third)
    assert VaultEntry.objects.filter(project=third).count() == 2


def test_the_zip_is_streamed_as_an_attachment_with_its_length(api, agent_a, token_a, entry_a):
    response = api.get("/agents/agent-a/export", token=token_a)
    body = response.getvalue()
    assert response.streaming and int(response["Content-Length"]) == len(body)
    assert response["Content-Disposition"] == 'attachment; filename="acme-agent-a-memory.zip"'
    assert "agent-a/.entries.json" in zipfile.ZipFile(io.BytesIO(body)).namelist()
