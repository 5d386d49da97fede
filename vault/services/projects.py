"""Writes of tenancy: projects (their context and redaction switch), agents (and the upgrade of their
workspace files' starting texts), API tokens."""

import secrets
import unicodedata
from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput
from vault.etags import Expected, project_context_precondition_check
from vault.models import (
    Agent,
    ApiToken,
    DeletionAudit,
    Project,
    ProjectContextVersion,
    TokenScope,
    VaultEntry,
    WorkspaceFile,
    path_segment_validator,
    slug_validator,
)
from vault.redaction import redact_for_project
from vault.services.audit import deletion_audit_record
from vault.services.files import file_write
from vault.text import echoed, text_check
from vault.tokens import TOKEN_PREFIX, token_hash
from vault.workspace_templates import DEFAULT_WORKSPACE_FILES, PREVIOUS_DEFAULTS

DEFAULT_PROJECT_SLUG = "default"


def slug_check(value: str, *, field: str) -> str:
    """A project or agent id: a safe path segment (it names the folder of an export), so never `.`/`..`."""
    try:
        slug_validator(value)
        path_segment_validator(value)
    except DjangoValidationError:
        raise InvalidInput(
            f"{field} {echoed(value)} is not valid: use 1-64 characters of a-z, 0-9, '.', '_' or '-', "
            "not only dots.",
            [{"loc": [field], "msg": "invalid slug"}],
        ) from None
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


def project_created_remove(*, project: Project) -> bool:
    """Remove a project an import created, with what the import stored in it, when the import failed: a
    project left behind empty (or holding half an import) took the slug, and running the import again
    with --create-project went into it. A project someone was given a way in to meanwhile (an API token,
    a curator's membership) may hold their memory and is kept. Returns whether it is gone (removed here,
    or by someone else meanwhile)."""
    with transaction.atomic():
        locked = Project.objects.select_for_update().filter(pk=project.pk).first()
        if locked is None:
            return True
        if locked.tokens.exists() or locked.memberships.exists():
            return False
        deletion_audit_record(
            project_id=None,
            project_slug=locked.slug,
            agent_slug="",
            kind="project",
            object_id=locked.pk,
            category="",
            reason=DeletionAudit.Reason.UNDONE,
            criteria={
                "why": "the import that created it failed",
                "agents": locked.agents.count(),
                "entries": VaultEntry.objects.filter(project=locked).count(),
                "files": WorkspaceFile.objects.filter(project=locked).count(),
            },
            content=locked.context,
            item_created_at=locked.created_at,
            deleted_by="import",
            now=timezone.now(),
        )
        locked.delete()
    return True


def project_ensure_default() -> tuple[Project, bool]:
    """The project a fresh install starts with; returns (project, created)."""
    return Project.objects.get_or_create(
        slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default project", "context": ""}
    )


def project_context_set(
    *,
    project: Project,
    content: str,
    changed_by: str,
    seen_changed_at: datetime | None = None,
    expected: Expected | None = None,
) -> Project:
    """Replace the project context (_project.md), keeping the previous text as a version; redacted
    when the project redacts.

    With `seen_changed_at`, the context's `context_changed_at` when the writer read it (the settings
    page's and the admin's forms), a context changed since is refused (Conflict, loc
    "seen_changed_at"), checked under the row lock: a form opened before the orchestrator's PUT and
    saved after it put back the text it had shown. With `expected` (the API's If-Match), the same
    under the same lock, refused as PreconditionFailed (412) rather than as a form's Conflict."""
    text_check(content, field="content", allow_empty=True)
    # Injected into every agent's prompt: redacted as the entries and files are.
    content = redact_for_project(content, project.pk)
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        if seen_changed_at is not None and locked.context_changed_at != seen_changed_at:
            raise Conflict(
                f"The context of project {locked.slug!r} was changed since this form was opened (at "
                f"{timezone.localtime(locked.context_changed_at):%Y-%m-%d %H:%M:%S}); saving would "
                "overwrite that change. Its current text is shown; save again to replace it with yours.",
                [{"loc": ["seen_changed_at"], "msg": "changed since the form was opened"}],
            )
        project_context_precondition_check(locked, expected)
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

    A new agent gets the four workspace files (AGENTS.md, SOUL.md, PROFILE.md, MEMORY.md), in the
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


def agent_name_set(*, agent: Agent, name: str) -> Agent:
    """Give an agent its display name (at most 200 characters, no NUL; blank: its id)."""
    name = text_check(name, field="name", allow_empty=True).strip()[:200] or agent.slug
    Agent.objects.filter(pk=agent.pk).update(name=name)
    agent.name = name
    return agent


def _workspace_defaults_create(agent: Agent) -> None:

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


WORKSPACE_UPGRADE_ACTOR = "workspace upgrade"


def workspace_defaults_upgrade(*, project: Project | None = None, dry_run: bool = False) -> list[dict]:
    """Give every agent (of `project`, else of every project) the current starting text of each
    workspace file whose starting text changed (PREVIOUS_DEFAULTS: AGENTS.md), where the agent's file
    still holds, byte for byte, a text shipped before: nobody has written it, so nothing is lost, and
    the old text stays in the file's history (file_write versions it). A file holding anything else
    was written by someone (a curator, the agent) and is left alone; a deleted one is not brought
    back. Returns one row per live file: {"project", "agent", "path", "state"}, state "upgraded",
    "current" or "edited" ("deleted" when it was deleted meanwhile); with `dry_run` nothing is written ("upgraded" says what would be)."""
    current = {path: content for path, content, _ in DEFAULT_WORKSPACE_FILES}
    files = WorkspaceFile.objects.filter(path__in=list(PREVIOUS_DEFAULTS), deleted_at__isnull=True)
    if project is not None:
        files = files.filter(agent__project=project)
    rows = []
    for file in files.select_related("agent__project").order_by(
        "agent__project__slug", "agent__slug", "path"
    ):
        state = _workspace_default_upgrade(file, current[file.path], dry_run=dry_run)
        rows.append(
            {"project": file.agent.project.slug, "agent": file.agent.slug, "path": file.path, "state": state}
        )
    return rows


def _workspace_default_upgrade(file: WorkspaceFile, content: str, *, dry_run: bool) -> str:
    """Upgrade one file to `content` if it still holds a shipped starting text; returns its state."""
    with transaction.atomic():
        # Under the row lock: a curator's edit that lands meanwhile is kept, never overwritten.
        file = WorkspaceFile.objects.select_for_update(of=("self",)).select_related("agent").get(pk=file.pk)
        if file.content == content:
            return "current"
        if file.deleted_at is not None:
            return "deleted"  # since it was listed: left deleted
        if file.content not in PREVIOUS_DEFAULTS[file.path]:
            return "edited"
        if not dry_run:
            file_write(agent=file.agent, path=file.path, content=content, changed_by=WORKSPACE_UPGRADE_ACTOR)
        return "upgraded"


def token_create(
    *, project: Project, agent: Agent | None = None, scope: str = TokenScope.WRITE, name: str = ""
) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret, which is never stored and cannot be shown again."""
    token_check(project=project, agent=agent, scope=scope, name=name)
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


def token_check(*, project: Project, agent: Agent | None = None, scope: str, name: str = "") -> None:
    """The rules a new token must pass (token_create applies them; a form checks them first, so that a
    refusal is a form error rather than a half-made save)."""
    if scope not in TokenScope.values:
        raise InvalidInput(f"Unknown scope {scope!r}; use one of: {', '.join(TokenScope.values)}.")
    if agent is not None and agent.project_id != project.pk:
        raise InvalidInput("The agent belongs to another project.")
    if agent is not None and scope == TokenScope.ADMIN:
        raise InvalidInput("Admin tokens are project-wide: create them without an agent.")
    control = next((ch for ch in name if unicodedata.category(ch) == "Cc"), None)
    if control is not None:  # a newline or an escape would be shown raw wherever tokens are listed
        raise InvalidInput(
            f"A token's name must not contain control characters (newline, tab, NUL, ESC...); "
            f"this one has U+{ord(control):04X}.",
            errors=[{"loc": ["name"], "msg": "contains control characters"}],
        )
    name_max = ApiToken._meta.get_field("name").max_length
    if len(name) > name_max:
        raise InvalidInput(
            f"A token's name is at most {name_max} characters; this one has {len(name)}.",
            errors=[{"loc": ["name"], "msg": f"at most {name_max} characters"}],
        )


def token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def project_redaction_set(*, project: Project, enabled: bool) -> Project:
    """Switch the redaction of secrets in new messages and entries on or off for a project."""
    Project.objects.filter(pk=project.pk).update(redaction_enabled=enabled)
    project.redaction_enabled = enabled
    return project
