"""Reads of long-term memory, with tenancy enforced here: callers pass the Principal asking."""

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from memoryproject.errors import NotFound
from vault.models import (
    Agent,
    ApiToken,
    Category,
    EntryStatus,
    EntryVersion,
    Project,
    VaultEntry,
    WorkspaceFile,
    WorkspaceFileVersion,
)
from vault.principal import Principal
from vault.services import TOKEN_PREFIX, token_hash

MAX_ID = 2**63 - 1


def token_authenticate(secret: str) -> Principal | None:
    """The principal for a bearer secret, or None when it is unknown or revoked.

    last_used_at is written at most once a minute per token, so a busy agent does not turn every
    read into a write on the same row.
    """
    if not secret or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = ApiToken.objects.filter(token_hash=token_hash(secret), revoked_at__isnull=True).first()
    if token is None:
        return None
    now = timezone.now()
    stale = now - timedelta(seconds=settings.MEMORY_TOKEN_LAST_USED_RESOLUTION_SECONDS)
    if token.last_used_at is None or token.last_used_at < stale:
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale)
        ).update(last_used_at=now)
    return Principal(
        project_id=token.project_id,
        agent_id=token.agent_id,
        scope=token.scope,
        token_id=token.pk,
        label=f"token:{token.prefix}",
    )


def project_for_principal(principal: Principal) -> Project:
    return Project.objects.get(pk=principal.project_id)


def agents_for_principal(principal: Principal) -> QuerySet[Agent]:
    """The agents this principal may see: its own agent when bound to one, else the whole project."""
    agents = Agent.objects.filter(project_id=principal.project_id)
    if principal.agent_id is not None:
        agents = agents.filter(pk=principal.agent_id)
    return agents


def agent_get_for_principal(principal: Principal, slug: str) -> Agent:
    """The agent named by slug if this principal may see it; NotFound otherwise (never 'forbidden')."""
    agent = agents_for_principal(principal).filter(slug=slug).first()
    if agent is None:
        raise NotFound(f"Agent {slug!r} not found.")
    return agent


def agent_list_with_counts(principal: Principal) -> list[dict]:
    """Agents with the number of active entries per category, all five categories always present."""
    agents = agents_for_principal(principal).annotate(
        **{
            f"n_{category}": Count(
                "entries", filter=Q(entries__category=category, entries__status=EntryStatus.ACTIVE)
            )
            for category in Category.values
        }
    )
    return [
        {
            "id": agent.slug,
            "name": agent.name,
            "created_at": agent.created_at,
            "counts": {category: getattr(agent, f"n_{category}") for category in Category.values},
        }
        for agent in agents.order_by("slug")
    ]


def entries_for_principal(principal: Principal) -> QuerySet[VaultEntry]:
    entries = VaultEntry.objects.filter(project_id=principal.project_id)
    if principal.agent_id is not None:
        entries = entries.filter(agent_id=principal.agent_id)
    return entries


def entry_get_for_principal(principal: Principal, entry_id: int) -> VaultEntry:
    if not 1 <= entry_id <= MAX_ID:
        raise NotFound(f"Entry {entry_id} not found.")
    entry = (
        entries_for_principal(principal)
        .select_related("agent", "superseded_by")
        .prefetch_related("review_items")
        .filter(pk=entry_id)
        .first()
    )
    if entry is None:
        raise NotFound(f"Entry {entry_id} not found.")
    return entry


def entry_list(
    *,
    agent: Agent,
    category: str | None = None,
    status: str | None = EntryStatus.ACTIVE,
    tag: str | None = None,
    source: str | None = None,
) -> QuerySet[VaultEntry]:
    """An agent's entries, newest first (ties broken by id, like seed 000's monotonic ids)."""
    entries = (
        VaultEntry.objects.filter(agent=agent)
        .select_related("agent", "superseded_by")
        .prefetch_related("review_items")
    )
    if category:
        entries = entries.filter(category=category)
    if status:
        entries = entries.filter(status=status)
    if tag:
        entries = entries.filter(tags__contains=[tag.lstrip("#").lower()])
    if source:
        entries = entries.filter(source=source)
    return entries.order_by("-created_at", "-id")


def entry_chain(entry: VaultEntry) -> list[VaultEntry]:
    """Every entry linked to this one by supersede links, newest (the live one) first."""
    newest = entry
    seen = {entry.pk}
    while True:
        successor = VaultEntry.objects.filter(supersedes_id=newest.pk).first()
        if successor is None or successor.pk in seen:
            break
        seen.add(successor.pk)
        newest = successor
    chain = [newest]
    while chain[-1].supersedes_id is not None and chain[-1].supersedes_id not in {e.pk for e in chain}:
        chain.append(VaultEntry.objects.get(pk=chain[-1].supersedes_id))
    return chain


def review_queue(
    principal: Principal, *, category: str | None = None, kind: str | None = None
) -> QuerySet[VaultEntry]:
    """Pending entries visible to the principal, oldest first (a queue), with their open review items."""
    entries = entries_for_principal(principal).filter(status=EntryStatus.PENDING)
    if category:
        entries = entries.filter(category=category)
    if kind:
        entries = entries.filter(review_items__kind=kind, review_items__resolved_at__isnull=True).distinct()
    return entries.select_related("agent").prefetch_related("review_items").order_by("created_at", "id")


def review_counts(principal: Principal) -> dict[str, int]:
    """Pending entries per category (all five present), for dashboards."""
    counts = dict.fromkeys(Category.values, 0)
    rows = (
        entries_for_principal(principal)
        .filter(status=EntryStatus.PENDING)
        .values("category")
        .annotate(n=Count("id"))
    )
    for row in rows:
        counts[row["category"]] = row["n"]
    return counts


def entry_history(entry: VaultEntry) -> QuerySet[EntryVersion]:
    """Earlier versions of an entry, newest first."""
    return EntryVersion.objects.filter(entry_id=entry.pk).order_by("-changed_at", "-id")


def workspace_prompt_build(agent: Agent) -> str:
    """The agent's system prompt from its enabled workspace files (seed 001): one `--- NAME ---`
    block per live enabled file, in sort order, then path order."""
    from vault.models import WorkspaceFile

    files = WorkspaceFile.objects.filter(agent=agent, enabled=True, deleted_at__isnull=True).order_by(
        "sort_order", "path"
    )
    return "\n\n".join(f"--- {file.path} ---\n{file.content.strip()}" for file in files)


# --- Workspace files ------------------------------------------------------------------------------


def files_list(*, agent: Agent, prefix: str = "") -> QuerySet[WorkspaceFile]:
    """An agent's live files in prompt order (sort order, then path), optionally under a path prefix."""
    files = WorkspaceFile.objects.filter(agent=agent, deleted_at__isnull=True)
    if prefix:
        files = files.filter(path__startswith=prefix)
    return files.order_by("sort_order", "path")


def file_get(*, agent: Agent, path: str) -> WorkspaceFile:
    """The agent's live file at path; NotFound when there is none (or it was deleted)."""
    file = WorkspaceFile.objects.filter(agent=agent, path=path, deleted_at__isnull=True).first()
    if file is None:
        raise NotFound(f"File {path!r} not found.")
    return file


def file_history(file: WorkspaceFile) -> QuerySet[WorkspaceFileVersion]:
    """Earlier contents of a file, newest first."""
    return WorkspaceFileVersion.objects.filter(file=file).order_by("-changed_at", "-id")
