"""Writes to long-term memory. Every entry point (API, admin, pages, commands, tasks) calls these."""

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput, NotFound
from vault import trust
from vault.models import (
    Agent,
    ApiToken,
    Category,
    EntrySource,
    EntryStatus,
    EntryVersion,
    Project,
    ProjectContextVersion,
    ReviewItem,
    ReviewKind,
    ReviewPolicy,
    TokenScope,
    VaultEntry,
    VersionAction,
    WorkspaceFile,
    WorkspaceFileVersion,
    path_segment_validator,
    slug_validator,
)
from vault.redaction import project_redaction_enabled, redact, redact_for_project
from vault.text import tags_normalise, task_line_set, text_check

TOKEN_PREFIX = "mem_"
DEFAULT_PROJECT_SLUG = "default"


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", errors="surrogatepass")).hexdigest()


def slug_check(value: str, *, field: str) -> str:
    """A project or agent id: a safe path segment (it names the folder of an export), so never `.`/`..`."""
    try:
        slug_validator(value)
        path_segment_validator(value)
    except DjangoValidationError:
        raise InvalidInput(
            f"{field} {value!r} is not valid: use 1-64 characters of a-z, 0-9, '.', '_' or '-', "
            "not only dots.",
            [{"loc": [field], "msg": "invalid slug"}],
        ) from None
    return value


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


def project_create(*, slug: str, name: str = "", context: str = "") -> Project:
    """Create a project; the slug is its id in URLs and commands."""
    slug_check(slug, field="project")
    text_check(context, field="context", allow_empty=True)
    try:
        with transaction.atomic():
            return Project.objects.create(slug=slug, name=name or slug, context=context)
    except IntegrityError:
        raise Conflict(f"Project {slug!r} already exists.") from None


def project_ensure_default() -> tuple[Project, bool]:
    """The project a fresh install starts with; returns (project, created)."""
    return Project.objects.get_or_create(
        slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default project", "context": ""}
    )


def project_context_set(*, project: Project, content: str, changed_by: str) -> Project:
    """Replace the project context (seed 000's _project.md), keeping the previous text as a version."""
    text_check(content, field="content", allow_empty=True)
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        if locked.context != content:
            ProjectContextVersion.objects.create(
                project=locked, content=locked.context, changed_by=changed_by
            )
            locked.context = content
            locked.context_updated_at = timezone.now()
            locked.save(update_fields=["context", "context_updated_at"])
    return locked


def agent_ensure(*, project: Project, slug: str, name: str = "") -> Agent:
    """Return the project's agent with this slug, creating it on first use (safe under concurrency).

    A new agent gets seed 001's four workspace files (AGENTS.md, SOUL.md, PROFILE.md, MEMORY.md), in the
    same transaction as the agent row: only the writer whose insert won creates them, so two first uses
    racing each other never create them twice.
    """
    slug_check(slug, field="agent")
    existing = Agent.objects.filter(project=project, slug=slug).first()
    if existing is not None:
        return existing
    with transaction.atomic():
        agent, created = Agent.objects.get_or_create(
            project=project, slug=slug, defaults={"name": name or slug}
        )
        if created:
            _workspace_defaults_create(agent)
    return agent


def _workspace_defaults_create(agent: Agent) -> None:
    from vault.workspace_templates import DEFAULT_WORKSPACE_FILES

    WorkspaceFile.objects.bulk_create(
        WorkspaceFile(
            project_id=agent.project_id,
            agent=agent,
            path=path,
            content=content,
            size=len(content.encode("utf-8")),
            enabled=True,
            sort_order=sort_order,
        )
        for path, content, sort_order in DEFAULT_WORKSPACE_FILES
    )


def token_create(
    *, project: Project, agent: Agent | None = None, scope: str = TokenScope.WRITE, name: str = ""
) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret, which is never stored and cannot be shown again."""
    if scope not in TokenScope.values:
        raise InvalidInput(f"Unknown scope {scope!r}; use one of: {', '.join(TokenScope.values)}.")
    if agent is not None and agent.project_id != project.pk:
        raise InvalidInput("The agent belongs to another project.")
    if agent is not None and scope == TokenScope.ADMIN:
        raise InvalidInput("Admin tokens are project-wide: create them without an agent.")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        project=project,
        agent=agent,
        scope=scope,
        name=name,
        prefix=secret[: len(TOKEN_PREFIX) + 6],
        token_hash=token_hash(secret),
    )
    return token, secret


def token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


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


def _duplicate_find(agent: Agent, category: str, digest: str, words: frozenset[str]):
    """(entry, similarity) of the closest live entry of the same agent and category, or (None, 0).

    One query finds exact matches (same normalised text, through the content-hash index) and
    near-match candidates (through a GIN index on a MinHash sketch of the words), so the cost does
    not grow with the vault. Candidates are screened on their sketches before words are compared.
    """
    signature = trust.sketch(words) if len(words) >= trust.NEAR_DUPLICATE_MIN_WORDS else []
    match = Q(content_hash=digest) | Q(sketch__overlap=signature) if signature else Q(content_hash=digest)
    candidates = (
        VaultEntry.objects.filter(
            match, agent=agent, category=category, status__in=[EntryStatus.ACTIVE, EntryStatus.PENDING]
        )
        .order_by("-created_at", "-id")
        .values_list("pk", "content_hash", "sketch")[:NEAR_DUPLICATE_CANDIDATES]
    )
    best, best_score = None, 0.0
    screened = []
    for pk, other_digest, other_sketch in candidates:
        if other_digest == digest:
            return VaultEntry.objects.get(pk=pk), 1.0
        if trust.sketch_similarity(signature, other_sketch) >= SKETCH_SCREEN:
            screened.append(pk)
    # The texts of the screened candidates in one round trip (this runs under the agent's write lock).
    contents = dict(VaultEntry.objects.filter(pk__in=screened).values_list("pk", "content"))
    for pk in screened:
        score = trust.near_duplicate_score(words, trust.word_set(contents.get(pk, "")))
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
    """(redaction on, any review policy) for a project, in one query: the entry write path runs
    under a lock and every round trip there counts."""
    row = (
        Project.objects.filter(pk=project_id)
        .annotate(has_policy=Exists(ReviewPolicy.objects.filter(project_id=OuterRef("pk"))))
        .values_list("redaction_enabled", "has_policy")
        .first()
    )
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
) -> VaultEntry:
    """Store one memory entry. Tags are the explicit ones plus the content's #hashtags (seed 000).

    Instead of storing a second copy of something the agent already remembers, the existing entry
    is bumped (access count and recency) and returned with `duplicate_of` set. Borderline duplicates,
    likely conflicts, instruction-like content from agents, and entries the project's review policy
    holds are stored as `pending` with a ReviewItem saying why.
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
    now = timezone.now()
    with transaction.atomic():
        _agent_category_lock(agent.pk, category)
        borderline = None
        if dedupe:
            existing, score = _duplicate_find(agent, category, digest, words)
            if existing is not None and score >= DUPLICATE_THRESHOLD:
                VaultEntry.objects.filter(pk=existing.pk).update(
                    access_count=F("access_count") + 1, last_accessed_at=now
                )
                existing.refresh_from_db()
                existing.duplicate_of = existing.pk
                return existing
            if existing is not None and score >= BORDERLINE_THRESHOLD:
                borderline = (ReviewKind.DUPLICATE, existing, f"{score:.0%} similar to entry {existing.pk}")
        reasons = _review_reasons(
            agent=agent, category=category, content=content, source=source, has_policy=has_policy
        )
        if borderline:
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
        for kind, other, detail in reasons:
            ReviewItem.objects.create(entry=entry, kind=kind, other_entry=other, detail=detail[:2000])
        if supersedes_id is not None:
            entry_supersede(new_id=entry.pk, old_id=supersedes_id, changed_by=created_by)
            entry.refresh_from_db()
    entry.duplicate_of = None
    return entry


def _version_save(entry: VaultEntry, *, action: str, changed_by: str) -> EntryVersion:
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
    )


def entry_update(
    *, entry_id: int, changes: EntryChanges, changed_by: str, review: bool = False
) -> VaultEntry:
    """Apply changes to an entry, keeping its previous state as a version.

    With review=True (agent edits through the API), content that looks like instructions puts the
    entry back into the review queue.

    The row is locked for the duration so that two concurrent edits are applied one after the other
    and both leave a version; nothing is lost. An update that changes nothing stores no version.
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
            return entry
        _version_save(entry, action=VersionAction.EDIT, changed_by=changed_by)
        for field, value in new.items():
            setattr(entry, field, value)
        entry.content_hash = trust.content_hash(entry.content)
        entry.sketch = trust.sketch(trust.word_set(entry.content))
        if review and changes.content is not None and entry.status == EntryStatus.ACTIVE:
            findings = trust.poisoning_findings(entry.content)
            for finding in findings:
                ReviewItem.objects.create(entry=entry, kind=ReviewKind.POISONING, detail=finding)
            if findings:
                entry.status = EntryStatus.PENDING
        entry.updated_at = timezone.now()
        entry.save(update_fields=[*new.keys(), "content_hash", "sketch", "updated_at"])
    entry.refresh_from_db(fields=["search_vector"])
    return entry


def entry_restore(*, entry_id: int, version_id: int, changed_by: str) -> VaultEntry:
    """Bring back an earlier version's content, tags, category and importance (itself versioned)."""
    version = EntryVersion.objects.filter(pk=version_id, entry_id=entry_id).first()
    if version is None:
        raise InvalidInput(f"Version {version_id} does not belong to entry {entry_id}.")
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


def entry_delete(*, entry_id: int, deleted_by: str) -> EntryVersion:
    """Delete an entry; its last state is kept as a 'delete' version."""
    with transaction.atomic():
        entry = VaultEntry.objects.select_for_update().get(pk=entry_id)
        version = _version_save(entry, action=VersionAction.DELETE, changed_by=deleted_by)
        entry.delete()
    return version


# --- Workspace files (seed 001) ------------------------------------------------------------------

WORKSPACE_PATH_MAX = 255


def file_path_check(path: str, *, markdown_only: bool = True) -> str:
    """Apply seed 001's path rules; each violation names the rule broken."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidInput("path must not be empty", [{"loc": ["path"], "msg": "empty"}])
    problems = []
    if "\x00" in path:
        problems.append("no NUL characters")
    if "\\" in path:
        problems.append("no backslashes")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        problems.append("relative paths only (no absolute paths)")
    if any(part == ".." for part in path.replace("\\", "/").split("/")):
        problems.append("no '..' segments")
    if any(part in ("", ".") for part in path.split("/")):
        problems.append("no empty or '.' segments")
    if len(path) > WORKSPACE_PATH_MAX:
        problems.append(f"at most {WORKSPACE_PATH_MAX} characters")
    if markdown_only and not path.endswith(".md"):
        problems.append("workspace files must end in .md")
    if problems:
        raise InvalidInput(
            f"Invalid path {path!r}: {'; '.join(problems)}.",
            [{"loc": ["path"], "msg": problem} for problem in problems],
        )
    return path


def file_write(
    *,
    agent: Agent,
    path: str,
    content: str,
    changed_by: str,
    enabled: bool | None = None,
    sort_order: int | None = None,
    markdown_only: bool = True,
) -> tuple[WorkspaceFile, bool]:
    """Create or overwrite a workspace file; the previous content is versioned. Returns (file, created)."""
    file_path_check(path, markdown_only=markdown_only)
    content = redact_for_project(content, agent.project_id)
    text_check(content, allow_empty=True)
    with transaction.atomic():
        file, created = _file_lock_or_create(agent, path)
        if not created and file.content != content:
            WorkspaceFileVersion.objects.create(
                file=file, action=VersionAction.EDIT, content=file.content, changed_by=changed_by[:200]
            )
        file.content = content
        file.size = len(content.encode("utf-8"))
        if enabled is not None:
            file.enabled = enabled
        if sort_order is not None:
            file.sort_order = sort_order
        file.save()
    return file, created


def _file_lock_or_create(agent: Agent, path: str) -> tuple[WorkspaceFile, bool]:
    """Lock the live file at path, or insert it; a concurrent insert of the same path is waited for and
    locked instead (the partial unique constraint decides who created it). Call inside a transaction."""
    file = (
        WorkspaceFile.objects.select_for_update()
        .filter(agent=agent, path=path, deleted_at__isnull=True)
        .first()
    )
    if file is not None:
        return file, False
    try:
        with transaction.atomic():
            return WorkspaceFile.objects.create(project_id=agent.project_id, agent=agent, path=path), True
    except IntegrityError:
        return (
            WorkspaceFile.objects.select_for_update().get(agent=agent, path=path, deleted_at__isnull=True),
            False,
        )


def file_append(
    *, agent: Agent, path: str, text: str, changed_by: str, header: str = "", unless_present: str = ""
) -> WorkspaceFile:
    """Append to a workspace file, creating it (with `header` first) when missing.

    The row is locked while appending so that concurrent appends (two exchanges finishing at once)
    are both kept. Appends are not versioned: the previous content is a prefix of the new one. With
    `unless_present`, nothing is appended when the file already contains that text (checked under the
    lock, so two identical concurrent appends store it once).
    """
    return file_append_many(
        agent=agent, path=path, parts=[(text, unless_present)], changed_by=changed_by, header=header
    )


def file_append_many(
    *, agent: Agent, path: str, parts: list[tuple[str, str]], changed_by: str, header: str = ""
) -> WorkspaceFile:
    """file_append for several (text, unless_present) parts in order, in one locked rewrite of the file:
    a batch of messages logs all its exchanges at the cost of one."""
    file_path_check(path)
    redacting = project_redaction_enabled(agent.project_id)
    parts = [
        (redact(text) if redacting else text, redact(unless) if redacting and unless else unless)
        for text, unless in parts
    ]
    for text, _ in parts:
        text_check(text, allow_empty=True)
    with transaction.atomic():
        file = (
            WorkspaceFile.objects.select_for_update()
            .filter(agent=agent, path=path, deleted_at__isnull=True)
            .first()
        )
        if file is None:
            try:
                with transaction.atomic():
                    file = WorkspaceFile.objects.create(
                        project_id=agent.project_id, agent=agent, path=path, content=header
                    )
            except IntegrityError:
                file = WorkspaceFile.objects.select_for_update().get(
                    agent=agent, path=path, deleted_at__isnull=True
                )
        content = file.content
        for text, unless in parts:
            if unless and unless in content:
                continue
            content += text
        if content == file.content:
            return file
        file.content = content
        file.size = len(content.encode("utf-8"))
        file.save(update_fields=["content", "size", "updated_at"])
    return file


def daily_note_path(day) -> str:
    return f"memory/{day:%Y-%m-%d}.md"


_DAILY_TIME_HEADING_RE = re.compile(r"^\s*## \[\d{1,2}:\d{2}(?::\d{2})?\]\n")


def daily_note_append(*, agent: Agent, when: datetime, text: str, changed_by: str = "") -> WorkspaceFile:
    """Append to the agent's daily note for `when`'s date (seed 002: memory/YYYY-MM-DD.md).

    Daily notes are disabled files: searched, not injected into the system prompt. A block that opens
    with a `## [HH:MM:SS]` time heading (a logged exchange) is logged once a day: when the note already
    holds the same exchange under another time, it is not appended again (a replayed conversation
    leaves one copy, issue 8).
    """
    day = timezone.localtime(when).date()
    heading = _DAILY_TIME_HEADING_RE.match(text)
    body = text[heading.end() :].strip() if heading else ""
    return file_append(
        agent=agent,
        path=daily_note_path(day),
        text=text,
        changed_by=changed_by,
        header=f"# Daily Notes -- {day:%Y-%m-%d}\n",
        unless_present=f"]\n{body}\n" if body else "",
    )


# --- Supersede and review (trust) ----------------------------------------------------------------


def daily_notes_append(*, agent: Agent, blocks: list[tuple[datetime, str]], changed_by: str = "") -> None:
    """daily_note_append for several (when, text) blocks: one locked rewrite per day's note."""
    by_day: dict = {}
    for when, text in blocks:
        heading = _DAILY_TIME_HEADING_RE.match(text)
        body = text[heading.end() :].strip() if heading else ""
        day = timezone.localtime(when).date()
        by_day.setdefault(day, []).append((text, f"]\n{body}\n" if body else ""))
    for day, parts in by_day.items():
        file_append_many(
            agent=agent,
            path=daily_note_path(day),
            parts=parts,
            changed_by=changed_by,
            header=f"# Daily Notes -- {day:%Y-%m-%d}\n",
        )


def entry_supersede(*, new_id: int, old_id: int, changed_by: str) -> VaultEntry:
    """Make `new` replace `old`: old becomes `superseded` (versioned), both stay linked and readable.

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
        new.supersedes_id = old_id
        new.save(update_fields=["supersedes"])
        if new.status == EntryStatus.PENDING:
            return new
        if old.status != EntryStatus.SUPERSEDED:
            _version_save(old, action=VersionAction.EDIT, changed_by=changed_by)
            old.status = EntryStatus.SUPERSEDED
            old.updated_at = timezone.now()
            old.save(update_fields=["status", "updated_at"])
    return new


def _review_resolve(entry: VaultEntry, *, resolution: str, by: str) -> None:
    ReviewItem.objects.filter(entry=entry, resolved_at__isnull=True).update(
        resolved_at=timezone.now(), resolution=resolution, resolved_by=by[:200]
    )


def _pending_get(entry_id: int) -> VaultEntry:
    entry = VaultEntry.objects.select_for_update().filter(pk=entry_id).first()
    if entry is None:
        raise NotFound(f"Entry {entry_id} not found.")
    if entry.status != EntryStatus.PENDING:
        raise Conflict(f"Entry {entry_id} is {entry.status}, not pending review.")
    return entry


def review_approve(
    *, entry_id: int, by: str, content: str | None = None, supersede_conflicting: bool = False
) -> VaultEntry:
    """Approve a pending entry, optionally editing it first (edit-and-approve). With
    supersede_conflicting, the entries it conflicts with become superseded by it."""
    with transaction.atomic():
        entry = _pending_get(entry_id)
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


def review_reject(*, entry_id: int, by: str, reason: str = "") -> VaultEntry:
    """Reject a pending entry: it stays stored (audit), never active, never injected."""
    with transaction.atomic():
        entry = _pending_get(entry_id)
        entry.status = EntryStatus.REJECTED
        entry.supersedes_id = None  # a refused replacement leaves the old entry as it was
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "supersedes", "updated_at"])
        _review_resolve(entry, resolution=f"rejected: {reason}"[:32] if reason else "rejected", by=by)
    return entry


def review_merge(*, entry_id: int, into_id: int, by: str) -> VaultEntry:
    """Fold a pending entry into an existing one (its text appended unless already there, tags
    united); the pending entry becomes superseded by the target. Returns the target."""
    if entry_id == into_id:
        raise InvalidInput("An entry cannot be merged into itself.")
    with transaction.atomic():
        entry = _pending_get(entry_id)
        target = (
            VaultEntry.objects.select_for_update().filter(pk=into_id, project_id=entry.project_id).first()
        )
        if target is None:
            raise NotFound(f"Entry {into_id} (merge target) not found.")
        merged = target.content
        if trust.text_normalise(entry.content) not in trust.text_normalise(target.content):
            merged = f"{target.content.rstrip()}\n\n{entry.content.strip()}"
        entry_update(
            entry_id=target.pk,
            changes=EntryChanges(content=merged, tags=[*target.tags, *entry.tags]),
            changed_by=by,
        )
        entry.status = EntryStatus.SUPERSEDED
        entry.supersedes_id = None  # folded into the target, it replaces nothing itself
        entry.updated_at = timezone.now()
        entry.save(update_fields=["status", "supersedes", "updated_at"])
        _review_resolve(entry, resolution=f"merged into {target.pk}", by=by)
    target.refresh_from_db()
    return target


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
    return VaultEntry.objects.filter(pk__in=ids).update(
        access_count=F("access_count") + 1, last_accessed_at=timezone.now()
    )


def file_path_rules_check(path: str) -> str:
    """The path rules for a file written through the API: seed 001's rules, with `.md` required except
    under `memories/`, where the memory tool may keep any text file (notes.txt, prefs.xml...)."""
    return file_path_check(path, markdown_only=not path.startswith("memories/"))


def _file_locked(agent: Agent, path: str) -> WorkspaceFile:
    file = (
        WorkspaceFile.objects.select_for_update()
        .filter(agent=agent, path=path, deleted_at__isnull=True)
        .first()
    )
    if file is None:
        raise NotFound(f"File {path!r} not found.")
    return file


def file_edit(
    *, agent: Agent, path: str, old_text: str, new_text: str, replace_all: bool = False, changed_by: str
) -> tuple[WorkspaceFile, int]:
    """Exact find-and-replace in a file (seed 001's edit_workspace_memory_file); returns (file, count).

    The text must be present, and present once unless replace_all: an ambiguous edit is refused rather
    than guessed. The previous content is versioned.
    """
    if not isinstance(old_text, str) or old_text == "":
        raise InvalidInput("old_text must not be empty", [{"loc": ["old_text"], "msg": "empty"}])
    text_check(new_text, field="new_text", allow_empty=True)
    with transaction.atomic():
        file = _file_locked(agent, path)
        count = file.content.count(old_text)
        if count == 0:
            raise InvalidInput(
                f"old_text was not found in {path}; nothing was replaced.",
                [{"loc": ["old_text"], "msg": "not found"}],
            )
        if count > 1 and not replace_all:
            raise InvalidInput(
                f"old_text occurs {count} times in {path}; include more context to make it unique, "
                "or set replace_all to replace every occurrence. Nothing was replaced.",
                [{"loc": ["old_text"], "msg": f"found {count} times"}],
            )
        content = file.content.replace(old_text, new_text)
        text_check(content, allow_empty=True)
        if content != file.content:
            WorkspaceFileVersion.objects.create(
                file=file, action=VersionAction.EDIT, content=file.content, changed_by=changed_by[:200]
            )
            file.content = content
            file.size = len(content.encode("utf-8"))
            file.save(update_fields=["content", "size", "updated_at"])
    return file, count


def file_delete(*, agent: Agent, path: str, deleted_by: str) -> WorkspaceFile:
    """Soft-delete a file: it leaves listings, prompts and search, and its last content is versioned."""
    with transaction.atomic():
        file = _file_locked(agent, path)
        WorkspaceFileVersion.objects.create(
            file=file, action=VersionAction.DELETE, content=file.content, changed_by=deleted_by[:200]
        )
        file.deleted_at = timezone.now()
        file.save(update_fields=["deleted_at", "updated_at"])
    return file


def file_settings_set(
    *, agent: Agent, path: str, enabled: bool | None = None, sort_order: int | None = None
) -> WorkspaceFile:
    """Change whether a file is injected into the system prompt, and where (sort order)."""
    if sort_order is not None and not -1_000_000 <= sort_order <= 1_000_000:
        raise InvalidInput(
            "sort_order must be between -1000000 and 1000000",
            [{"loc": ["sort_order"], "msg": "out of range"}],
        )
    with transaction.atomic():
        file = _file_locked(agent, path)
        if enabled is not None:
            file.enabled = enabled
        if sort_order is not None:
            file.sort_order = sort_order
        file.save(update_fields=["enabled", "sort_order", "updated_at"])
    return file


def file_rename(*, agent: Agent, old_path: str, new_path: str, markdown_only: bool = True) -> WorkspaceFile:
    """Move a file to a new path, history included; the destination must not exist."""
    file_path_check(new_path, markdown_only=markdown_only)
    with transaction.atomic():
        file = _file_locked(agent, old_path)
        if WorkspaceFile.objects.filter(agent=agent, path=new_path, deleted_at__isnull=True).exists():
            raise Conflict(f"The destination {new_path} already exists.")
        file.path = new_path
        try:
            with transaction.atomic():
                file.save(update_fields=["path", "updated_at"])
        except IntegrityError:
            raise Conflict(f"The destination {new_path} already exists.") from None
    return file


def file_create(
    *, agent: Agent, path: str, content: str, changed_by: str, markdown_only: bool = True
) -> WorkspaceFile:
    """Create a file that must not exist yet (the memory tool's `create`); Conflict when it does."""
    file_path_check(path, markdown_only=markdown_only)
    text_check(content, allow_empty=True)
    with transaction.atomic():
        file, created = _file_lock_or_create(agent, path)
        if not created:
            raise Conflict(f"File {path} already exists")
        file.content = content
        file.size = len(content.encode("utf-8"))
        file.save(update_fields=["content", "size", "updated_at"])
    return file


# --- Maintenance (issue 5): implemented in vault/maintenance.py, imported lazily because it builds on
# the services above. These are the names the API, commands, tasks and other apps call. ------------


def compaction_run(*, project: Project, dry_run: bool, now: datetime | None = None, trigger: str = "api"):
    """Seed 000's compaction for one project; returns the CompactionRun (unsaved for a dry run)."""
    from vault import maintenance

    return maintenance.compaction_run(project=project, dry_run=dry_run, now=now, trigger=trigger)


def compaction_run_all(*, dry_run: bool, now: datetime | None = None, trigger: str = "schedule"):
    """Compaction of every project, one recorded run each."""
    from vault import maintenance

    return maintenance.compaction_run_all(dry_run=dry_run, now=now, trigger=trigger)


def extraction_enqueue(*, agent: Agent, session_id: int, trigger_source: str) -> bool:
    """Queue seed 001's post-conversation extraction (call on session close or when it goes quiet)."""
    from vault import maintenance

    return maintenance.extraction_enqueue(agent=agent, session_id=session_id, trigger_source=trigger_source)


def consolidation_run(*, agent: Agent, now: datetime | None = None) -> dict:
    """Fold recent daily notes into MEMORY.md (seed 001's emergence)."""
    from vault import maintenance

    return maintenance.consolidation_run(agent=agent, now=now)


def retention_run(*, project: Project, dry_run: bool, now: datetime | None = None, trigger: str = "api"):
    """Seed 004's retention, purge and size limit for one project; returns the run record."""
    from vault import maintenance

    return maintenance.retention_run(project=project, dry_run=dry_run, now=now, trigger=trigger)


def forget(**kwargs) -> dict:
    """Seed 004's selective deletion, audited (see vault.maintenance.forget for the arguments)."""
    from vault import maintenance

    return maintenance.forget(**kwargs)


# --- Curator pages (issue 7) ---------------------------------------------------------------------


def entry_task_toggle(*, entry_id: int, line: int, done: bool, changed_by: str) -> VaultEntry:
    """Tick or untick the markdown task (`- [ ]` / `- [x]`) on line `line` (0-based) of an entry.

    `done` is the state wanted. The line must still be a task line, so a stale page cannot tick the
    wrong line after an edit; ticking what is already in that state changes nothing. Versioned
    through entry_update.
    """
    with transaction.atomic():
        entry = VaultEntry.objects.select_for_update().get(pk=entry_id)
        content = task_line_set(entry.content, line, done)
        return entry_update(entry_id=entry_id, changes=EntryChanges(content=content), changed_by=changed_by)


def project_redaction_set(*, project: Project, enabled: bool) -> Project:
    """Switch the redaction of secrets in new messages and entries on or off for a project."""
    Project.objects.filter(pk=project.pk).update(redaction_enabled=enabled)
    project.redaction_enabled = enabled
    return project
