"""Forgetting a message reaches what was written from it alone, automatically: the durable fact the
write-ahead scan took from it (its vault entry and its MEMORY.md line, in the file's history too) and
a decision sleep extracted from it. An entry a person has changed since, or one drawn from other
messages too, is memory of its own and stays."""

import pytest
from django.utils import timezone

from sessions_app.maintenance.retention import message_erase
from sessions_app.models import Message
from vault import services as vault_services
from vault.models import DeletionAudit, VaultEntry, WorkspaceFileVersion

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
    assert answer == {"count": 2, "entries": 1, "derived_entries": 1, "messages": 1, "not_found": []}
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
