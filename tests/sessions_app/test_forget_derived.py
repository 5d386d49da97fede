"""Forgetting a message reaches what was written from it alone, automatically: the durable fact the
write-ahead scan took from it (its vault entry and its MEMORY.md line, in the file's history too) and
a decision sleep extracted from it. An entry a person has changed since, or one drawn from other
messages too, is memory of its own and stays."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.maintenance.extraction import extraction_perform
from sessions_app.maintenance.retention import message_erase
from sessions_app.models import Message
from vault import services as vault_services
from vault.models import DeletionAudit, EntryVersion, SessionMark, VaultEntry, WorkspaceFileVersion
from vault.selectors import daily_note_path

pytestmark = pytest.mark.django_db


def say(api, token, *texts, session="chat-1"):
    messages = [{"id": f"{session}-{n}", "role": "user", "text": text} for n, text in enumerate(texts)]
    response = api.post("/agents/agent-a/messages", {"session": session, "messages": messages}, token=token)
    assert response.status_code == 200, response.content
    return {m.text: m.pk for m in Message.objects.filter(session__external_id=session)}


def forget(api, admin_token, *ids):
    response = api.post("/forget", {"message_ids": list(ids)}, token=admin_token)
    assert response.status_code == 200, response.content
    return response.json()


def note_text(api, token):
    path = daily_note_path(timezone.localdate())
    response = api.get(f"/agents/agent-a/files/{path}", token=token)
    assert response.status_code == 200, response.content
    return response.json()["content"]


def memory_file(api, token):
    return api.get("/agents/agent-a/files/MEMORY.md", token=token).json()["content"]


def test_it_erases_the_durable_fact_the_scan_took_from_the_message(api, admin_token, token_a, agent_a):
    """The fact stayed in the vault and in MEMORY.md, which every context shows: forgetting 'my name
    is Bobur' left the name in the agent's memory."""
    ids = say(api, token_a, "My name is Bobur.", "I prefer dark roast coffee.")
    assert "Bobur" in memory_file(api, token_a)
    fact = VaultEntry.objects.get(agent=agent_a, tags__contains=["wal"], content__contains="Bobur")
    answer = forget(api, admin_token, ids["My name is Bobur."])
    # The fact's entry was deleted with an audit row, but the answer said "entries": 0.
    assert answer == {
        "count": 2, "entries": 1, "derived_entries": 1, "entries_rewritten": 0, "messages": 1,
        "summaries_rewritten": 0, "not_found": [],
    }  # fmt: skip
    assert not VaultEntry.objects.filter(pk=fact.pk).exists()
    text = memory_file(api, token_a)
    assert "Bobur" not in text and "dark roast" in text
    versions = WorkspaceFileVersion.objects.filter(file__agent=agent_a, file__path="MEMORY.md")
    assert not [v.pk for v in versions if "Bobur" in v.content]
    audit = DeletionAudit.objects.get(kind="entry", object_id=fact.pk)
    assert audit.reason == "forget" and audit.criteria == {"source_message_id": ids["My name is Bobur."]}
    assert VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal"], content__contains="dark").exists()


def test_a_fact_a_curator_edited_since_stays(api, admin_token, token_a, agent_a):
    ids = say(api, token_a, "My name is Bobur.")
    fact = VaultEntry.objects.get(agent=agent_a, tags__contains=["wal"])
    vault_services.entry_update(
        entry_id=fact.pk, changes=vault_services.EntryChanges(content="The user is Bobur, a designer."),
        changed_by="curator",
    )  # fmt: skip
    forget(api, admin_token, ids["My name is Bobur."])
    assert VaultEntry.objects.filter(pk=fact.pk).exists()


def test_the_retention_purge_keeps_the_facts_taken_from_a_message(api, token_a, agent_a):
    """Retention ages the conversation (its purge erases through message_erase); the durable facts
    drawn from it have their own retention."""
    ids = say(api, token_a, "My name is Bobur.")
    message = Message.objects.select_related("agent").get(pk=ids["My name is Bobur."])
    message_erase(message, reason="purge", criteria={}, deleted_by="t", now=timezone.now())
    assert VaultEntry.objects.filter(agent=agent_a, tags__contains=["wal"]).exists()
    assert "Bobur" in memory_file(api, token_a)


def test_it_erases_a_decision_sleep_extracted_from_the_message_alone(api, admin_token, token_a, agent_a):
    messages = [
        {"role": "user", "text": "What cache should the sessions use?"},
        {"role": "assistant", "text": "We decided to use Memcached for the session cache from now on."},
        {"role": "user", "text": "Thanks, noted."},
    ]
    body = api.post(
        "/agents/agent-a/sleep", {"session": "chat-2", "messages": messages}, token=token_a
    ).json()
    decision = VaultEntry.objects.get(agent=agent_a, category="decisions", tags__contains=["auto-extract"])
    (source,) = decision.source_message_ids
    handoff = VaultEntry.objects.get(pk=body["handoff"]["id"])
    forget(api, admin_token, source)
    assert not VaultEntry.objects.filter(pk=decision.pk).exists()
    assert VaultEntry.objects.filter(pk=handoff.pk).exists()  # drawn from the whole conversation


def sleep(api, token, messages, session="chat-2"):
    response = api.post("/agents/agent-a/sleep", {"session": session, "messages": messages}, token=token)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_handoff_quoting_the_message_loses_the_quote_and_keeps_the_rest(api, admin_token, token_a, agent_a):
    """The handoff, drawn from several messages, stays; its line quoting the forgotten one kept the
    text (and so did its history), which the next session's context shows."""
    body = sleep(api, token_a, [
        {"role": "user", "text": "My locker code is 4417, keep it handy."},
        {"role": "assistant", "text": "Noted the locker code for later."},
        {"role": "user", "text": "Next we deploy the billing service."},
    ])  # fmt: skip
    handoff = VaultEntry.objects.get(pk=body["handoff"]["id"])
    vault_services.entry_update(
        entry_id=handoff.pk, changes=vault_services.EntryChanges(importance=0.9), changed_by="curator"
    )
    source = Message.objects.get(text__startswith="My locker code").pk
    answer = forget(api, admin_token, source)
    assert (answer["entries"], answer["entries_rewritten"]) == (0, 1)
    handoff.refresh_from_db()
    assert "4417" not in handoff.content and "[User]: [forgotten]" in handoff.content
    assert "[Agent]: Noted the locker code for later." in handoff.content
    assert "Next we deploy the billing service." in handoff.content
    assert not EntryVersion.objects.filter(entry_id=handoff.pk, content__contains="4417").exists()
    context = api.post("/agents/agent-a/context", {"command": "locker", "budget_tokens": 2000}, token=token_a)
    assert "4417" not in context.json()["text"]


def test_the_heuristic_extractions_lines_from_the_message_go_from_the_daily_note(
    api, admin_token, token_a, agent_a, settings
):
    """Extraction listed the message's decision and durable fact in the daily note (and stored the
    decision with no provenance, so no forget could find it): both stayed after the forget."""
    settings.MEMORY_EXTRACTION_MIN_MESSAGES = 1
    settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES = 0
    ids = say(
        api, token_a,
        "My name is Bobur and I handle the payments team.",
        "We decided to move the ledger to PostgreSQL sixteen this quarter.",
        "I prefer short status reports every Friday afternoon.",
    )  # fmt: skip
    session = Message.objects.get(pk=ids["My name is Bobur and I handle the payments team."]).session
    done = extraction_perform(agent_id=agent_a.pk, session_id=session.pk, trigger_source="web")
    assert done["status"] == "done", done
    note = note_text(api, token_a)
    assert "Bobur" in note and "- Decision: We decided to move the ledger" in note
    decision = VaultEntry.objects.get(agent=agent_a, category="decisions", content__contains="ledger")
    (fact_line,) = [line for line in note.splitlines() if line.startswith("- proper noun:")]
    # Consolidation copies a note's recurring fact lines into MEMORY.md as they are.
    vault_services.file_append(agent=agent_a, path="MEMORY.md", text=f"{fact_line}\n", changed_by="t")
    forget(api, admin_token, ids["My name is Bobur and I handle the payments team."])
    forget(api, admin_token, ids["We decided to move the ledger to PostgreSQL sixteen this quarter."])
    note = note_text(api, token_a)
    assert "Bobur" not in note and "ledger" not in note, note
    assert "short status reports" in note  # the third message's fact stays
    assert not VaultEntry.objects.filter(pk=decision.pk).exists()
    assert "proper noun" not in memory_file(api, token_a)  # the line, not only its text
    mark = SessionMark.objects.get(session_id=session.pk)
    assert not [fact for fact in mark.facts if "Bobur" in fact] and mark.facts


def test_the_exact_text_goes_from_what_a_model_wrote(api, admin_token, token_a, agent_a):
    """A model's rewrite of PROFILE.md or MEMORY.md and its block of the session's daily note, which
    cannot be traced to one message, kept the forgotten text word for word."""
    ids = say(api, token_a, "I am allergic to penicillin and peanuts.", "Sure.")
    secret = "I am allergic to penicillin and peanuts."
    session = Message.objects.get(pk=ids[secret]).session
    vault_services.file_write(agent=agent_a, path="PROFILE.md", content=f"# Profile\n- {secret}\n- Likes tea\n",
                              changed_by="consolidation")  # fmt: skip
    vault_services.file_write(agent=agent_a, path="PROFILE.md", content=f"# Profile\n- {secret}\n- Likes tea!\n",
                              changed_by="consolidation")  # fmt: skip
    now = timezone.now()
    for label in (session.external_id, "another-chat"):
        vault_services.daily_note_append(
            agent=agent_a, when=now, changed_by="t",
            text=f"\n## 10:00 · session {label} (extraction)\nThe user said: {secret} Sure.\n",
        )  # fmt: skip
    forget(api, admin_token, ids[secret], ids["Sure."])
    profile = api.get("/agents/agent-a/files/PROFILE.md", token=token_a).json()["content"]
    assert profile == "# Profile\n- [forgotten]\n- Likes tea!\n"
    assert (
        not WorkspaceFileVersion.objects.filter(content__contains="penicillin")
        .exclude(file__path__startswith="memory/")
        .exists()
    )
    note = note_text(api, token_a)
    # The session's block loses the text; a block of another conversation keeps it (not derived from
    # the message); a short text ("Sure.") is not looked for in prose.
    assert "The user said: [forgotten] Sure." in note
    assert f"session another-chat (extraction)\nThe user said: {secret}" in note


def test_a_text_another_message_still_says_stays_in_what_a_model_wrote(api, admin_token, token_a, agent_a):
    ids = say(api, token_a, "I am allergic to penicillin and peanuts.")
    say(api, token_a, "I am allergic to penicillin and peanuts.", session="chat-9")
    vault_services.file_write(agent=agent_a, path="PROFILE.md", changed_by="t",
                              content="- I am allergic to penicillin and peanuts.\n")  # fmt: skip
    forget(api, admin_token, ids["I am allergic to penicillin and peanuts."])
    assert "penicillin" in api.get("/agents/agent-a/files/PROFILE.md", token=token_a).json()["content"]


def test_a_forget_searches_the_messages_only_for_a_text_something_derived_holds(
    api, admin_token, token_a, agent_a
):
    """Whether another message still says the forgotten text is a search of every message of the
    agent: asked for each form of each forgotten message, it made a forget by criteria of thousands
    of messages thousands of such searches, where most hold nothing derived."""
    ids = say(api, token_a, "What time is the standup tomorrow morning?")
    with CaptureQueriesContext(connection) as queries:
        forget(api, admin_token, ids["What time is the standup tomorrow morning?"])
    searches = [q["sql"] for q in queries if "sessions_app_message" in q["sql"] and "LIKE" in q["sql"]]
    assert searches == []
