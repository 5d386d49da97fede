"""Writes to long-term memory. Every entry point (API, admin, pages, commands, tasks) calls these."""

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import F, Q, prefetch_related_objects
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput, NotFound
from vault import selectors, trust
from vault.etags import Expected, entry_precondition_check
from vault.models import (
    Agent,
    Category,
    EntrySource,
    EntryStatus,
    EntryVersion,
    ReviewItem,
    ReviewKind,
    ReviewPolicy,
    VaultEntry,
    VersionAction,
)
from vault.principal import Principal
from vault.redaction import redact, redact_for_project
from vault.text import tags_normalise, task_line_set, text_check


def _importance_check(value: float | None) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or value != value or not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(
            "importance must be a number between 0.0 and 1.0",
            [{"loc": ["importance"], "msg": "out of range"}],
        )
    return float(value)


def _category_check(value: str) -> str:
    if value not in Category.values:
        raise InvalidInput(
            f"Unknown category {value!r}; use one of: {', '.join(Category.values)}.",
            [{"loc": ["category"], "msg": "unknown category"}],
        )
    return value


@dataclass(frozen=True)
class EntryChanges:
    category: str | None = None
    content: str | None = None
    tags: list[str] | None = None
    importance: float | None = None
    status: str | None = None


DUPLICATE_THRESHOLD = 0.9
BORDERLINE_THRESHOLD = 0.7
NEAR_DUPLICATE_WINDOW = 200
NEAR_DUPLICATE_CANDIDATES = 50
SKETCH_SCREEN = 0.3
HELD_SOURCES = {EntrySource.API, EntrySource.EXTRACTION, EntrySource.COMPACTION}


def _agent_category_lock(agent_id: int, category: str) -> None:
    """Serialise writes to one agent's category for the rest of the transaction, so that two
    identical memories written at the same moment cannot both pass the duplicate check."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)",
            [agent_id % 2_147_483_647, Category.values.index(category)],
        )


class _WordSets:
    """The word sets of recently seen entries, by content hash, in this process.

    A text's word set depends on its normalised text only, and the content hash is the hash of that
    text, so a hash always maps to the same set, whichever entry, agent or project it came from and
    however often the entry was edited. The duplicate check compares a new entry with up to 50 earlier
    ones of its agent; they are mostly the same few entries from one write to the next, so their texts
    need not be read and cut into words again on each write.
    """

    SIZE = 4096

    def __init__(self):
        self._sets: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> frozenset[str] | None:
        with self._lock:
            words = self._sets.get(digest)
            if words is not None:
                self._sets.move_to_end(digest)
            return words

    def put(self, digest: str, words: frozenset[str]) -> None:
        with self._lock:
            self._sets[digest] = words
            self._sets.move_to_end(digest)
            while len(self._sets) > self.SIZE:
                self._sets.popitem(last=False)


_word_sets = _WordSets()


def _duplicate_find(agent: Agent, category: str, digest: str, words: frozenset[str]):
    """(entry, similarity) of the closest live entry of the same agent and category, or (None, 0).

    One query finds exact matches (same normalised text, through the content-hash index) and
    near-match candidates (through a GIN index on a MinHash sketch of the words), so the cost does
    not grow with the vault. Candidates are screened on their sketches before words are compared.
    """
    signature = trust.sketch(words) if len(words) >= trust.NEAR_DUPLICATE_MIN_WORDS else []
    # By hand: this runs on every write, under the agent's write lock, and the ORM took longer to
    # compile it than PostgreSQL took to run it.
    match = "(content_hash = %s OR sketch && %s::integer[])" if signature else "content_hash = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, content_hash, sketch FROM vault_vaultentry WHERE {match}"
            " AND agent_id = %s AND category = %s AND status IN (%s, %s)"
            " ORDER BY created_at DESC, id DESC LIMIT %s",
            [digest, *([signature] if signature else []), agent.pk, category]
            + [EntryStatus.ACTIVE.value, EntryStatus.PENDING.value, NEAR_DUPLICATE_CANDIDATES],
        )
        candidates = cursor.fetchall()
    best, best_score = None, 0.0
    screened = []
    for pk, other_digest, other_sketch in candidates:
        if other_digest == digest:
            return VaultEntry.objects.get(pk=pk), 1.0
        if trust.sketch_similarity(signature, other_sketch) >= SKETCH_SCREEN:
            screened.append((pk, other_digest, _word_sets.get(other_digest)))
    # The texts of the screened candidates not seen lately, in one round trip (this runs under the
    # agent's write lock).
    unseen = [pk for pk, _, other_words in screened if other_words is None]
    contents = {}
    if unseen:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, content FROM vault_vaultentry WHERE id = ANY(%s)", [unseen])
            contents = dict(cursor.fetchall())
    for pk, other_digest, other_words in screened:
        if other_words is None:
            if pk not in contents:
                continue
            other_words = trust.word_set(contents[pk])
            _word_sets.put(other_digest, other_words)
        score = trust.near_duplicate_score(words, other_words)
        if score > best_score:
            best, best_score = pk, score
    if best is None:
        return None, 0.0
    return VaultEntry.objects.get(pk=best), best_score


def _conflicts_find(agent: Agent, category: str, content: str) -> list[tuple[VaultEntry, str]]:
    """Live entries of the agent that make a different claim about the same subject."""
    claims = trust.claims_find(content)
    if not claims:
        return []
    found = []
    subjects = {claim.subject.split()[0] for claim in claims}
    candidates = VaultEntry.objects.filter(agent=agent, category=category, status=EntryStatus.ACTIVE)
    subject_filter = Q()
    for subject in subjects:
        subject_filter |= Q(content__icontains=subject[:6])
    for other in candidates.filter(subject_filter).order_by("-created_at", "-id")[:NEAR_DUPLICATE_WINDOW]:
        pairs = trust.claims_conflict(claims, trust.claims_find(other.content))
        if pairs:
            new, old = pairs[0]
            found.append((other, f"'{new.subject}': '{new.value}' here, '{old.value}' in entry {other.pk}"))
    return found


def _project_write_flags(project_id: int) -> tuple[bool, bool]:
    """(redaction on, any review policy) for a project, in one statement: the entry write path runs
    under a lock and every round trip there counts (written by hand: the ORM took longer to compile
    this one-row query than PostgreSQL took to run it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT redaction_enabled, EXISTS (SELECT 1 FROM vault_reviewpolicy WHERE project_id = p.id)"
            " FROM vault_project p WHERE p.id = %s",
            [project_id],
        )
        row = cursor.fetchone()
    return (True, False) if row is None else (row[0] is not False, bool(row[1]))


def _review_reasons(
    *, agent: Agent, category: str, content: str, source: str, has_policy: bool = True
) -> list[tuple[str, object, str]]:
    reasons = []
    if source in (EntrySource.API, EntrySource.EXTRACTION, EntrySource.COMPACTION):
        for finding in trust.poisoning_findings(content):
            reasons.append((ReviewKind.POISONING, None, finding))
        policy = (
            None
            if not has_policy
            else (
                ReviewPolicy.objects.filter(project_id=agent.project_id, category__in=[category, ""])
                .order_by("-category")
                .first()
            )
        )
        if policy is not None:
            held = policy.hold_agent_writes if source == EntrySource.API else policy.hold_extracted
            if held:
                reasons.append((ReviewKind.POLICY, None, f"{policy} holds {source} entries for review"))
    for other, detail in _conflicts_find(agent, category, content):
        reasons.append((ReviewKind.CONFLICT, other, detail))
    return reasons


def _duplicate_check(agent: Agent, category: str, digest: str, words: frozenset[str], now):
    """(the existing entry, bumped, when this is a duplicate; else None, and the borderline-duplicate
    review reason or None)."""
    existing, score = _duplicate_find(agent, category, digest, words)
    if existing is not None and score >= DUPLICATE_THRESHOLD:
        VaultEntry.objects.filter(pk=existing.pk).update(
            access_count=F("access_count") + 1, last_accessed_at=now
        )
        existing.refresh_from_db()
        existing.duplicate_of = existing.pk
        return existing, None
    if existing is not None and score >= BORDERLINE_THRESHOLD:
        return None, (ReviewKind.DUPLICATE, existing, f"{score:.0%} similar to entry {existing.pk}")
    return None, None


def entry_create_for_principal(
    principal: Principal,
    *,
    agent: Agent,
    category: str,
    content: str,
    tags: list[str] | None = None,
    importance: float | None = None,
    confidence: float | None = None,
    supersedes_id: int | None = None,
) -> VaultEntry:
    """entry_create on behalf of a caller (the API and the MCP server): the entry it supersedes must
    be one the caller may read (else 404, as reading it would), and the entry records who wrote it.
    The entry comes back with what its response shows already loaded."""
    if supersedes_id is not None:
        selectors.entry_get_for_principal(principal, supersedes_id)
    entry = entry_create(
        agent=agent,
        category=category,
        content=content,
        tags=tags,
        importance=importance,
        confidence=confidence,
        supersedes_id=supersedes_id,
        created_by=principal.label,
    )
    # What the response shows (its review items, what supersedes it) is read here, where losing the
    # database is a 503, not while the response is serialised, where it was a 500. A new entry that
    # replaced nothing comes back with both already known (entry_create).
    if entry.duplicate_of is not None or supersedes_id is not None:
        prefetch_related_objects([entry], "review_items", "superseded_by")
    return entry


def entry_create(
    *,
    agent: Agent,
    category: str,
    content: str,
    tags: list[str] | None = None,
    importance: float | None = None,
    source: str = EntrySource.API,
    created_by: str = "",
    created_at: datetime | None = None,
    legacy_id: str = "",
    status: str = EntryStatus.ACTIVE,
    source_session_id: int | None = None,
    source_message_ids: list[int] | None = None,
    confidence: float | None = None,
    supersedes_id: int | None = None,
    dedupe: bool = True,
    review: bool = True,
) -> VaultEntry:
    """Store one memory entry. Tags are the explicit ones plus the content's #hashtags.

    Instead of storing a second copy of something the agent already remembers, the existing entry
    is bumped (access count and recency) and returned with `duplicate_of` set. Borderline duplicates,
    likely conflicts, instruction-like content from agents, and entries the project's review policy
    holds are stored as `pending` with a ReviewItem saying why. `review=False` is for text made only
    of live entries (a compaction summary): screening it again would hold back, as pending, what a
    curator or the screening already let in, while the entries it stands for are archived.
    """
    _category_check(category)
    redaction_on, has_policy = _project_write_flags(agent.project_id)
    content = redact(content) if redaction_on else content
    text_check(content)
    importance = _importance_check(importance)
    confidence = _importance_check(confidence) if confidence is not None else None
    if source not in EntrySource.values:
        raise InvalidInput(f"Unknown source {source!r}")
    if status not in EntryStatus.values:
        raise InvalidInput(f"Unknown status {status!r}; use one of: {', '.join(EntryStatus.values)}.")
    digest = trust.content_hash(content)
    words = trust.word_set(content)
    _word_sets.put(digest, words)
    now = timezone.now()
    with transaction.atomic():
        _agent_category_lock(agent.pk, category)
        duplicate, borderline = (
            _duplicate_check(agent, category, digest, words, now) if dedupe else (None, None)
        )
        if duplicate is not None:
            if supersedes_id is not None:
                _duplicate_supersede(duplicate, supersedes_id, changed_by=created_by)
            return duplicate
        reasons = (
            _review_reasons(
                agent=agent, category=category, content=content, source=source, has_policy=has_policy
            )
            if review
            else []
        )
        if borderline and review:
            reasons.append(borderline)
        if supersedes_id is not None:
            # The writer says this entry replaces that one: an update, not a conflict or a near-duplicate.
            reasons = [reason for reason in reasons if getattr(reason[1], "pk", None) != supersedes_id]
        entry = VaultEntry.objects.create(
            project_id=agent.project_id,
            agent=agent,
            category=category,
            content=content,
            content_hash=digest,
            sketch=trust.sketch(words),
            tags=tags_normalise(tags, content),
            importance=0.5 if importance is None else importance,
            source=source,
            status=EntryStatus.PENDING if reasons and status == EntryStatus.ACTIVE else status,
            created_by=created_by[:200],
            created_at=created_at or now,
            updated_at=created_at or now,
            legacy_id=legacy_id,
            source_session_id=source_session_id,
            source_message_ids=list(source_message_ids or []),
            confidence=confidence,
        )
        items = [
            ReviewItem.objects.create(entry=entry, kind=kind, other_entry=other, detail=detail[:2000])
            for kind, other, detail in reasons
        ]
        if supersedes_id is not None:
            # Linked in the transaction that wrote it: its first state, no second updated_at.
            entry_supersede(new_id=entry.pk, old_id=supersedes_id, changed_by=created_by, new_written=True)
            entry.refresh_from_db()
        else:
            _new_entry_relations_known(entry, items)
    entry.duplicate_of = None
    return entry


def _duplicate_supersede(duplicate: VaultEntry, old_id: int, *, changed_by: str) -> None:
    """A write that duplicates an existing entry and says it supersedes another: the existing entry,
    which the write stands for, takes the supersede (rather than the supersede being dropped), or
    the write is refused saying why it cannot."""
    try:
        entry_supersede(new_id=duplicate.pk, old_id=old_id, changed_by=changed_by)
    except (InvalidInput, Conflict) as exc:
        raise type(exc)(
            f"This content duplicates entry {duplicate.pk}, which would take the supersede: {exc.detail}",
            exc.errors,
        ) from exc
    duplicate.refresh_from_db()


def _new_entry_relations_known(entry: VaultEntry, review_items: list[ReviewItem]) -> None:
    """Record on a just-created entry what reading its relations would find, as a prefetch would:
    the review items this transaction created, and no successor (nothing can supersede an entry
    whose id has not been handed out yet). Saves two queries on every write."""
    items = entry.review_items.all()
    items._result_cache = list(review_items)
    items._prefetch_done = True
    entry._prefetched_objects_cache = {"review_items": items}
    entry._state.fields_cache["superseded_by"] = None


def _version_save(
    entry: VaultEntry, *, action: str, changed_by: str, restore_state: dict | None = None
) -> EntryVersion:
    return EntryVersion.objects.create(
        entry_id=entry.pk,
        agent_id=entry.agent_id,
        action=action,
        category=entry.category,
        content=entry.content,
        tags=list(entry.tags),
        status=entry.status,
        importance=entry.importance,
        changed_by=changed_by[:200],
        restore_state=restore_state or {},
    )


# The statuses an agent's edit may move an entry between; the others are set by review and supersede.
LIVE_STATUSES = (EntryStatus.ACTIVE, EntryStatus.ARCHIVED)


def _agent_status_change_check(entry: VaultEntry, status: str | None) -> None:
    """Refuse an agent's edit that would change the status of an entry outside active/archived:
    releasing a held entry, bringing back a rejected or superseded one, or holding, rejecting or
    superseding one by hand would each pass the review queue by."""
    if status is None or status == entry.status:
        return
    if entry.status in LIVE_STATUSES and status in LIVE_STATUSES:
        return
    how = {
        EntryStatus.PENDING: (
            f"it waits for review: a curator releases it with POST /review/{entry.pk}/approve "
            f"(or refuses it with POST /review/{entry.pk}/reject)"
        ),
        EntryStatus.REJECTED: (
            "it was rejected in review and stays out of memory: write a new entry instead (it is "
            "screened as any new entry is)"
        ),
        EntryStatus.SUPERSEDED: (
            "it was superseded: write a new entry that supersedes the live end of its chain "
            f"(GET /entries/{entry.pk}/chain) instead"
        ),
    }.get(
        entry.status,
        f"review decides what is pending or rejected (POST /review/{entry.pk}/approve or /reject), "
        "and a newer entry with `supersedes` what is superseded",
    )
    raise Conflict(
        f"An edit can only move an entry between active and archived; entry {entry.pk} is "
        f"{entry.status} and cannot become {status}: {how}.",
        [{"loc": ["status"], "msg": "only active and archived can be set by an edit"}],
    )


def _edit_review_reasons(
    entry: VaultEntry, *, category_changed: bool, content_changed: bool, supersedes_id: int | None
) -> list[tuple[str, object, str]]:
    """Why an agent's edit (already applied to `entry`, not saved) must wait for review.

    An entry moved to another category is judged as a new agent write of that category would be
    (instruction-like content, the category's review policy, conflicts with its live entries), so a
    policy cannot be passed by writing to another category and moving the entry; otherwise only new
    content that looks like instructions holds it."""
    if not category_changed:
        findings = trust.poisoning_findings(entry.content) if content_changed else []
        return [(ReviewKind.POISONING, None, finding) for finding in findings]
    _, has_policy = _project_write_flags(entry.project_id)
    reasons = _review_reasons(
        agent=entry.agent,
        category=entry.category,
        content=entry.content,
        source=EntrySource.API,
        has_policy=has_policy,
    )
    # The entry itself, and the entry this edit says it replaces, are no conflict of it.
    return [
        reason for reason in reasons if reason[1] is None or reason[1].pk not in (entry.pk, supersedes_id)
    ]


def entry_update(
    *,
    entry_id: int,
    changes: EntryChanges,
    changed_by: str,
    review: bool = False,
    supersedes_id: int | None = None,
    expected: Expected | None = None,
) -> VaultEntry:
    """Apply changes to an entry, keeping its previous state as a version.

    With review=True (an agent's edit, through the API or MCP) the edit is held to what the agent
    could write: its status may only move between active and archived (what waits for review, was
    rejected or was superseded is the review queue's and the supersede chain's to change, never an
    agent's; 409), content that looks like instructions puts the entry back into the review queue,
    and an entry moved to another category is held for review as a new entry of that category would
    be (review policy, conflicts). With `supersedes_id` the entry also replaces that entry
    (entry_supersede), in the same transaction: when the supersede is refused, the edit is not saved.

    The row is locked for the duration so that two concurrent edits are applied one after the other
    and both leave a version; nothing is lost. An update that changes nothing stores no version.
    With `expected` (If-Match, expected_updated_at), an entry no longer in the state the writer read
    is left as it is (PreconditionFailed), checked under that lock: of two writers that read the same
    state, only the first to get the lock writes (compare-and-set).
    """
    if changes.category is not None:
        _category_check(changes.category)
    if changes.content is not None:
        text_check(changes.content)
    importance = _importance_check(changes.importance)
    if changes.status is not None and changes.status not in EntryStatus.values:
        raise InvalidInput(
            f"Unknown status {changes.status!r}; use one of: {', '.join(EntryStatus.values)}.",
            [{"loc": ["status"], "msg": "unknown status"}],
        )
    with transaction.atomic():
        entry = VaultEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:  # deleted (forget, retention, another request) since the caller looked it up
            raise NotFound(f"Entry {entry_id} not found.")
        entry_precondition_check(entry, expected)
        if review:
            _agent_status_change_check(entry, changes.status)
        new = {
            "category": changes.category if changes.category is not None else entry.category,
            "content": (
                redact_for_project(changes.content, entry.project_id)
                if changes.content is not None
                else entry.content
            ),
            "importance": importance if importance is not None else entry.importance,
            "status": changes.status if changes.status is not None else entry.status,
        }
        if changes.tags is not None:
            new["tags"] = tags_normalise(changes.tags, new["content"])
        elif changes.content is not None:
            # Hashtags newly written into the content join the existing tags.
            new["tags"] = tags_normalise(entry.tags, new["content"])
        else:
            new["tags"] = list(entry.tags)
        if all(getattr(entry, field) == value for field, value in new.items()):
            if supersedes_id is None:
                return entry
            return entry_supersede(new_id=entry.pk, old_id=supersedes_id, changed_by=changed_by)
        _version_save(entry, action=VersionAction.EDIT, changed_by=changed_by)
        category_before = entry.category
        for field, value in new.items():
            setattr(entry, field, value)
        entry.content_hash = trust.content_hash(entry.content)
        entry.sketch = trust.sketch(trust.word_set(entry.content))
        if review and entry.status in LIVE_STATUSES:
            reasons = _edit_review_reasons(
                entry,
                category_changed=category_before != entry.category,
                content_changed=changes.content is not None,
                supersedes_id=supersedes_id,
            )
            for kind, other, detail in reasons:
                ReviewItem.objects.create(entry=entry, kind=kind, other_entry=other, detail=detail[:2000])
            if reasons:
                entry.status = EntryStatus.PENDING
        entry.updated_at = timezone.now()
        entry.save(update_fields=[*new.keys(), "content_hash", "sketch", "updated_at"])
        if supersedes_id is not None:
            entry = entry_supersede(new_id=entry.pk, old_id=supersedes_id, changed_by=changed_by)
    entry.refresh_from_db(fields=["search_vector"])
    return entry


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
        if (
            VaultEntry.objects.filter(supersedes_id=old_id)
            .exclude(pk=new_id)
            .exclude(status=EntryStatus.REJECTED)
            .exists()
        ):
            raise Conflict(f"Entry {old_id} is already superseded by another entry.")
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


# A successor whose supersede took effect: its predecessor is `superseded`. While it waits for review
# (or was rejected) the predecessor stays live (entry_supersede).
EFFECTIVE_SUPERSEDER = (EntryStatus.ACTIVE, EntryStatus.ARCHIVED, EntryStatus.SUPERSEDED)


def _status_set(entry: VaultEntry, status: str, *, changed_by: str) -> None:
    _version_save(entry, action=VersionAction.EDIT, changed_by=changed_by)
    entry.status = status
    entry.updated_at = timezone.now()
    entry.save(update_fields=["status", "updated_at"])


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


# --- Curator pages ------------------------------------------------------------------------------


def entry_task_toggle(
    *, entry_id: int, line: int, done: bool, changed_by: str, task: str | None = None
) -> VaultEntry:
    """Tick or untick the markdown task (`- [ ]` / `- [x]`) on line `line` (0-based) of an entry.

    `done` is the state wanted. The line must still be a task line, and with `task` (its text as the
    page showed it) still that task, so a stale page cannot tick the wrong line after an edit;
    ticking what is already in that state changes nothing. Versioned through entry_update.
    """
    with transaction.atomic():
        entry = VaultEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:
            raise NotFound(f"Entry {entry_id} not found.")
        content = task_line_set(entry.content, line, done, task)
        return entry_update(entry_id=entry_id, changes=EntryChanges(content=content), changed_by=changed_by)
