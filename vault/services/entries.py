"""Writes to long-term memory. Every entry point (API, admin, pages, commands, tasks) calls these."""

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import prefetch_related_objects
from django.utils import timezone

from memoryproject.copy_rows import row_insert
from memoryproject.errors import Conflict, InvalidInput, NotFound
from memoryproject.prepared import prepared_cursor
from vault import selectors, trust
from vault.etags import Expected, entry_precondition_check
from vault.models import (
    Agent,
    Category,
    EntrySource,
    EntryStatus,
    ReviewItem,
    ReviewKind,
    ReviewPolicy,
    VaultEntry,
    VersionAction,
)
from vault.principal import Principal
from vault.redaction import redact, redact_for_project
from vault.services.chains import entry_supersede
from vault.services.duplicates import _conflicts_find, _duplicate_check, _word_sets
from vault.services.versions import _version_save
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


# The choices' values, listed once: TextChoices.values builds its list anew on every read (four reads
# an entry write).
_CATEGORIES = tuple(Category.values)
_SOURCES = tuple(EntrySource.values)
_STATUSES = tuple(EntryStatus.values)


def _category_check(value: str) -> str:
    if value not in _CATEGORIES:
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


# What an agent writes itself, over REST or MCP: screened for instructions and held by a policy's
# hold_agent_writes (extraction and compaction by its hold_extracted).
AGENT_SOURCES = {EntrySource.API, EntrySource.MCP}
HELD_SOURCES = {*AGENT_SOURCES, EntrySource.EXTRACTION, EntrySource.COMPACTION}


def _agent_category_lock(agent_id: int, category: str) -> None:
    """Serialise writes to one agent's category for the rest of the transaction, so that two
    identical memories written at the same moment cannot both pass the duplicate check."""
    with prepared_cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)",
            [agent_id % 2_147_483_647, _CATEGORIES.index(category)],
        )


def _project_write_flags(project_id: int) -> tuple[bool, bool]:
    """(redaction on, any review policy) for a project, in one statement: the entry write path runs
    under a lock and every round trip there counts (written by hand: the ORM took longer to compile
    this one-row query than PostgreSQL took to run it; prepared, PostgreSQL plans it once)."""
    with prepared_cursor() as cursor:
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
    if source in HELD_SOURCES:
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
            held = policy.hold_agent_writes if source in AGENT_SOURCES else policy.hold_extracted
            if held:
                reasons.append((ReviewKind.POLICY, None, f"{policy} holds {source} entries for review"))
    for other, detail in _conflicts_find(agent, category, content):
        reasons.append((ReviewKind.CONFLICT, other, detail))
    return reasons


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
    source: str = EntrySource.API,
) -> VaultEntry:
    """entry_create on behalf of a caller (the API and the MCP server): the entry it supersedes must
    be one the caller may read (else 422 naming `supersedes`), and the entry records who wrote it and
    through what (`source`: api, or mcp for the MCP server's tools).
    The entry comes back with what its response shows already loaded."""
    if supersedes_id is not None:
        selectors.entry_named_for_principal(principal, supersedes_id, field="supersedes")
    entry = entry_create(
        agent=agent,
        category=category,
        content=content,
        tags=tags,
        importance=importance,
        confidence=confidence,
        supersedes_id=supersedes_id,
        created_by=principal.label,
        source=source,
    )
    # What the response shows (its review items, what supersedes it) is read here, where losing the
    # database is a 503, not while the response is serialised, where it was a 500. A new entry that
    # replaced nothing comes back with both already known (entry_create).
    if entry.duplicate_of is not None or supersedes_id is not None:
        prefetch_related_objects([entry], "review_items", "superseded_by")
    return entry


def _new_content_checked(
    agent: Agent, *, category: str, content: str, source: str, status: str
) -> tuple[str, bool]:
    """A new entry's content as it will be stored (redacted when the project asks), checked with its
    category, source and status; and whether the project has a review policy."""
    _category_check(category)
    redaction_on, has_policy = _project_write_flags(agent.project_id)
    content = redact(content) if redaction_on else content
    text_check(content)
    if source not in _SOURCES:
        raise InvalidInput(f"Unknown source {source!r}")
    if status not in _STATUSES:
        raise InvalidInput(f"Unknown status {status!r}; use one of: {', '.join(EntryStatus.values)}.")
    return content, has_policy


def _new_entry_review_reasons(
    agent: Agent,
    *,
    category: str,
    content: str,
    source: str,
    has_policy: bool,
    borderline: tuple | None,
    supersedes_id: int | None,
) -> list[tuple[str, object, str]]:
    """Why a new entry waits for review (none: it is stored active)."""
    reasons = _review_reasons(
        agent=agent, category=category, content=content, source=source, has_policy=has_policy
    )
    if borderline:
        reasons.append(borderline)
    if supersedes_id is not None:
        # The writer says this entry replaces that one: an update, not a conflict or a near-duplicate.
        reasons = [reason for reason in reasons if getattr(reason[1], "pk", None) != supersedes_id]
    return reasons


def _new_entry_relations(
    entry: VaultEntry, reasons: list, *, supersedes_id: int | None, changed_by: str
) -> None:
    """A just-created entry's review items (why it waits for review) and the supersede it asks for."""
    items = [
        ReviewItem.objects.create(entry=entry, kind=kind, other_entry=other, detail=detail[:2000])
        for kind, other, detail in reasons
    ]
    if supersedes_id is not None:
        # Linked in the transaction that wrote it: its first state, no second updated_at.
        entry_supersede(new_id=entry.pk, old_id=supersedes_id, changed_by=changed_by, new_written=True)
        entry.refresh_from_db()
    else:
        _new_entry_relations_known(entry, items)


def _content_words(content: str) -> tuple[str, frozenset[str], list[int]]:
    """A new text's content hash, word set (kept for the duplicate checks of the writes after it) and
    its words' sketch (stored, and compared by the duplicate check)."""
    digest, words = trust.content_hash_and_words(content)
    _word_sets.put(digest, words)
    return digest, words, trust.sketch(words)


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
    curator or the screening already let in, while the entries it stands for are archived."""
    content, has_policy = _new_content_checked(
        agent, category=category, content=content, source=source, status=status
    )
    importance = _importance_check(importance)
    confidence = _importance_check(confidence) if confidence is not None else None
    digest, words, sketch = _content_words(content)
    now = timezone.now()
    with transaction.atomic():
        _agent_category_lock(agent.pk, category)
        duplicate, borderline = (
            _duplicate_check(agent, category, content, digest, words, now, sketch) if dedupe else (None, None)
        )
        if duplicate is not None:
            if supersedes_id is not None:
                _duplicate_supersede(duplicate, supersedes_id, changed_by=created_by)
            return duplicate
        reasons = (
            _new_entry_review_reasons(
                agent,
                category=category,
                content=content,
                source=source,
                has_policy=has_policy,
                borderline=borderline,
                supersedes_id=supersedes_id,
            )
            if review
            else []
        )
        entry = row_insert(  # by hand: Django's INSERT compiler cost more Python than the statement
            VaultEntry(
                project_id=agent.project_id,
                agent=agent,
                category=category,
                content=content,
                content_hash=digest,
                sketch=sketch,
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
        )
        _new_entry_relations(entry, reasons, supersedes_id=supersedes_id, changed_by=created_by)
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


def _edited_fields(entry: VaultEntry, changes: EntryChanges, importance: float | None) -> dict:
    """The entry's category, content (redacted when the project asks), importance, status and tags once
    `changes` are applied."""
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
    return new


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
        new = _edited_fields(entry, changes, importance)
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
