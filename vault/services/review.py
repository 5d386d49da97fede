"""Writes of trust: supersede chains, the review queue, review policies, access counts."""

from dataclasses import replace
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memoryproject.errors import Conflict, DomainError, InvalidInput, NotFound
from memoryproject.prepared import prepared_cursor
from vault import selectors, trust
from vault.models import (
    REJECT_REASON_MAX_CHARS,
    EntryStatus,
    Project,
    ReviewItem,
    ReviewKind,
    ReviewPolicy,
    VaultEntry,
)
from vault.services.chains import entries_links_changed, entry_supersede
from vault.services.entries import EntryChanges, _category_check, entry_update

# --- Supersede and review (trust) ----------------------------------------------------------------

# The field a page's form carries its entry's `updated_at` in, and the `loc` of the Conflict raised when
# the entry changed since the page was loaded.
STALE_FORM_LOC = "seen_updated_at"


def _review_resolve(entry: VaultEntry, *, resolution: str, by: str) -> None:
    ReviewItem.objects.filter(entry=entry, resolved_at__isnull=True).update(
        resolved_at=timezone.now(), resolution=resolution, resolved_by=by[:200]
    )


def _pending_get(entry_id: int, seen_updated_at: datetime | None = None) -> VaultEntry:
    """The pending entry, locked. With `seen_updated_at` (its `updated_at` as the queue page showed it)
    an entry changed since is refused: its agent may rewrite a held entry, and a decision taken on the
    text shown is no decision on the new one (approving wrote the shown text back over it, a bulk
    approval made it active unseen)."""
    entry = VaultEntry.objects.select_for_update().filter(pk=entry_id).first()
    if entry is None:
        raise NotFound(f"Entry {entry_id} not found.")
    if entry.status != EntryStatus.PENDING:
        raise Conflict(f"Entry {entry_id} is {entry.status}, not pending review.")
    if seen_updated_at is not None and entry.updated_at != seen_updated_at:
        raise Conflict(
            f"Entry {entry_id} was changed since the queue was loaded; it still waits: reload the queue "
            "and review its current text.",
            [{"loc": [STALE_FORM_LOC], "msg": "changed since the queue was loaded"}],
        )
    return entry


def review_approve(
    *,
    entry_id: int,
    by: str,
    content: str | None = None,
    supersede_conflicting: bool = False,
    seen_updated_at: datetime | None = None,
) -> VaultEntry:
    """Approve a pending entry, optionally editing it first (edit-and-approve). With
    supersede_conflicting, the entries it conflicts with become superseded by it. `seen_updated_at`:
    as in _pending_get."""
    with transaction.atomic():
        entry = _pending_get(entry_id, seen_updated_at)
        if content is not None:
            entry_update(entry_id=entry.pk, changes=EntryChanges(content=content), changed_by=by)
            entry.refresh_from_db()
        entry.status = EntryStatus.ACTIVE
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "updated_at"])
        if entry.supersedes_id is not None:  # the supersede the writer asked for takes effect now
            entry_supersede(new_id=entry.pk, old_id=entry.supersedes_id, changed_by=by)
        if supersede_conflicting and entry.supersedes_id is None:
            others = ReviewItem.objects.filter(
                entry=entry, kind=ReviewKind.CONFLICT, resolved_at__isnull=True, other_entry__isnull=False
            ).values_list("other_entry_id", flat=True)
            for other_id in list(others)[:1]:
                entry_supersede(new_id=entry.pk, old_id=other_id, changed_by=by)
        _review_resolve(entry, resolution="approved", by=by)
    entry.refresh_from_db()
    return entry


def entry_curator_update(
    *, entry_id: int, changes: EntryChanges, changed_by: str, seen_updated_at: datetime | None = None
) -> VaultEntry:
    """A curator's edit of an entry (its edit page, the admin): entry_update, except that setting a
    pending entry active or rejected is the review's decision, not a bare change of status. Set
    active, it is approved (the supersede its writer asked for takes effect and its review items are
    resolved, as review_approve does); set rejected, it is rejected; the edit's other changes are
    applied first, in the same transaction. An edit that set the status alone left its review items
    open and the entry it was to supersede live beside it.

    A form sends every field back, so a form opened before an agent's (or another curator's) edit
    replaced that edit with the text it showed, silently. With `seen_updated_at`, the entry's
    `updated_at` when the form was opened, an entry changed since is refused (Conflict, loc
    STALE_FORM_LOC); checked under the row lock, so no edit can slip in between."""
    decided = changes.status in (EntryStatus.ACTIVE, EntryStatus.REJECTED)
    with transaction.atomic():
        entry = VaultEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:
            raise NotFound(f"Entry {entry_id} not found.")
        if seen_updated_at is not None and entry.updated_at != seen_updated_at:
            raise Conflict(
                f"Entry {entry_id} was changed since this form was opened (at "
                f"{timezone.localtime(entry.updated_at):%Y-%m-%d %H:%M:%S}); saving would overwrite that "
                "change. Its current text is shown; save again to replace it with yours.",
                [{"loc": [STALE_FORM_LOC], "msg": "changed since the form was opened"}],
            )
        if entry.status != EntryStatus.PENDING or not decided:
            return entry_update(entry_id=entry_id, changes=changes, changed_by=changed_by)
        entry_update(entry_id=entry_id, changes=replace(changes, status=None), changed_by=changed_by)
        if changes.status == EntryStatus.ACTIVE:
            return review_approve(entry_id=entry_id, by=changed_by)
        return review_reject(entry_id=entry_id, by=changed_by, reason="set rejected in its edit form")


def review_reject(
    *, entry_id: int, by: str, reason: str = "", seen_updated_at: datetime | None = None
) -> VaultEntry:
    """Reject a pending entry: it stays stored (audit), never active, never injected. The reason is
    kept whole in its review items' resolution ("rejected: <reason>"). `seen_updated_at`: as in
    _pending_get."""
    if len(reason) > REJECT_REASON_MAX_CHARS:
        raise InvalidInput(
            f"The reason is {len(reason)} characters long; at most {REJECT_REASON_MAX_CHARS} are kept.",
            [{"loc": ["reason"], "msg": "too long"}],
        )
    with transaction.atomic():
        entry = _pending_get(entry_id, seen_updated_at)
        replaced_id = entry.supersedes_id
        entry.status = EntryStatus.REJECTED
        entry.supersedes_id = None  # a refused replacement leaves the old entry as it was
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "supersedes", "updated_at"])
        entries_links_changed(replaced_id)  # superseded by nothing now
        _review_resolve(entry, resolution=f"rejected: {reason}" if reason else "rejected", by=by)
    return entry


def review_merge(
    *, entry_id: int, into_id: int, by: str, seen_updated_at: datetime | None = None
) -> VaultEntry:
    """Fold a pending entry into an active entry of the same agent (its text appended unless already
    there, tags united). Returns the target.

    The pending entry becomes superseded by the target and joins the target's supersede chain just
    below it (the target supersedes it; what the target superseded before is now superseded by it),
    so its `superseded_by` and its chain lead to where its text went. A supersede link is one per
    entry, which is why it is put in between rather than beside. `seen_updated_at`: as in
    _pending_get."""
    if entry_id == into_id:
        raise InvalidInput("An entry cannot be merged into itself.")
    with transaction.atomic():
        entry = _pending_get(entry_id, seen_updated_at)
        target = (
            VaultEntry.objects.select_for_update()
            .select_related("agent")
            .filter(pk=into_id, project_id=entry.project_id)
            .first()
        )
        if target is None:
            raise NotFound(f"Entry {into_id} (merge target) not found.")
        _merge_target_check(entry, target)
        merged = target.content
        # By the words as written: folded, a text differing in its tone marks (bán sell / bạn friend)
        # was "already in" the target and was not added to it.
        if trust.text_words(entry.content) not in trust.text_words(target.content):
            merged = f"{target.content.rstrip()}\n\n{entry.content.strip()}"
        entry_update(
            entry_id=target.pk,
            changes=EntryChanges(content=merged, tags=[*target.tags, *entry.tags]),
            changed_by=by,
        )
        predecessor_id = target.supersedes_id
        entry.status = EntryStatus.SUPERSEDED
        entry.supersedes_id = None  # a replacement it asked for is dropped: its text lives on in the target
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "supersedes", "updated_at"])
        # In this order, as each supersede link is unique: the target takes the merged entry, which then
        # takes the target's former predecessor.
        VaultEntry.objects.filter(pk=target.pk).update(supersedes_id=entry.pk)
        if predecessor_id not in (None, entry.pk):
            VaultEntry.objects.filter(pk=entry.pk).update(supersedes_id=predecessor_id)
        # The target supersedes the merged entry now (its text may be unchanged), and the target's
        # former predecessor is superseded by the merged entry.
        entries_links_changed(target.pk, predecessor_id)
        _review_resolve(entry, resolution=f"merged into {target.pk}", by=by)
    target.refresh_from_db()
    return target


def _merge_target_check(entry: VaultEntry, target: VaultEntry) -> None:
    """A pending entry is merged only into a live entry of its own agent: merged into another agent's
    entry it would reach that agent's context unreviewed by it, and merged into a rejected or
    superseded one its text would be appended where nothing reads it."""
    if target.agent_id != entry.agent_id:
        raise Conflict(
            f"Entry {target.pk} belongs to agent {target.agent.slug!r}, not to agent "
            f"{entry.agent.slug!r} as entry {entry.pk} does: an entry can only be merged into an "
            "active entry of the same agent.",
            [{"loc": ["into"], "msg": "entry of another agent"}],
        )
    if target.status != EntryStatus.ACTIVE:
        where = ""
        if target.status == EntryStatus.SUPERSEDED:
            live = selectors.entry_chain(target)[0]
            if live.status == EntryStatus.ACTIVE:
                where = f" (its chain's live entry is entry {live.pk})"
        raise Conflict(
            f"Entry {target.pk} is {target.status}: an entry can only be merged into an active entry "
            f"of the same agent{where}.",
            [{"loc": ["into"], "msg": f"target is {target.status}"}],
        )
    successor = VaultEntry.objects.filter(supersedes_id=entry.pk).exclude(pk=target.pk).only("pk").first()
    if successor is not None:
        raise Conflict(
            f"Entry {successor.pk} is to supersede entry {entry.pk}; review entry {successor.pk} first.",
            [{"loc": ["into"], "msg": "entry has a successor"}],
        )


def review_policy_set(
    *, project: Project, category: str = "", hold_agent_writes: bool, hold_extracted: bool
) -> ReviewPolicy:
    if category:
        _category_check(category)
    policy, _ = ReviewPolicy.objects.update_or_create(
        project=project,
        category=category,
        defaults={"hold_agent_writes": hold_agent_writes, "hold_extracted": hold_extracted},
    )
    return policy


def entries_mark_accessed(entry_ids: list[int]) -> int:
    """Count a retrieval of these entries (context injection cites them): one UPDATE, returns rows."""
    ids = sorted({int(i) for i in entry_ids})
    if not ids:
        return 0
    # A prepared statement: every context runs it, and the ORM compiled it anew each time (about 1.5 ms
    # of Python on the benchmark machine).
    with prepared_cursor() as cursor:
        cursor.execute(_ACCESS_STATEMENT, [timezone.now(), ids])
        return cursor.rowcount


_ACCESS_STATEMENT = (
    f"UPDATE {VaultEntry._meta.db_table} SET access_count = access_count + 1, last_accessed_at = %s "
    "WHERE id = ANY(%s::bigint[])"
)


def review_bulk(*, project_id: int, entry_ids: list[int], action: str, by: str) -> dict:
    """Approve or reject many pending entries of one project; each that cannot be done is reported in
    `errors` (entry id → why) and the rest go on. Returns {"done": [ids], "errors": {id: detail}}."""
    if action not in ("approve", "reject"):
        raise InvalidInput(f"Unknown action {action!r}; use approve or reject.")
    done, errors = [], {}
    for entry_id in entry_ids:
        try:
            entry = VaultEntry.objects.filter(pk=entry_id, project_id=project_id).only("status").first()
            if entry is None:
                raise NotFound("not found in this project")
            if entry.status != EntryStatus.PENDING:
                raise Conflict(f"not pending review (it is {entry.status})")
            if action == "approve":
                review_approve(entry_id=entry_id, by=by)
            else:
                review_reject(entry_id=entry_id, by=by)
            done.append(entry_id)
        except DomainError as exc:
            errors[entry_id] = exc.detail
    return {"done": done, "errors": errors}
