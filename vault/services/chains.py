"""Supersede chains: one entry replacing another of the same agent, and the chain kept whole when an entry leaves it."""

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput, NotFound
from vault.models import Agent, EntryStatus, VaultEntry
from vault.services.versions import _status_set


def entries_links_changed(*entry_ids: int | None) -> None:
    """Entries whose `supersedes` or `superseded_by` just changed (their rows locked or written by the
    caller) get a new `updated_at`, so their ETag changes: a link is part of what an entry shows, and a
    writer that read it before must not write over a change it never saw. No version is stored: a
    version keeps the fields an edit changes (content, category, tags, importance, status), which a
    link change leaves as they were (a status change that goes with it is versioned where it is made,
    and a deletion's version keeps the links for its restore)."""
    ids = {pk for pk in entry_ids if pk is not None}
    if ids:
        VaultEntry.objects.filter(pk__in=ids).update(updated_at=timezone.now())


def entry_supersede(*, new_id: int, old_id: int, changed_by: str, new_written: bool = False) -> VaultEntry:
    """Make `new` replace `old`, an entry of the same agent: old becomes `superseded` (versioned),
    both stay linked and readable. A new link changes both entries' `updated_at` (new's `supersedes`,
    old's `superseded_by`; entries_links_changed), except new's when it was written in this very
    transaction (`new_written`: entry_create), whose first state has the link.

    While `new` waits for review only the link is recorded and `old` stays live, so the knowledge is
    never hidden by an entry nobody has accepted yet; review_approve completes the supersede."""
    if new_id == old_id:
        raise InvalidInput(
            "An entry cannot supersede itself.", [{"loc": ["supersedes"], "msg": "same entry"}]
        )
    with transaction.atomic():
        # Locked in id order, so two supersedes of overlapping entries wait for each other, never deadlock.
        locked = VaultEntry.objects.select_for_update().filter(pk__in=[new_id, old_id]).order_by("pk")
        entries = {e.pk: e for e in locked}
        if old_id not in entries:
            raise NotFound(f"Entry {old_id} (to supersede) not found.")
        new, old = entries[new_id], entries[old_id]
        if new.project_id != old.project_id:
            raise NotFound(f"Entry {old_id} (to supersede) not found.")
        if new.agent_id != old.agent_id:
            # A chain is one agent's memory of one thing; another agent's entry is theirs to replace.
            slugs = dict(Agent.objects.filter(pk__in=[new.agent_id, old.agent_id]).values_list("pk", "slug"))
            raise InvalidInput(
                f"Entry {old_id} belongs to agent {slugs.get(old.agent_id)!r} and entry {new_id} to agent "
                f"{slugs.get(new.agent_id)!r}: an entry can only supersede an entry of the same agent.",
                [{"loc": ["supersedes"], "msg": "entry of another agent"}],
            )
        if new.supersedes_id not in (None, old_id):
            # One link per entry: replacing it would leave the entry it supersedes with no successor.
            raise Conflict(
                f"Entry {new_id} already supersedes entry {new.supersedes_id}; an entry supersedes one entry.",
                [{"loc": ["supersedes"], "msg": "already supersedes another entry"}],
            )
        successor = (
            VaultEntry.objects.filter(supersedes_id=old_id)
            .exclude(pk=new_id)
            .exclude(status=EntryStatus.REJECTED)
            .values_list("pk", flat=True)
            .first()
        )
        if successor is not None:  # a concurrent supersede of the same entry (it waited for its lock) too
            raise Conflict(
                f"Entry {old_id} is already superseded by entry {successor}: supersede entry {successor} "
                "instead, or edit it.",
                [{"loc": ["supersedes"], "msg": f"already superseded by entry {successor}"}],
            )
        cursor = old
        while cursor.supersedes_id is not None:  # refuse cycles: old must not descend from new
            if cursor.supersedes_id == new_id:
                raise InvalidInput(
                    f"Entry {new_id} already precedes entry {old_id}; that would make a cycle."
                )
            cursor = VaultEntry.objects.only("pk", "supersedes_id").get(pk=cursor.supersedes_id)
        linked = new.supersedes_id != old_id
        if linked:
            new.supersedes_id = old_id
            fields = ["supersedes"]
            if not new_written:
                new.updated_at = timezone.now()
                fields.append("updated_at")
            new.save(update_fields=fields)
        if new.status != EntryStatus.PENDING and old.status != EntryStatus.SUPERSEDED:
            _status_set(old, EntryStatus.SUPERSEDED, changed_by=changed_by)
        elif linked:
            entries_links_changed(old.pk)
    return new


# A successor whose supersede took effect: its predecessor is `superseded`. While it waits for review
# (or was rejected) the predecessor stays live (entry_supersede).
EFFECTIVE_SUPERSEDER = (EntryStatus.ACTIVE, EntryStatus.ARCHIVED, EntryStatus.SUPERSEDED)


def chain_neighbours_lock(entry: VaultEntry) -> tuple[VaultEntry | None, VaultEntry | None]:
    """The entries before and after `entry` in its supersede chain (the one it supersedes, the one
    that supersedes it), locked, for chain_join once `entry` is deleted."""
    neighbours = list(
        VaultEntry.objects.select_for_update()
        .filter(Q(pk=entry.supersedes_id) | Q(supersedes_id=entry.pk))
        .order_by("pk")
    )
    predecessor = next((e for e in neighbours if e.pk == entry.supersedes_id), None)
    successor = next((e for e in neighbours if e.supersedes_id == entry.pk), None)
    return predecessor, successor


def chain_join(
    predecessor: VaultEntry | None, successor: VaultEntry | None, *, changed_by: str
) -> int | None:
    """Close the gap an entry deleted (or erased) from a supersede chain left: its successor now
    supersedes its predecessor, and a predecessor nothing live supersedes any more is active again
    (versioned; its id is returned). Else a decision replaced by an entry since deleted stayed
    `superseded` by nothing: out of search and context for good. Both neighbours show a new link
    (the successor's `supersedes`, the predecessor's `superseded_by`, each maybe none now), so both
    get a new `updated_at` (entries_links_changed)."""
    if successor is not None:
        VaultEntry.objects.filter(pk=successor.pk).update(
            supersedes_id=predecessor.pk if predecessor is not None else None
        )
    entries_links_changed(
        successor.pk if successor is not None else None, predecessor.pk if predecessor is not None else None
    )
    if predecessor is None:
        return None
    still_superseded = successor is not None and successor.status in EFFECTIVE_SUPERSEDER
    if predecessor.status == EntryStatus.SUPERSEDED and not still_superseded:
        _status_set(predecessor, EntryStatus.ACTIVE, changed_by=changed_by)
        return predecessor.pk
    return None
