"""Reads of long-term memory, with tenancy enforced here: callers pass the Principal asking."""

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.db.models import Count, Func, Prefetch, Q, QuerySet
from django_q.models import Schedule

from memoryproject.errors import InvalidInput, NotFound
from memoryproject.prepared import prepared_cursor
from memoryproject.row_read import row_first
from vault.authentication import AGENT_FIELDS, AGENT_SLUG_INDEX
from vault.models import (
    WORKSPACE_PATH_MAX,
    Agent,
    ApiToken,
    Category,
    CompactionRun,
    DeletionAudit,
    EntryStatus,
    EntryVersion,
    Project,
    ProjectContextVersion,
    ReviewItem,
    ReviewPolicy,
    VaultEntry,
    VersionAction,
    WorkspaceFile,
    WorkspaceFileVersion,
)
from vault.principal import Principal
from vault.text import echoed

MAX_ID = 2**63 - 1


def daily_note_path(day, part: int = 1) -> str:
    """Where the agent's daily note of `day` lives: memory/YYYY-MM-DD.md, and its continuations, parts 2,
    3, ... (written once a part holds MEMORY_DAILY_NOTE_MAX_BYTES): memory/YYYY-MM-DD-2.md, -3.md, ..."""
    return f"memory/{day:%Y-%m-%d}.md" if part == 1 else f"memory/{day:%Y-%m-%d}-{part}.md"


_DAILY_NOTE_PART_RE = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})(?:-([2-9]|[1-9]\d+))?\.md$")


def daily_note_part(path: str) -> tuple[str, int] | None:
    """(YYYY-MM-DD, part) of a daily note's path (part 1 is memory/YYYY-MM-DD.md), None for any other."""
    match = _DAILY_NOTE_PART_RE.match(path)
    return (match.group(1), int(match.group(2) or 1)) if match else None


def daily_note_parts(agent_id: int, day) -> list[WorkspaceFile]:
    """The live parts of the agent's note of `day`, in order (daily_note_path)."""
    prefix = f"memory/{day:%Y-%m-%d}"
    parts = [
        file
        for file in WorkspaceFile.objects.filter(
            agent_id=agent_id, path__startswith=prefix, deleted_at__isnull=True
        )
        if daily_note_part(file.path)
    ]
    return sorted(parts, key=lambda file: daily_note_part(file.path)[1])


def daily_note_content(agent_id: int, day) -> str | None:
    """The whole note of `day`: its parts one after the other, or None when it has none."""
    parts = daily_note_parts(agent_id, day)
    return "".join(file.content for file in parts) if parts else None


def project_for_principal(principal: Principal) -> Project:
    """The principal's project; Project.DoesNotExist when it is gone (as `get` raises). Read by a
    prepared statement: the ORM's compiling of this one-row read cost about 1.5 ms of CPU a request."""
    project = row_first(Project, "id = %s", [principal.project_id])
    if project is None:
        raise Project.DoesNotExist("Project matching query does not exist.")
    return project


def agents_for_principal(principal: Principal) -> QuerySet[Agent]:
    """The agents this principal may see: its own agent when bound to one, else the whole project."""
    agents = Agent.objects.filter(project_id=principal.project_id)
    if principal.agent_id is not None:
        agents = agents.filter(pk=principal.agent_id)
    return agents


def agent_of_principal(principal: Principal) -> Agent | None:
    """The agent an agent-bound token belongs to; None for a project-wide token. An agent token's own
    agent was read with the token (token_authenticate): no query."""
    if principal.agent_row is not None:
        return Agent.from_db(connection.alias, AGENT_FIELDS, principal.agent_row)
    return Agent.objects.filter(pk=principal.agent_id).first() if principal.agent_id else None


def agent_get_for_principal(principal: Principal, slug: str) -> Agent:
    """The agent named by slug if this principal may see it; NotFound otherwise (never 'forbidden').

    Most API requests name an agent: one statement by hand (0.24 ms; the ORM's `.first()` took
    0.74 ms, most of it compiling the query and a join its default ordering brought in); prepared.
    An agent token's own agent, read with the token, needs none."""
    if principal.agent_row is not None:
        if principal.agent_row[AGENT_SLUG_INDEX] != slug:
            raise NotFound(f"Agent {echoed(slug)} not found.")
        return Agent.from_db(connection.alias, AGENT_FIELDS, principal.agent_row)
    named = principal.named_agent_row
    if named is not None and named[AGENT_SLUG_INDEX] == slug:  # read with a project-wide token
        return Agent.from_db(connection.alias, AGENT_FIELDS, named)
    bound = "" if principal.agent_id is None else " AND id = %s"
    with prepared_cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(AGENT_FIELDS)} FROM {Agent._meta.db_table} "
            f"WHERE project_id = %s AND slug = %s{bound}",
            [principal.project_id, slug] + ([] if principal.agent_id is None else [principal.agent_id]),
        )
        row = cursor.fetchone()
    if row is None:
        raise NotFound(f"Agent {echoed(slug)} not found.")
    return Agent.from_db(connection.alias, AGENT_FIELDS, row)


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


def entry_named_for_principal(principal: Principal, entry_id: int, *, field: str) -> VaultEntry:
    """The entry a body field names (a write's `supersedes`, a merge's `into`), if this principal may
    see it. One it may not see is bad input in that field (422 naming it), not a missing resource: the
    request's own address exists (it was answered 404, as a read of the entry would be). Told apart
    from a missing entry no more than a read tells them apart."""
    try:
        return entry_get_for_principal(principal, entry_id)
    except NotFound:
        raise InvalidInput(
            f"{field}: entry {entry_id} not found.", [{"loc": [field], "msg": f"entry {entry_id} not found"}]
        ) from None


def entry_list(
    *,
    agent: Agent,
    category: str | None = None,
    status: str | None = EntryStatus.ACTIVE,
    tag: str | None = None,
    source: str | None = None,
) -> QuerySet[VaultEntry]:
    """An agent's entries, newest first (ties broken by id, like the monotonic ids)."""
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


def entry_history(entry: "VaultEntry | DeletedEntry") -> QuerySet[EntryVersion]:
    """Earlier versions of an entry, newest first."""
    return EntryVersion.objects.filter(entry_id=entry.pk).order_by("-changed_at", "-id")


def workspace_prompt_build(agent: Agent) -> str:
    """The agent's system prompt from its enabled workspace files: one `--- NAME ---`
    block per live enabled file, in sort order, then path order."""

    with prepared_cursor() as cursor:  # every context builds it: not the ORM's 2 ms of Python
        cursor.execute(_WORKSPACE_PROMPT_SQL, [agent.pk])
        return "\n\n".join(f"--- {path} ---\n{content.strip()}" for path, content in cursor.fetchall())


_WORKSPACE_PROMPT_SQL = "SELECT path, content FROM vault_workspacefile WHERE agent_id = %s AND enabled AND deleted_at IS NULL ORDER BY sort_order, path"  # noqa: E501


# --- Workspace files ------------------------------------------------------------------------------


def files_list(*, agent: Agent, prefix: str = "") -> QuerySet[WorkspaceFile]:
    """An agent's live files in prompt order (sort order, then path), optionally under a path prefix."""
    files = WorkspaceFile.objects.filter(agent=agent, deleted_at__isnull=True)
    if prefix:
        files = files.filter(path__startswith=prefix)
    return files.order_by("sort_order", "path")


def file_path_lookup_check(path: str) -> None:
    """A path a read or a change of an existing file names: no stored file has one longer than
    WORKSPACE_PATH_MAX, so such a path is refused as invalid (422), as a write of it is, not looked up
    and echoed whole in a 404."""
    if len(path) > WORKSPACE_PATH_MAX:
        raise InvalidInput(
            f"Invalid path {echoed(path)}: at most {WORKSPACE_PATH_MAX} characters.",
            [{"loc": ["path"], "msg": f"at most {WORKSPACE_PATH_MAX} characters"}],
        )


def file_not_found(path: str) -> NotFound:
    return NotFound(f"File {echoed(path, WORKSPACE_PATH_MAX)} not found.")


def file_get(*, agent: Agent, path: str) -> WorkspaceFile:
    """The agent's live file at path; NotFound when there is none (or it was deleted)."""
    file_path_lookup_check(path)
    file = WorkspaceFile.objects.filter(agent=agent, path=path, deleted_at__isnull=True).first()
    if file is None:
        raise file_not_found(path)
    return file


def file_history(file: WorkspaceFile) -> QuerySet[WorkspaceFileVersion]:
    """Earlier contents of a file, newest first."""
    return WorkspaceFileVersion.objects.filter(file=file).order_by("-changed_at", "-id")


# --- Curator pages: what a logged-in user may see -------------------------------------


def user_is_curator(user) -> bool:
    """Staff, or members of the curator group (MEMORY_CURATOR_GROUP), may use the curator pages."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or user.groups.filter(name=settings.MEMORY_CURATOR_GROUP).exists()


def projects_for_user(user) -> QuerySet[Project]:
    """The projects whose pages this user may see.

    Superusers: all. Anyone with ProjectMembership rows: exactly those projects. Staff without
    memberships: all (they can already use the admin). Other curators without memberships: none.
    """
    if not user_is_curator(user):
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    member_of = Project.objects.filter(memberships__user=user)
    if user.is_staff and not member_of.exists():
        return Project.objects.all()
    return member_of


def project_get_for_user(user, slug: str) -> Project:
    project = projects_for_user(user).filter(slug=slug).first()
    if project is None:
        raise NotFound(f"Project {slug!r} not found.")
    return project


def agents_for_user(user) -> QuerySet[Agent]:
    return Agent.objects.filter(project__in=projects_for_user(user)).select_related("project")


def agent_get_for_user(user, project_slug: str, agent_slug: str) -> Agent:
    agent = agents_for_user(user).filter(project__slug=project_slug, slug=agent_slug).first()
    if agent is None:
        raise NotFound(f"Agent {project_slug}/{agent_slug} not found.")
    return agent


def entries_for_user(user) -> QuerySet[VaultEntry]:
    return VaultEntry.objects.filter(project__in=projects_for_user(user))


def entry_get_for_user(user, entry_id: int) -> VaultEntry:
    if not 1 <= entry_id <= MAX_ID:
        raise NotFound(f"Entry {entry_id} not found.")
    entry = entries_for_user(user).select_related("agent", "project").filter(pk=entry_id).first()
    if entry is None:
        raise NotFound(f"Entry {entry_id} not found.")
    return entry


@dataclass(frozen=True)
class DeletedEntry:
    """What is left of a deleted entry: its history, the last version being its deletion."""

    pk: int
    agent: Agent
    project: Project
    deletion: EntryVersion

    @property
    def category(self) -> str:
        return self.deletion.category

    @property
    def content(self) -> str:
        return self.deletion.content


def entry_deleted_get_for_user(user, entry_id: int) -> DeletedEntry:
    """A deleted entry whose history the user may read: the same project rules as for a live entry.
    NotFound when the entry is live, was never deleted, or its history was purged."""
    if not 1 <= entry_id <= MAX_ID or VaultEntry.objects.filter(pk=entry_id).exists():
        raise NotFound(f"Entry {entry_id} not found.")
    deletion = (
        EntryVersion.objects.filter(
            entry_id=entry_id, action=VersionAction.DELETE, agent__project__in=projects_for_user(user)
        )
        .select_related("agent__project")
        .order_by("-changed_at", "-id")
        .first()
    )
    if deletion is None:
        raise NotFound(f"Entry {entry_id} not found.")
    return DeletedEntry(pk=entry_id, agent=deletion.agent, project=deletion.agent.project, deletion=deletion)


def entry_version_get(entry: VaultEntry | DeletedEntry, version_id: int) -> EntryVersion:
    version = entry_history(entry).filter(pk=version_id).first() if 1 <= version_id <= MAX_ID else None
    if version is None:
        raise NotFound(f"Version {version_id} of entry {entry.pk} not found.")
    return version


def category_counts(agent: Agent, *, status: str | None = EntryStatus.ACTIVE) -> dict[str, int]:
    """Number of an agent's entries per category, every category present."""
    entries = VaultEntry.objects.filter(agent=agent)
    if status:
        entries = entries.filter(status=status)
    counts = dict.fromkeys(Category.values, 0)
    for row in entries.values("category").annotate(n=Count("id")):
        counts[row["category"]] = row["n"]
    return counts


def agent_tags(agent: Agent, *, limit: int = 50) -> list[str]:
    """The agent's most used tags, for the tag filter."""
    rows = (
        VaultEntry.objects.filter(agent=agent)
        .annotate(tag=Func("tags", function="unnest"))
        .values("tag")
        .annotate(n=Count("id"))
        .order_by("-n", "tag")[:limit]
    )
    return [row["tag"] for row in rows]


def entries_recent_for_user(user, *, limit: int = 10) -> QuerySet[VaultEntry]:
    return entries_for_user(user).select_related("agent", "project").order_by("-created_at", "-id")[:limit]


def token_list_for_project(project: Project) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(project=project).select_related("agent").order_by("-created_at", "-id")


def token_get_for_user(user, project: Project, token_id: int) -> ApiToken:
    token = token_list_for_project(project).filter(pk=token_id).first() if 1 <= token_id <= MAX_ID else None
    if token is None or not projects_for_user(user).filter(pk=project.pk).exists():
        raise NotFound(f"Token {token_id} not found.")
    return token


def project_context_history(project: Project, *, limit: int = 20):
    return ProjectContextVersion.objects.filter(project=project).order_by("-changed_at", "-id")[:limit]


# --- Curator pages: review queue, maintenance -------------------------------------------------
def review_queue_for_user(user, project: Project, *, category: str | None = None) -> QuerySet[VaultEntry]:
    """Pending entries of a project the user curates, oldest first, with their review items (and the
    other side of each duplicate or conflict) loaded. The curator twin of review_queue(principal)."""
    project = project_get_for_user(user, project.slug)
    entries = VaultEntry.objects.filter(project=project, status=EntryStatus.PENDING)
    if category:
        entries = entries.filter(category=category)
    items = ReviewItem.objects.select_related("other_entry").order_by("created_at", "id")
    return (
        entries.select_related("agent", "project")
        .prefetch_related(Prefetch("review_items", queryset=items))
        .order_by("created_at", "id")
    )


def review_counts_for_user(user) -> dict[int, int]:
    """Pending entries per project (project id → count) over the projects the user curates."""
    rows = (
        entries_for_user(user).filter(status=EntryStatus.PENDING).values("project_id").annotate(n=Count("id"))
    )
    return {row["project_id"]: row["n"] for row in rows}


def entry_review_items(entry: VaultEntry) -> QuerySet[ReviewItem]:
    """Every review item about this entry, or naming it as the other side, newest first."""
    return (
        ReviewItem.objects.filter(Q(entry=entry) | Q(other_entry=entry))
        .select_related("entry", "other_entry")
        .order_by("-created_at", "-id")
    )


def entry_superseded_by(entry: VaultEntry) -> VaultEntry | None:
    return VaultEntry.objects.filter(supersedes_id=entry.pk).first()


def compaction_runs_for_project(project: Project, *, limit: int = 50) -> QuerySet[CompactionRun]:
    return CompactionRun.objects.filter(project=project).order_by("-started_at", "-id")[:limit]


def compaction_run_last(project_id: int, kind: str) -> CompactionRun | None:
    """The project's newest recorded (not dry) run of `kind`."""
    return (
        CompactionRun.objects.filter(project_id=project_id, kind=kind, dry_run=False)
        .select_related("project")
        .first()
    )


def compaction_run_get(project: Project, run_id: int) -> CompactionRun:
    run = CompactionRun.objects.filter(project=project, pk=run_id).first() if 1 <= run_id <= MAX_ID else None
    if run is None:
        raise NotFound(f"Run {run_id} not found.")
    return run


def last_compaction_runs_for_user(user) -> dict[int, CompactionRun]:
    """The newest recorded compaction run per project the user curates (project id → run)."""
    runs = (
        CompactionRun.objects.filter(project__in=projects_for_user(user), kind="compaction")
        .order_by("project_id", "-started_at", "-id")
        .distinct("project_id")
    )
    return {run.project_id: run for run in runs}


def deletion_audits_for_project(project: Project, *, limit: int = 100) -> QuerySet[DeletionAudit]:
    return DeletionAudit.objects.filter(project=project).order_by("-deleted_at", "-id")[:limit]


def maintenance_schedules() -> list:
    """Every django-q schedule (the vault's and the sessions' maintenance), with its next run."""
    return list(Schedule.objects.order_by("next_run", "name"))


def review_policies_for_project(project: Project) -> dict[str, ReviewPolicy]:
    """Review policies by category ('' is the project-wide default)."""
    return {policy.category: policy for policy in ReviewPolicy.objects.filter(project=project)}


def handoff_latest(agent: Agent) -> VaultEntry | None:
    """The agent's newest live handoff entry (written when a session closes); by a prepared statement, as
    every context reads it (the ORM compiled it in about 2 ms of Python)."""
    where = "agent_id = %s AND category = %s AND status = %s"
    params = [agent.pk, Category.HANDOFFS.value, EntryStatus.ACTIVE.value]
    return row_first(VaultEntry, where, params, order_by="created_at DESC, id DESC")


# The files a model rewrites from conversations (extraction, consolidation).
MEMORY_FILES = ("MEMORY.md", "PROFILE.md")
DAILY_NOTE_ANY_PART = r"^memory/[0-9]{4}-[0-9]{2}-[0-9]{2}(-[1-9][0-9]*)?\.md$"


def file_content(agent_id: int, path: str) -> str | None:
    """The content of the agent's live file at `path`, or None when there is none."""
    file = WorkspaceFile.objects.filter(agent_id=agent_id, path=path, deleted_at__isnull=True).first()
    return None if file is None else file.content


def entry_contents_tagged(agent_id: int, tag: str) -> list[str]:
    """The content of every entry of the agent carrying `tag`."""
    return list(
        VaultEntry.objects.filter(agent_id=agent_id, tags__contains=[tag]).values_list("content", flat=True)
    )


def entry_counts_tagged(agent_id: int, tag: str) -> dict[str, int]:
    """How many entries of the agent carry `tag`, per category."""
    rows = VaultEntry.objects.filter(agent_id=agent_id, tags__contains=[tag]).values("category")
    return {row["category"]: row["n"] for row in rows.annotate(n=Count("id"))}
