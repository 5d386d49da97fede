"""Writes to long-term memory. Every entry point (API, admin, pages, commands, tasks) calls these."""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput
from vault.models import (
    Agent,
    ApiToken,
    Category,
    EntrySource,
    EntryStatus,
    EntryVersion,
    Project,
    ProjectContextVersion,
    TokenScope,
    VaultEntry,
    VersionAction,
    WorkspaceFile,
    WorkspaceFileVersion,
    slug_validator,
)
from vault.text import tags_normalise, task_line_set, text_check

TOKEN_PREFIX = "mem_"
DEFAULT_PROJECT_SLUG = "default"


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", errors="surrogatepass")).hexdigest()


def slug_check(value: str, *, field: str) -> str:
    try:
        slug_validator(value)
    except DjangoValidationError:
        raise InvalidInput(
            f"{field} {value!r} is not valid: use 1-64 characters of a-z, 0-9, '.', '_' or '-'.",
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
    """Return the project's agent with this slug, creating it on first use (safe under concurrency)."""
    slug_check(slug, field="agent")
    agent, _ = Agent.objects.get_or_create(project=project, slug=slug, defaults={"name": name or slug})
    return agent


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
) -> VaultEntry:
    """Store one memory entry. Tags are the explicit ones plus the content's #hashtags (seed 000)."""
    _category_check(category)
    text_check(content)
    importance = _importance_check(importance)
    if source not in EntrySource.values:
        raise InvalidInput(f"Unknown source {source!r}")
    if status not in EntryStatus.values:
        raise InvalidInput(f"Unknown status {status!r}; use one of: {', '.join(EntryStatus.values)}.")
    now = timezone.now()
    return VaultEntry.objects.create(
        project_id=agent.project_id,
        agent=agent,
        category=category,
        content=content,
        tags=tags_normalise(tags, content),
        importance=0.5 if importance is None else importance,
        source=source,
        status=status,
        created_by=created_by[:200],
        created_at=created_at or now,
        updated_at=created_at or now,
        legacy_id=legacy_id,
    )


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


def entry_update(*, entry_id: int, changes: EntryChanges, changed_by: str) -> VaultEntry:
    """Apply changes to an entry, keeping its previous state as a version.

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
        entry = VaultEntry.objects.select_for_update().get(pk=entry_id)
        new = {
            "category": changes.category if changes.category is not None else entry.category,
            "content": changes.content if changes.content is not None else entry.content,
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
        entry.updated_at = timezone.now()
        entry.save(update_fields=[*new.keys(), "updated_at"])
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
    text_check(content, allow_empty=True)
    with transaction.atomic():
        file = (
            WorkspaceFile.objects.select_for_update()
            .filter(agent=agent, path=path, deleted_at__isnull=True)
            .first()
        )
        created = file is None
        if created:
            file = WorkspaceFile(project_id=agent.project_id, agent=agent, path=path)
        elif file.content != content:
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


def file_append(*, agent: Agent, path: str, text: str, changed_by: str, header: str = "") -> WorkspaceFile:
    """Append to a workspace file, creating it (with `header` first) when missing.

    The row is locked while appending so that concurrent appends (two exchanges finishing at once)
    are both kept. Appends are not versioned: the previous content is a prefix of the new one.
    """
    file_path_check(path)
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
        file.content = file.content + text
        file.size = len(file.content.encode("utf-8"))
        file.save(update_fields=["content", "size", "updated_at"])
    return file


def daily_note_path(day) -> str:
    return f"memory/{day:%Y-%m-%d}.md"


def daily_note_append(*, agent: Agent, when: datetime, text: str, changed_by: str = "") -> WorkspaceFile:
    """Append to the agent's daily note for `when`'s date (seed 002: memory/YYYY-MM-DD.md).

    Daily notes are disabled files: searched, not injected into the system prompt.
    """
    day = timezone.localtime(when).date()
    return file_append(
        agent=agent,
        path=daily_note_path(day),
        text=text,
        changed_by=changed_by,
        header=f"# Daily Notes -- {day:%Y-%m-%d}\n",
    )


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
