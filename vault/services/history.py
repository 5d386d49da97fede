"""Deleting an entry and bringing it (or an earlier version of it) back, as it was."""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput, NotFound
from vault import trust
from vault.etags import Expected, entry_precondition_check
from vault.models import Agent, EntrySource, EntryStatus, EntryVersion, VaultEntry, VersionAction
from vault.services.chains import (
    EFFECTIVE_SUPERSEDER,
    chain_join,
    chain_neighbours_lock,
    entries_links_changed,
)
from vault.services.entries import EntryChanges, entry_update
from vault.services.versions import _status_set, _version_save


def entry_restore(*, entry_id: int, version_id: int, changed_by: str) -> VaultEntry:
    """Bring back an earlier version's content, tags, category and importance (itself versioned).
    A deleted entry is brought back as well (entry_restore_deleted)."""
    version = EntryVersion.objects.filter(pk=version_id, entry_id=entry_id).first()
    if version is None:
        raise InvalidInput(f"Version {version_id} does not belong to entry {entry_id}.")
    if not VaultEntry.objects.filter(pk=entry_id).exists():
        return entry_restore_deleted(entry_id=entry_id, version_id=version_id, changed_by=changed_by)
    return entry_update(
        entry_id=entry_id,
        changes=EntryChanges(
            category=version.category,
            content=version.content,
            tags=version.tags,
            importance=version.importance,
        ),
        changed_by=changed_by,
    )


def _restore_state(entry: VaultEntry) -> dict:
    """What a deleted entry's restore brings back besides what every version keeps (content, tags,
    category, importance, status): JSON, times in ISO 8601."""
    return {
        "created_at": entry.created_at.isoformat(),
        "created_by": entry.created_by,
        "source": entry.source,
        "legacy_id": entry.legacy_id,
        "source_session_id": entry.source_session_id,
        "source_message_ids": list(entry.source_message_ids),
        "confidence": entry.confidence,
        "access_count": entry.access_count,
        "last_accessed_at": entry.last_accessed_at.isoformat() if entry.last_accessed_at else None,
        "supersedes_id": entry.supersedes_id,
    }


def entry_delete(*, entry_id: int, deleted_by: str, expected: Expected | None = None) -> EntryVersion:
    """Delete an entry; its last state is kept as a 'delete' version, with what a restore needs to
    bring it back as it was (`_restore_state`).

    An entry in a supersede chain leaves the chain whole: the entry that superseded it now supersedes
    the one it had superseded, and an entry it had superseded that nothing live supersedes any more is
    active again. Deleting the newest of "use Redis" <- "use Memcached" left "use Redis" superseded by
    nothing: hidden from search and context, the agent with no decision at all.

    With `expected` (If-Match), an entry changed since the writer read it is not deleted
    (PreconditionFailed), checked under the row lock."""
    with transaction.atomic():
        # A request that deleted it first (the page was loaded before) is a 404, not a 500.
        entry = VaultEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:
            raise NotFound(f"Entry {entry_id} not found.")
        entry_precondition_check(entry, expected)
        predecessor, successor = chain_neighbours_lock(entry)
        state = _restore_state(entry)
        state["successor_id"] = successor.pk if successor else None
        version = _version_save(
            entry, action=VersionAction.DELETE, changed_by=deleted_by, restore_state=state
        )
        entry.delete()  # the successor's link is cleared (SET_NULL); chain_join sets it
        reactivated = chain_join(predecessor, successor, changed_by=deleted_by)
        if reactivated is not None:
            version.restore_state["reactivated_id"] = reactivated
            version.save(update_fields=["restore_state"])
    return version


def _restored_fields(entry_id: int, agent_id: int, state: dict) -> dict:
    """The fields of a restored entry taken from its deletion's restore_state, those that still hold:
    a legacy id another entry of the agent has taken since is dropped. Its place in a supersede chain
    is put back by `_chain_restore`."""
    if not state:
        return {}
    fields = {
        "created_at": datetime.fromisoformat(state["created_at"]),
        "created_by": state.get("created_by", ""),
        "source": state.get("source", EntrySource.UI),
        "source_session_id": state.get("source_session_id"),
        "source_message_ids": list(state.get("source_message_ids") or []),
        "confidence": state.get("confidence"),
        "access_count": int(state.get("access_count") or 0),
        "last_accessed_at": (
            datetime.fromisoformat(state["last_accessed_at"]) if state.get("last_accessed_at") else None
        ),
    }
    legacy_id = state.get("legacy_id") or ""
    if legacy_id and not VaultEntry.objects.filter(agent_id=agent_id, legacy_id=legacy_id).exists():
        fields["legacy_id"] = legacy_id
    return fields


def _chain_restore(entry: VaultEntry, state: dict, *, changed_by: str) -> None:
    """Put a restored entry back in the supersede chain its deletion closed (entry_delete): after the
    entry it superseded, unless another entry supersedes that one now, and before the entry that
    superseded it, if that one still supersedes what the deletion left it (its predecessor, or
    nothing); and the entry it superseded `superseded` again when the deletion had made it active
    and the restored entry is live. A link that no longer holds (an entry gone, or of another agent)
    is left out."""
    predecessor_id, successor_id = state.get("supersedes_id"), state.get("successor_id")
    ids = [i for i in (predecessor_id, successor_id) if i]
    if not ids:
        return
    locked = {e.pk: e for e in VaultEntry.objects.select_for_update().filter(pk__in=ids).order_by("pk")}
    predecessor, successor = locked.get(predecessor_id), locked.get(successor_id)
    if successor is not None and (
        successor.agent_id != entry.agent_id or successor.supersedes_id not in (None, predecessor_id)
    ):
        successor = None
    if predecessor is not None and (
        predecessor.agent_id != entry.agent_id
        or VaultEntry.objects.filter(supersedes_id=predecessor.pk)
        .exclude(pk=successor.pk if successor else None)
        .exists()
    ):
        predecessor = None
    if successor is not None:
        VaultEntry.objects.filter(pk=successor.pk).update(supersedes_id=None)
    if predecessor is not None:
        VaultEntry.objects.filter(pk=entry.pk).update(supersedes_id=predecessor.pk)
        entry.supersedes_id = predecessor.pk
    if successor is not None:
        VaultEntry.objects.filter(pk=successor.pk).update(supersedes_id=entry.pk)
    # The successor supersedes the restored entry instead of what it superseded (which loses its
    # `superseded_by`), and the predecessor is superseded by the restored entry.
    entries_links_changed(
        *([successor.pk, successor.supersedes_id] if successor is not None else []),
        predecessor.pk if predecessor is not None else None,
    )
    if (
        predecessor is not None
        and state.get("reactivated_id") == predecessor.pk
        and predecessor.status == EntryStatus.ACTIVE
        and entry.status in EFFECTIVE_SUPERSEDER
    ):
        _status_set(predecessor, EntryStatus.SUPERSEDED, changed_by=changed_by)


def entry_restore_deleted(*, entry_id: int, version_id: int | None = None, changed_by: str) -> VaultEntry:
    """Bring a deleted entry back under its own id, with the content, tags, category and importance
    of one of its versions (by default the last state, kept when it was deleted) and the status it
    had when deleted.

    The rest comes back as it was when deleted (`_restore_state`): when and by whom it was written and
    through what, its provenance and access count, so a restored entry ranks as it did instead of as
    a new one, and its place in a supersede chain where that still holds (`_chain_restore`). The restore is recorded as a
    'restore' version by `changed_by`. An entry deleted before deletions kept that state counts as
    written now by `changed_by` through the curator UI. Conflict when the entry is live (again);
    NotFound when it was never deleted (or its history was purged)."""
    with transaction.atomic():
        # Locks the entry's history, so two restores of the same entry wait for each other.
        versions = list(
            EntryVersion.objects.select_for_update().filter(entry_id=entry_id).order_by("-changed_at", "-id")
        )
        deletion = next((v for v in versions if v.action == VersionAction.DELETE), None)
        if deletion is None:
            raise NotFound(f"Entry {entry_id} not found.")
        if VaultEntry.objects.filter(pk=entry_id).exists():
            raise Conflict(f"Entry {entry_id} is not deleted; restore a version of it instead.")
        version = deletion if version_id is None else next((v for v in versions if v.pk == version_id), None)
        if version is None:
            raise InvalidInput(f"Version {version_id} does not belong to entry {entry_id}.")
        words = trust.word_set(version.content)
        now = timezone.now()
        fields = {
            "source": EntrySource.UI,
            "created_by": changed_by[:200],
            "created_at": now,
            **_restored_fields(entry_id, version.agent_id, deletion.restore_state),
        }
        entry = VaultEntry.objects.create(
            pk=entry_id,
            project_id=Agent.objects.values_list("project_id", flat=True).get(pk=version.agent_id),
            agent_id=version.agent_id,
            category=version.category,
            content=version.content,
            content_hash=trust.content_hash(version.content),
            sketch=trust.sketch(words),
            tags=list(version.tags),
            importance=version.importance,
            status=deletion.status,
            updated_at=now,
            **fields,
        )
        _chain_restore(entry, deletion.restore_state, changed_by=changed_by)
        _version_save(entry, action=VersionAction.RESTORE, changed_by=changed_by)
        return entry
