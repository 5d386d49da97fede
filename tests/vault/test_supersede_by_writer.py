"""An agent that replaces its own decision updates its memory; it never loses the decision meanwhile."""

import pytest

from vault import services
from vault.models import EntryStatus, VaultEntry

pytestmark = pytest.mark.django_db

OLD = "We decided to use Redis for the session cache"
NEW = "We decided to use Memcached for the session cache"


def context_text(api, token) -> str:
    response = api.post(
        "/agents/agent-a/context", {"command": "session cache", "budget_tokens": 4000}, token=token
    )
    assert response.status_code == 200, response.content
    return response.json()["text"]


def write(api, token, content, **extra):
    response = api.post(
        "/agents/agent-a/entries", {"category": "decisions", "content": content, **extra}, token=token
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_it_treats_a_supersede_by_the_writer_as_an_update(api, token_a, agent_a):
    old = write(api, token_a, OLD)
    new = write(api, token_a, NEW, supersedes=old["id"])
    assert new["status"] == "active"
    assert VaultEntry.objects.get(pk=old["id"]).status == EntryStatus.SUPERSEDED
    text = context_text(api, token_a)
    assert "Memcached" in text
    assert "Redis" not in text


def test_it_keeps_the_old_entry_live_until_the_superseding_one_is_approved(
    api, token_a, admin_token, agent_a, project
):
    old = write(api, token_a, OLD)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    new = write(api, token_a, NEW, supersedes=old["id"])
    assert new["status"] == "pending"
    assert VaultEntry.objects.get(pk=old["id"]).status == EntryStatus.ACTIVE
    assert "Redis for the session cache" in context_text(api, token_a)

    response = api.post(f"/review/{new['id']}/approve", {}, token=admin_token)
    assert response.status_code == 200, response.content
    assert VaultEntry.objects.get(pk=old["id"]).status == EntryStatus.SUPERSEDED
    text = context_text(api, token_a)
    assert "Memcached" in text and "Redis" not in text


def test_it_leaves_the_old_entry_alone_when_the_superseding_one_is_rejected(
    api, token_a, admin_token, agent_a, project
):
    old = write(api, token_a, OLD)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    new = write(api, token_a, NEW, supersedes=old["id"])
    response = api.post(f"/review/{new['id']}/reject", {"reason": "no"}, token=admin_token)
    assert response.status_code == 200, response.content
    assert VaultEntry.objects.get(pk=old["id"]).status == EntryStatus.ACTIVE
    assert "Redis for the session cache" in context_text(api, token_a)
    again = write(api, token_a, "We decided to use Valkey for the session cache", supersedes=old["id"])
    assert again["status"] == "pending"


def test_an_edit_of_an_entry_deleted_meanwhile_is_not_found(agent_a):
    entry = services.entry_create(agent=agent_a, category="lessons", content="Short lived lesson here")
    VaultEntry.objects.filter(pk=entry.pk).delete()  # a concurrent forget, after the API's own check
    with pytest.raises(services.NotFound):
        services.entry_update(
            entry_id=entry.pk, changes=services.EntryChanges(importance=0.9), changed_by="t"
        )


def test_an_entry_of_another_agent_cannot_be_superseded(api, token_a, agent_a, agent_b):
    theirs = services.entry_create(agent=agent_b, category="decisions", content=OLD)
    response = api.post(
        "/agents/agent-a/entries",
        {"category": "decisions", "content": NEW, "supersedes": theirs.pk},
        token=token_a,
    )
    assert response.status_code == 422  # told apart from a missing entry no more than a read tells them
    assert response.json()["detail"] == f"supersedes: entry {theirs.pk} not found."
    theirs.refresh_from_db()
    assert theirs.status == EntryStatus.ACTIVE
    assert not VaultEntry.objects.filter(agent=agent_a).exists()


def test_a_project_token_cannot_make_one_agents_entry_supersede_anothers(api, admin_token, agent_a, agent_b):
    theirs = services.entry_create(agent=agent_b, category="decisions", content=OLD)
    mine = services.entry_create(
        agent=agent_a, category="decisions", content="We decided to use Kafka for events"
    )

    created = api.post(
        "/agents/agent-a/entries",
        {"category": "decisions", "content": NEW, "supersedes": theirs.pk},
        token=admin_token,
    )
    edited = api.patch(f"/entries/{mine.pk}", {"supersedes": theirs.pk}, token=admin_token)

    for response in (created, edited):
        assert response.status_code == 422, response.content
        assert "agent-b" in response.json()["detail"] and "same agent" in response.json()["detail"]
    theirs.refresh_from_db()
    assert theirs.status == EntryStatus.ACTIVE
    assert VaultEntry.objects.get(pk=mine.pk).supersedes_id is None
    assert not VaultEntry.objects.filter(agent=agent_a, content=NEW).exists()


@pytest.mark.parametrize("decision", ["active", "rejected"])
def test_a_curator_who_sets_a_held_superseding_entry_active_or_rejected_in_its_edit_form_decides_its_review(
    api, token_a, agent_a, project, client_a, decision
):
    """Setting the status in the entry's edit form is the review's approve or reject: it left the review
    items open, and an approved replacement beside the entry it was to supersede, both live."""
    from django.urls import reverse

    from vault.models import ReviewItem

    old = write(api, token_a, OLD)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    new = write(api, token_a, NEW, supersedes=old["id"])
    assert new["status"] == "pending"
    form = {"category": "decisions", "content": NEW + " (checked)", "tags": "", "importance": "0.5"}
    response = client_a.post(reverse("vault-entry-edit", args=[new["id"]]), {**form, "status": decision})
    assert response.status_code == 302, response.content
    entry = VaultEntry.objects.get(pk=new["id"])
    assert (entry.status, entry.content) == (decision, NEW + " (checked)")
    assert not ReviewItem.objects.filter(entry_id=new["id"], resolved_at__isnull=True).exists()
    old_status = VaultEntry.objects.get(pk=old["id"]).status
    text = context_text(api, token_a)
    if decision == "active":
        assert old_status == EntryStatus.SUPERSEDED
        assert "Memcached" in text and "Redis" not in text
    else:
        assert old_status == EntryStatus.ACTIVE
        assert "Redis" in text and "Memcached" not in text


def status(entry) -> str:
    return VaultEntry.objects.get(pk=entry["id"] if isinstance(entry, dict) else entry.pk).status


def test_deleting_the_newest_entry_of_a_chain_brings_back_the_one_it_replaced(api, token_a, agent_a):
    """The replaced decision stayed superseded by nothing: hidden from search and context, the agent
    left with no session-cache decision at all. Restoring the deleted one puts the chain back."""
    old = write(api, token_a, OLD)
    new = write(api, token_a, NEW, supersedes=old["id"])
    assert api.delete(f"/entries/{new['id']}", token=token_a).status_code == 204
    assert status(old) == EntryStatus.ACTIVE
    assert "Redis for the session cache" in context_text(api, token_a)

    restored = services.entry_restore_deleted(entry_id=new["id"], changed_by="user:cora")
    assert (restored.status, restored.supersedes_id, status(old)) == ("active", old["id"], "superseded")
    text = context_text(api, token_a)
    assert "Memcached" in text and "Redis" not in text


def test_deleting_an_entry_inside_a_chain_joins_its_neighbours(agent_a):
    """Redis <- Memcached <- Valkey, Memcached deleted: Valkey now supersedes Redis, which stays
    superseded; restored, Memcached is back between them."""
    a = services.entry_create(agent=agent_a, category="decisions", content=OLD)
    b = services.entry_create(agent=agent_a, category="decisions", content=NEW, supersedes_id=a.pk)
    c = services.entry_create(
        agent=agent_a,
        category="decisions",
        content="We decided on Valkey for the session cache",
        supersedes_id=b.pk,
    )
    services.entry_delete(entry_id=b.pk, deleted_by="user:cora")
    c.refresh_from_db()
    assert (c.supersedes_id, status(a), status(c)) == (a.pk, "superseded", "active")
    services.entry_restore_deleted(entry_id=b.pk, changed_by="user:cora")
    chain = dict(VaultEntry.objects.filter(pk__in=[a.pk, b.pk, c.pk]).values_list("pk", "supersedes_id"))
    assert chain == {a.pk: None, b.pk: a.pk, c.pk: b.pk}
    assert [status(e) for e in (a, b, c)] == ["superseded", "superseded", "active"]


def test_a_deleted_entrys_predecessor_is_live_while_its_next_successor_waits_for_review(agent_a, project):
    """Redis <- Memcached (active) <- Valkey (held for review), Memcached deleted: Redis is live
    again until Valkey is approved, as any entry waiting to be replaced is."""
    a = services.entry_create(agent=agent_a, category="decisions", content=OLD)
    b = services.entry_create(agent=agent_a, category="decisions", content=NEW, supersedes_id=a.pk)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    c = services.entry_create(
        agent=agent_a,
        category="decisions",
        content="We decided on Valkey for the session cache",
        supersedes_id=b.pk,
    )
    assert (status(c), status(b)) == ("pending", "active")
    services.entry_delete(entry_id=b.pk, deleted_by="user:cora")
    c.refresh_from_db()
    assert (c.supersedes_id, status(a)) == (a.pk, "active")
    services.review_approve(entry_id=c.pk, by="user:cora")
    assert (status(a), status(c)) == ("superseded", "active")


def test_forgetting_the_newest_entry_of_a_chain_brings_back_the_one_it_replaced(
    api, token_a, admin_token, agent_a
):
    """Erased for good (forget, or the retention purge), the newest entry left the one it had
    replaced superseded by nothing, as a delete did."""
    old = write(api, token_a, OLD)
    middle = write(api, token_a, NEW, supersedes=old["id"])
    newest = write(api, token_a, "We decided on Valkey for the session cache", supersedes=middle["id"])
    response = api.post("/forget", {"ids": [middle["id"]]}, token=admin_token)
    assert response.status_code == 200 and response.json()["entries"] == 1
    assert VaultEntry.objects.get(pk=newest["id"]).supersedes_id == old["id"]
    assert status(old) == EntryStatus.SUPERSEDED
    response = api.post("/forget", {"ids": [newest["id"]]}, token=admin_token)
    assert response.status_code == 200
    assert status(old) == EntryStatus.ACTIVE
    assert "Redis for the session cache" in context_text(api, token_a)
