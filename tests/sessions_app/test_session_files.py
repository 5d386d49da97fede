"""Sessions go into an export and come back from it whole: tree, branches, tool calls, archive."""

import io
import json
from pathlib import Path

from django.core.management import call_command

from sessions_app import selectors, services, transfer
from sessions_app.models import Branch, Checkpoint, Message, Session
from sessions_app.selectors import archive_payload
from tests.factories import AgentFactory


def export_to(path: Path, project) -> Path:
    call_command("export_memory_dir", str(path), "--project", project.slug, stdout=io.StringIO())
    return path


def sessions(project) -> list:
    """Every session of the project as comparable data: ids replaced by client ids."""
    result = []
    for session in Session.objects.filter(project=project).order_by("external_id", "id"):
        rows = archive_payload(session).get("messages") or list(
            Message.objects.filter(session=session).values(
                "id",
                "parent_id",
                "client_id",
                "role",
                "text",
                "internal",
                "tool_calls",
                "tool_call_id",
                "state",
                "archived",
                "created_at",
            )
        )
        # A message without a client id is imported with "export:<its id there>".
        client = {row["id"]: row["client_id"] or f"export:{row['id']}" for row in rows}
        heads = {int(k): v for k, v in archive_payload(session).get("branches", {}).items()}
        result.append(
            (
                session.agent.slug,
                session.external_id,
                session.model_id,
                session.status,
                session.created_at,
                session.last_activity_at,
                session.closed_at,
                session.active_branch.name,
                sorted(
                    (
                        b.name,
                        client.get(heads.get(b.pk, [b.head_id])[0]),
                        client.get(heads.get(b.pk, [0, b.from_message_id])[1]),
                    )
                    for b in Branch.objects.filter(session=session)
                ),
                sorted(
                    (
                        client[row["id"]],
                        client.get(row["parent_id"]),
                        row["role"],
                        row["text"],
                        row["internal"],
                        row["tool_calls"],
                        row["tool_call_id"],
                        row["state"],
                        row["archived"],
                        str(row["created_at"])[:26],
                    )
                    for row in rows
                ),
            )
        )
    return result


def test_export_then_import_gives_back_every_session_tree_and_checkpoint(
    tmp_path, project, agent_a, agent_b, target
):
    """The export held no session at all: conversations, their branches, tool calls and archived sessions
    were lost on a move to a new server. They are now in `{agent}/sessions/*.json` and come back as they
    were; the checkpoint too; and a second import adds nothing."""
    chat = services.messages_append(
        agent=agent_a,
        session_key="chat-1",
        model_id="gpt-x",
        messages=[
            {"role": "user", "text": "We will use Redis for caching ☃", "client_id": "m1"},
            {
                "role": "assistant",
                "text": "",
                "tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": "x"}}],
            },
            {"role": "tool", "text": "result", "tool_call_id": "c1", "client_id": "m3"},
            {"role": "assistant", "text": "Done.\r\nCRLF kept", "client_id": "m4"},
        ],
    ).session
    first = Message.objects.get(session=chat, client_id="m1")
    services.message_checkout(session=chat, message=first)
    services.messages_append(
        agent=agent_a, session=chat, messages=[{"role": "user", "text": "Another way", "client_id": "b1"}]
    )
    services.branch_create(session=chat, name="idea", message=first)
    old = services.messages_append(
        agent=agent_b, session_key="", messages=[{"role": "user", "text": "An old talk, no ids"}]
    ).session
    services.session_archive(session=old, reason="test")
    services.checkpoint_save(agent=agent_a, session=chat, chat_id="chat-1", model_id="gpt-x")
    out = export_to(tmp_path / "out", project)
    transfer.import_memory_dir(path=out, project=target)
    got = sessions(target)
    assert got == sessions(project)
    checkpoint, original = Checkpoint.objects.get(project=target), Checkpoint.objects.get(project=project)
    assert (checkpoint.messages, checkpoint.chat_id, checkpoint.saved_at) == (
        original.messages,
        original.chat_id,
        original.saved_at.replace(microsecond=original.saved_at.microsecond // 1000 * 1000),
    )
    again = transfer.import_memory_dir(path=out, project=target)
    assert (
        sessions(target) == got
        and "sessions created" not in again.counts
        and "messages stored" not in again.counts
    )


def test_a_malformed_session_file_is_reported_and_the_rest_imported(tmp_path, target):
    """A hand-edited session file whose messages repeat a key or a client id crashed the import with an
    IntegrityError traceback (exit status 1, nothing imported); one without a messages list made an
    empty session. Such messages and files are now reported and skipped."""
    folder = tmp_path / "out" / "dev" / "sessions"
    folder.mkdir(parents=True)
    (folder / "1.json").write_text(
        json.dumps(
            {
                "format": 1,
                "chat_id": "c1",
                "messages": [
                    {"key": "1", "role": "user", "text": "hi", "client_id": "a"},
                    {"key": "1", "role": "assistant", "text": "same key"},
                    {"key": "2", "role": "assistant", "text": "same client id", "client_id": "a"},
                    {"key": "3", "role": "robot", "text": "?"},
                    {"key": "4", "role": "assistant", "text": "ok", "parent": "1"},
                ],
            }
        ),
        encoding="utf-8",
    )
    (folder / "2.json").write_text(
        json.dumps({"format": 1, "chat_id": "c2", "messages": "no"}), encoding="utf-8"
    )
    report = transfer.import_memory_dir(path=tmp_path / "out", project=target)
    assert list(Session.objects.filter(project=target).values_list("external_id", flat=True)) == ["c1"]
    messages = Message.objects.filter(project=target).order_by("id")
    assert [(m.text, m.parent.text if m.parent else None) for m in messages] == [("hi", None), ("ok", "hi")]
    assert len(report.problems) == 4, report.problems


def test_a_session_that_went_on_since_the_last_import_shows_its_new_messages(
    tmp_path, project, agent_a, target
):
    """Importing a newer export added the session's new messages, hung from their parents, but left its
    branches where the first import had put them: the conversation (the path back from the active head)
    ended at the old last message and the new ones were on no branch. A stored branch whose head the
    file's branch has moved on from is now moved to the file's head; a new branch is created."""
    services.messages_append(
        agent=agent_a, session_key="chat-1", messages=[{"role": "user", "text": "one", "client_id": "m1"}]
    )
    transfer.import_memory_dir(path=export_to(tmp_path / "first", project), project=target)
    chat = Session.objects.get(project=project)
    services.messages_append(
        agent=agent_a,
        session=chat,
        messages=[{"role": "assistant", "text": "two", "client_id": "m2"}, {"role": "user", "text": "three"}],
    )
    services.branch_create(session=chat, name="later")
    report = transfer.import_memory_dir(path=export_to(tmp_path / "second", project), project=target)
    imported = Session.objects.get(project=target)
    assert [m.text for m in selectors.session_conversation(imported)] == ["one", "two", "three"], (
        report.summary()
    )
    assert sessions(target) == sessions(project)


def chats(project) -> dict:
    """{(agent, chat id): [(client id, text)]} of every session of a project."""
    return {
        (s.agent.slug, s.external_id): sorted(
            Message.objects.filter(session=s).values_list("client_id", "text")
        )
        for s in Session.objects.filter(project=project).select_related("agent")
    }


def test_two_agents_mapped_onto_one_keep_their_sessions_of_the_same_chat_id_apart(
    tmp_path, project, agent_a, agent_b, target
):
    """--agent-map agent-a=dev,agent-b=dev stored both agents' chat-1 as one session: b's messages were
    added to a's conversation, and a message of b whose client id a had used ("m1") was skipped as
    already imported: lost. The second is now kept apart under chat-1@agent-b, reported; a second run
    adds nothing and reports nothing; the agent that keeps its name (agent-a=agent-b) keeps its chat id."""
    for agent, text in ((agent_a, "A: use Redis"), (agent_b, "B: use Memcached")):
        services.messages_append(
            agent=agent, session_key="chat-1", messages=[{"role": "user", "text": text, "client_id": "m1"}]
        )
    out = export_to(tmp_path / "out", project)
    report = transfer.import_memory_dir(
        path=out, project=target, agent_map={"agent-a": "dev", "agent-b": "dev"}
    )
    assert chats(target) == {
        ("dev", "chat-1"): [("m1", "A: use Redis")],
        ("dev", "chat-1@agent-b"): [("m1", "B: use Memcached")],
    }
    assert report.problems == [
        f"{out / 'agent-b' / 'sessions'}/{Session.objects.get(agent=agent_b).pk}.json: chat id 'chat-1' of "
        "agent agent-b is already that of agent agent-a's session in dev (both mapped onto it); kept apart "
        "as 'chat-1@agent-b'"
    ]
    again = transfer.import_memory_dir(
        path=out, project=target, agent_map={"agent-a": "dev", "agent-b": "dev"}
    )
    assert not again.problems and again.counts["sessions already imported (skipped)"] == 2
    assert len(chats(target)) == 2
    other = target.__class__.objects.create(slug="other", name="Other")
    transfer.import_memory_dir(path=out, project=other, agent_map={"agent-a": "agent-b"})
    assert chats(other) == {
        ("agent-b", "chat-1"): [("m1", "B: use Memcached")],
        ("agent-b", "chat-1@agent-a"): [("m1", "A: use Redis")],
    }
    third = target.__class__.objects.create(slug="third", name="Third")
    dev = AgentFactory(project=third, slug="dev")
    services.messages_append(
        agent=dev, session_key="chat-1", messages=[{"role": "user", "text": "Dev's own", "client_id": "m1"}]
    )
    report = transfer.import_memory_dir(path=out, project=third, agent_map={"agent-a": "dev"})
    assert chats(third) == {
        ("dev", "chat-1"): [("m1", "Dev's own")],
        ("dev", "chat-1@agent-a"): [("m1", "A: use Redis")],
        ("agent-b", "chat-1"): [("m1", "B: use Memcached")],
    }
    assert "holding none of its messages; kept apart as 'chat-1@agent-a'" in report.problems[0]


def test_fields_an_import_cuts_to_their_column_are_cut_between_characters_a_reader_sees(tmp_path, target):
    """A branch name, a model id and a chat id longer than their columns were cut by code point: an
    accent (e + U+0301) or an emoji's skin tone was kept without its letter or emoji, or the letter
    without its accent. Cut where a character a reader sees ends (vault.text.cluster_start)."""
    accented = "e\u0301"  # é as a letter and its combining accent
    thumbs = "\U0001f44d\U0001f3fd"  # 👍 and a skin tone
    folder = tmp_path / "out" / "dev" / "sessions"
    folder.mkdir(parents=True)
    (folder / "1.json").write_text(
        json.dumps(
            {
                "format": 1,
                "chat_id": "c" * 199 + thumbs,
                "model_id": "m" * 199 + accented,
                "messages": [{"key": "1", "role": "user", "text": "hi"}],
                "branches": [{"name": "b" * 99 + accented, "head": "1"}],
                "active_branch": "b" * 99 + accented,
            }
        ),
        encoding="utf-8",
    )
    transfer.import_memory_dir(path=tmp_path / "out", project=target)
    session = Session.objects.get(project=target)
    assert session.external_id == "c" * 199
    assert session.model_id == "m" * 199
    assert list(Branch.objects.filter(session=session).values_list("name", flat=True)) == ["b" * 99]
    assert session.active_branch.name == "b" * 99
