"""An entry's supersede links (`supersedes`, `superseded_by`) are part of what it shows, so a change of
them alone gives it a new ETag: a writer holding the ETag of the state before is refused (412), as for
any other change it has not seen."""

import pytest

from vault import services
from vault.models import EntryStatus, VaultEntry

pytestmark = pytest.mark.django_db

REDIS = "We decided to use Redis for the session cache"
MEMCACHED = "We decided to use Memcached for the session cache"
VALKEY = "We decided on Valkey for the session cache"


def _write(api, token, content, **extra) -> int:
    response = api.post(
        "/agents/agent-a/entries", {"category": "decisions", "content": content, **extra}, token=token
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _read(api, token, entry_id) -> tuple[str, dict]:
    response = api.get(f"/entries/{entry_id}", token=token)
    assert response.status_code == 200, response.content
    return response["ETag"], response.json()


def _stale_patch_refused(api, token, entry_id, etag) -> None:
    """A PATCH with the ETag read before the link change is a 412 and changes nothing."""
    before = VaultEntry.objects.get(pk=entry_id)
    response = api.patch(f"/entries/{entry_id}", {"importance": 0.9}, token=token, headers={"If-Match": etag})
    assert response.status_code == 412, (entry_id, response.status_code, response.content)
    current, _ = _read(api, token, entry_id)
    assert response.json()["current"]["etag"] == current != etag
    assert VaultEntry.objects.get(pk=entry_id).importance == before.importance


def test_a_supersedes_link_added_alone_changes_both_entries_etags(api, token_a, agent_a, project):
    """PATCH {"supersedes"} on an entry whose fields stay as they are: the entry shows a new
    `supersedes`, the one it replaces a new `superseded_by` (held for review, it stays active)."""
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    old = services.entry_create(agent=agent_a, category="decisions", content=REDIS, source="ui").pk
    new = _write(api, token_a, MEMCACHED)
    assert VaultEntry.objects.get(pk=new).status == EntryStatus.PENDING
    new_etag, new_seen = _read(api, token_a, new)
    old_etag, old_seen = _read(api, token_a, old)
    linked = api.patch(f"/entries/{new}", {"supersedes": old}, token=token_a)
    assert linked.status_code == 200, linked.content
    assert linked.json()["supersedes"] == old and linked["ETag"] != new_etag
    assert linked.json()["updated_at"] != new_seen["updated_at"]
    assert linked.json()["content"] == new_seen["content"]
    _, old_now = _read(api, token_a, old)
    assert (old_now["status"], old_now["superseded_by"]) == ("active", new)
    assert old_now["updated_at"] != old_seen["updated_at"]
    _stale_patch_refused(api, token_a, new, new_etag)
    _stale_patch_refused(api, token_a, old, old_etag)


def test_a_supersede_added_when_an_entry_is_written_gives_it_no_second_timestamp(api, token_a):
    """A new entry that supersedes another is written with its link in one transaction: no reader saw
    it without, so it keeps created_at == updated_at (the pages show "updated" only after a change)."""
    old = _write(api, token_a, REDIS)
    new = _write(api, token_a, MEMCACHED, supersedes=old)
    entry = VaultEntry.objects.get(pk=new)
    assert entry.supersedes_id == old and entry.updated_at == entry.created_at


def test_deleting_an_entry_inside_a_chain_changes_its_neighbours_etags(api, token_a):
    """Redis <- Memcached <- Valkey, Memcached deleted: Valkey now supersedes Redis (which stays
    superseded, by Valkey now); both show it, and a write based on what they showed before is refused."""
    a = _write(api, token_a, REDIS)
    b = _write(api, token_a, MEMCACHED, supersedes=a)
    c = _write(api, token_a, VALKEY, supersedes=b)
    a_etag, _ = _read(api, token_a, a)
    c_etag, _ = _read(api, token_a, c)
    assert api.delete(f"/entries/{b}", token=token_a).status_code == 204
    _, a_now = _read(api, token_a, a)
    _, c_now = _read(api, token_a, c)
    assert (a_now["status"], a_now["superseded_by"], c_now["supersedes"]) == ("superseded", c, a)
    _stale_patch_refused(api, token_a, c, c_etag)
    _stale_patch_refused(api, token_a, a, a_etag)


def test_deleting_the_oldest_entry_of_a_chain_changes_its_successors_etag(api, token_a):
    """Redis <- Memcached, Redis deleted: Memcached supersedes nothing any more."""
    a = _write(api, token_a, REDIS)
    b = _write(api, token_a, MEMCACHED, supersedes=a)
    b_etag, _ = _read(api, token_a, b)
    assert api.delete(f"/entries/{a}", token=token_a).status_code == 204
    assert _read(api, token_a, b)[1]["supersedes"] is None
    _stale_patch_refused(api, token_a, b, b_etag)


def test_deleting_a_held_successor_changes_the_etag_of_the_entry_it_was_to_replace(
    api, token_a, agent_a, project
):
    """Redis (active) <- Memcached (held for review), Memcached deleted: Redis, still active, is
    superseded by nothing any more."""
    a = _write(api, token_a, REDIS)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    b = _write(api, token_a, MEMCACHED, supersedes=a)
    a_etag, a_seen = _read(api, token_a, a)
    assert (a_seen["status"], a_seen["superseded_by"]) == ("active", b)
    assert api.delete(f"/entries/{b}", token=token_a).status_code == 204
    assert _read(api, token_a, a)[1]["superseded_by"] is None
    _stale_patch_refused(api, token_a, a, a_etag)


def test_forgetting_an_entry_inside_a_chain_changes_its_neighbours_etags(api, token_a, admin_token):
    """The same through /forget (entry_erase), and the reactivation of the entry it replaced when the
    newest is forgotten."""
    a = _write(api, token_a, REDIS)
    b = _write(api, token_a, MEMCACHED, supersedes=a)
    c = _write(api, token_a, VALKEY, supersedes=b)
    a_etag, _ = _read(api, token_a, a)
    c_etag, _ = _read(api, token_a, c)
    assert api.post("/forget", {"ids": [b]}, token=admin_token).json()["entries"] == 1
    assert _read(api, token_a, c)[1]["supersedes"] == a
    _stale_patch_refused(api, token_a, c, c_etag)
    _stale_patch_refused(api, token_a, a, a_etag)
    a_etag, _ = _read(api, token_a, a)
    assert api.post("/forget", {"ids": [c]}, token=admin_token).json()["entries"] == 1
    assert _read(api, token_a, a)[1]["status"] == "active"
    _stale_patch_refused(api, token_a, a, a_etag)


def test_restoring_a_deleted_entry_into_its_chain_changes_its_neighbours_etags(api, token_a):
    """Memcached restored between Redis and Valkey: Valkey supersedes Memcached again, Redis is
    superseded by Memcached."""
    a = _write(api, token_a, REDIS)
    b = _write(api, token_a, MEMCACHED, supersedes=a)
    c = _write(api, token_a, VALKEY, supersedes=b)
    services.entry_delete(entry_id=b, deleted_by="user:cora")
    a_etag, _ = _read(api, token_a, a)
    c_etag, _ = _read(api, token_a, c)
    services.entry_restore_deleted(entry_id=b, changed_by="user:cora")
    assert _read(api, token_a, c)[1]["supersedes"] == b
    assert _read(api, token_a, a)[1]["superseded_by"] == b
    _stale_patch_refused(api, token_a, c, c_etag)
    _stale_patch_refused(api, token_a, a, a_etag)


def test_rejecting_a_held_successor_changes_the_etag_of_the_entry_it_was_to_replace(api, token_a, project):
    a = _write(api, token_a, REDIS)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    b = _write(api, token_a, MEMCACHED, supersedes=a)
    a_etag, _ = _read(api, token_a, a)
    services.review_reject(entry_id=b, by="user:cora")
    assert _read(api, token_a, a)[1]["superseded_by"] is None
    _stale_patch_refused(api, token_a, a, a_etag)


def test_merging_into_an_entry_changes_the_etags_of_the_entries_its_chain_links(api, token_a, project):
    """Redis <- Memcached, a held duplicate of Memcached merged into it: Memcached (its text already
    holding the merged one, so unedited) now supersedes the merged entry, which Redis is superseded by."""
    a = _write(api, token_a, REDIS)
    b = _write(api, token_a, MEMCACHED, supersedes=a)
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=False)
    held = services.entry_create(
        agent=VaultEntry.objects.get(pk=a).agent,
        category="decisions",
        content="Memcached for the session cache",
        dedupe=False,
    ).pk
    assert VaultEntry.objects.get(pk=held).status == EntryStatus.PENDING
    a_etag, _ = _read(api, token_a, a)
    b_etag, b_seen = _read(api, token_a, b)
    services.review_merge(entry_id=held, into_id=b, by="user:cora")
    _, b_now = _read(api, token_a, b)
    assert (b_now["supersedes"], b_now["content"]) == (held, b_seen["content"])
    assert _read(api, token_a, a)[1]["superseded_by"] == held
    _stale_patch_refused(api, token_a, b, b_etag)
    _stale_patch_refused(api, token_a, a, a_etag)
