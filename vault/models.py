from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from vault.search_vectors import (
    GIN_PENDING_KB,
    SearchVectorDeferredManager,
    entry_text_vector,
    search_vector_field,
)
from vault.text import text_clip

SLUG_PATTERN = r"^[a-z0-9._-]{1,64}$"
slug_validator = RegexValidator(SLUG_PATTERN, "Use 1-64 characters of a-z, 0-9, '.', '_' or '-'.")


def path_segment_validator(value: str) -> None:
    """Slugs name folders in exports: `.` and `..` would point elsewhere."""
    if value.strip(".") == "":
        raise ValidationError("Use at least one character other than '.'.")


class Category(models.TextChoices):
    DECISIONS = "decisions", "Decisions"
    LESSONS = "lessons", "Lessons"
    TASKS = "tasks", "Tasks"
    PROJECTS = "projects", "Projects"
    HANDOFFS = "handoffs", "Handoffs"


class EntryStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    ARCHIVED = "archived", "Archived"
    PENDING = "pending", "Pending review"
    SUPERSEDED = "superseded", "Superseded"
    REJECTED = "rejected", "Rejected"


class EntrySource(models.TextChoices):
    API = "api", "API"
    MCP = "mcp", "MCP"
    UI = "ui", "Curator UI"
    IMPORT = "import", "Import"
    EXTRACTION = "extraction", "Extraction"
    COMPACTION = "compaction", "Compaction"


# The sources of entries the server writes itself from a conversation (the write-ahead scan's durable
# facts, sleep's and extraction's decisions and lessons, compaction's).
WRITTEN_FROM_MESSAGES = [EntrySource.EXTRACTION.value, EntrySource.COMPACTION.value]


class TokenScope(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Read and write"
    ADMIN = "admin", "Admin"


class Project(models.Model):
    slug = models.CharField(max_length=64, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    context = models.TextField(blank=True, help_text="Project context injected into every agent's prompt.")
    context_updated_at = models.DateTimeField(null=True, blank=True)
    redaction_enabled = models.BooleanField(
        default=True, help_text="Replace emails, API keys and passwords with [REDACTED] before storing."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def context_changed_at(self):
        """When the context last changed (the project's creation, if never since): what a form editing
        it carries, so that its save cannot replace a change made since (project_context_set)."""
        return self.context_updated_at or self.created_at


class Agent(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agents")
    slug = models.CharField(max_length=64, validators=[slug_validator])
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="agent_unique_slug_per_project")
        ]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.slug}"


class ApiToken(models.Model):
    """A bearer token. Only the SHA-256 of the secret is stored; `prefix` identifies it to people."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tokens")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="tokens")
    name = models.CharField(max_length=200, blank=True)
    scope = models.CharField(max_length=8, choices=TokenScope.choices, default=TokenScope.WRITE)
    prefix = models.CharField(max_length=16, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        bound = f" agent={self.agent.slug}" if self.agent_id else ""
        return f"{self.prefix}… ({self.scope}{bound})"


class VaultEntry(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="entries")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="entries")
    category = models.CharField(max_length=16, choices=Category.choices)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    status = models.CharField(max_length=16, choices=EntryStatus.choices, default=EntryStatus.ACTIVE)
    source = models.CharField(max_length=16, choices=EntrySource.choices, default=EntrySource.API)
    importance = models.FloatField(default=0.5, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    created_by = models.CharField(
        max_length=200, blank=True, help_text="Who wrote it: token, user, import..."
    )
    legacy_id = models.CharField(
        max_length=64, blank=True, help_text="Id in the system it was imported from."
    )
    created_at = models.DateTimeField(db_index=True)
    updated_at = models.DateTimeField()
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    # Provenance: where an extracted memory came from, and how sure the extractor was.
    source_session_id = models.BigIntegerField(null=True, blank=True)
    source_message_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    supersedes = models.OneToOneField(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="superseded_by"
    )
    content_hash = models.CharField(max_length=64, blank=True, editable=False)
    sketch = ArrayField(models.IntegerField(), default=list, blank=True, editable=False)
    # Generated by PostgreSQL, so it can never lag behind an edit. Tags weigh above content. English
    # and Portuguese stemming both apply because agents' users write both. memory_tags_text is an
    # IMMUTABLE wrapper of array_to_string (created by migration 0001): PostgreSQL marks
    # array_to_string STABLE, and a generated column accepts only IMMUTABLE functions.
    search_vector = search_vector_field(entry_text_vector(), epochs=True)

    objects = SearchVectorDeferredManager()

    class Meta:
        base_manager_name = "objects"
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "vault entries"
        indexes = [
            GinIndex(
                fields=["search_vector"], name="vaultentry_search_gin", gin_pending_list_limit=GIN_PENDING_KB
            ),
            # The newest rows of an agent or project, for the recency windows of search.
            models.Index(fields=["agent", "-id"], name="vaultentry_agent_newest"),
            models.Index(fields=["project", "-id"], name="vaultentry_project_newest"),
            models.Index(fields=["agent", "category", "status", "-created_at"], name="vaultentry_agent_cat"),
            models.Index(fields=["project", "-created_at"], name="vaultentry_project_recent"),
            # Read by every tag filter (search's, the entry list's): a short pending list too (vault 0032).
            GinIndex(fields=["tags"], name="vaultentry_tags_gin", gin_pending_list_limit=GIN_PENDING_KB),
            models.Index(fields=["agent", "category", "content_hash"], name="vaultentry_agent_hash"),
            # Searched by the duplicate check of every write of a large agent: a short pending list too.
            GinIndex(fields=["sketch"], name="vaultentry_sketch_gin", gin_pending_list_limit=GIN_PENDING_KB),
            # A forget of a message finds what the server wrote from it alone (entries_from_message_erase).
            models.Index(
                fields=["source_message_ids"],
                name="vaultentry_written_from",
                condition=models.Q(source__in=WRITTEN_FROM_MESSAGES),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(importance__gte=0.0, importance__lte=1.0),
                name="vaultentry_importance_range",
            ),
            models.UniqueConstraint(
                fields=["agent", "legacy_id"],
                condition=~models.Q(legacy_id=""),
                name="vaultentry_unique_legacy_id",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.category}: {text_clip(self.content, 60)}"

    @property
    def max_bytes(self) -> int:
        return settings.MEMORY_MAX_ENTRY_BYTES


class VersionAction(models.TextChoices):
    EDIT = "edit", "Edited"
    DELETE = "delete", "Deleted"
    RESTORE = "restore", "Restored"


class EntryVersion(models.Model):
    """The state of an entry before an edit or a delete, or as a restore brought it back.

    The link to the entry has no database constraint so that versions outlive a deleted entry:
    deleting memory must leave a trail of what was there.
    """

    entry = models.ForeignKey(
        VaultEntry, on_delete=models.DO_NOTHING, db_constraint=False, related_name="versions"
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=8, choices=VersionAction.choices)
    category = models.CharField(max_length=16, choices=Category.choices)
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    status = models.CharField(max_length=16)
    importance = models.FloatField()
    changed_by = models.CharField(max_length=200, blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)
    # On a 'delete' version: what else restoring the entry brings back (when and by whom it was first
    # written, its provenance, its use, the entry it superseded). Empty on other versions, and on
    # deletions made before 2026-11-26.
    restore_state = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"entry {self.entry_id} {self.action} at {self.changed_at:%Y-%m-%d %H:%M}"


class ProjectContextVersion(models.Model):
    """The project context as it was before a replacement."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="context_versions")
    content = models.TextField()
    changed_by = models.CharField(max_length=200, blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.project.slug} context before {self.changed_at:%Y-%m-%d %H:%M}"


WORKSPACE_PATH_MAX = 255  # characters of a workspace file's path


class WorkspaceFile(models.Model):
    """A markdown file of an agent's workspace: AGENTS.md, SOUL.md, PROFILE.md,
    MEMORY.md, daily notes under memory/, memory-tool files under memories/, and free files.

    Enabled files are rendered into the system prompt in sort order; daily notes are disabled
    (searched, not injected). Deleting is soft so that history and search stay coherent.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="files")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=WORKSPACE_PATH_MAX)
    content = models.TextField(blank=True)
    enabled = models.BooleanField(default=False)
    sort_order = models.IntegerField(default=100)
    size = models.PositiveIntegerField(default=0, help_text="UTF-8 bytes of content")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Path (simple, weight A), content in English and Portuguese (weight B) and the scope lexemes, like
    # the generated vectors of entries and messages, but kept by a trigger (migration 0011) so that an
    # append parses only the appended text: a daily note grows all day, and re-parsing all of it on each
    # exchange made every append slower than the one before.
    search_vector = SearchVectorField(null=True, editable=False)

    objects = SearchVectorDeferredManager()

    class Meta:
        base_manager_name = "objects"
        ordering = ["agent", "sort_order", "path"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "path"],
                condition=models.Q(deleted_at__isnull=True),
                name="workspacefile_live_path",
            )
        ]
        indexes = [
            GinIndex(
                fields=["search_vector"],
                name="workspacefile_search_gin",
                gin_pending_list_limit=GIN_PENDING_KB,
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent}:{self.path}"


class QueuedNoteAppend(models.Model):
    """The exchanges of one append to a day's note that are not written into the note yet.

    A busy agent logs exchanges several times a second, and each write of a day's note stores the whole
    note again (a megabyte by the end of a busy day): so a note is written at most once per
    MEMORY_DAILY_NOTE_WRITE_SECONDS, and the appends in between wait here, stored in the same
    transaction as their messages. The next write of the note (an append; a read through the API, the
    MCP server or the pages; an export; consolidation; or the job that runs every minute) appends them
    first, in order, with the same "logged once a day" check as a direct append.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    path = models.CharField(max_length=255)
    # [[text, unless], ...]: each block, and the text whose presence in the note leaves it out.
    parts = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["agent", "path", "id"], name="queuednoteappend_note")]

    def __str__(self) -> str:
        return f"{self.agent_id}:{self.path}#{self.pk}"


class WorkspaceFileVersion(models.Model):
    """A file's content before a write, edit or delete."""

    file = models.ForeignKey(WorkspaceFile, on_delete=models.CASCADE, related_name="versions")
    action = models.CharField(max_length=8, choices=VersionAction.choices)
    content = models.TextField(blank=True)
    changed_by = models.CharField(max_length=200, blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.file.path} {self.action} at {self.changed_at:%Y-%m-%d %H:%M}"


class ReviewKind(models.TextChoices):
    POLICY = "policy", "Held by the project's review policy"
    DUPLICATE = "duplicate", "Possible duplicate"
    CONFLICT = "conflict", "Possible conflict"
    POISONING = "poisoning", "Looks like instructions"


# The longest reason a curator may give for a rejection; it is kept whole in ReviewItem.resolution.
REJECT_REASON_MAX_CHARS = 500


class ReviewItem(models.Model):
    """Why an entry waits for a curator, linked to the other side when there is one."""

    entry = models.ForeignKey(VaultEntry, on_delete=models.CASCADE, related_name="review_items")
    kind = models.CharField(max_length=16, choices=ReviewKind.choices)
    other_entry = models.ForeignKey(
        VaultEntry, on_delete=models.SET_NULL, null=True, blank=True, related_name="review_mentions"
    )
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # "approved", "merged into 12" or "rejected: <the curator's reason>", whole.
    resolution = models.TextField(blank=True)
    resolved_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["resolved_at", "kind"], name="reviewitem_open")]

    def __str__(self) -> str:
        return f"{self.kind} on entry {self.entry_id}"


class ReviewPolicy(models.Model):
    """Whether agent-written or extracted entries of a project (optionally one category) wait for review."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="review_policies")
    category = models.CharField(
        max_length=16, choices=Category.choices, blank=True, help_text="Blank: every category."
    )
    hold_agent_writes = models.BooleanField(default=False)
    hold_extracted = models.BooleanField(default=False)

    class Meta:
        verbose_name_plural = "review policies"
        constraints = [
            models.UniqueConstraint(fields=["project", "category"], name="reviewpolicy_unique_category")
        ]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.category or 'all'}"


# --- Maintenance: compaction runs, merges, session marks, deletion audit -----------------------
class RunKind(models.TextChoices):
    COMPACTION = "compaction", "Compaction"
    RETENTION = "retention", "Retention and size"
    CONSOLIDATION = "consolidation", "Consolidation"


class RunTrigger(models.TextChoices):
    SCHEDULE = "schedule", "Schedule"
    API = "api", "API"
    COMMAND = "command", "Management command"
    ADMIN = "admin", "Admin"


class CompactionRun(models.Model):
    """One maintenance run: what each step counted and the list of changes with their reasons.

    `changes` holds {"step", "action", "target", "reason"} dicts; `counts` maps step counters to ints.
    Dry runs are computed the same way and returned without being stored.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="maintenance_runs")
    kind = models.CharField(max_length=16, choices=RunKind.choices, default=RunKind.COMPACTION)
    trigger = models.CharField(max_length=16, choices=RunTrigger.choices, default=RunTrigger.SCHEDULE)
    dry_run = models.BooleanField(default=False)
    started_at = models.DateTimeField(db_index=True)
    duration_ms = models.FloatField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    changes = models.JSONField(default=list, blank=True)
    notes = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["project", "kind", "-started_at"], name="compactionrun_recent")]

    def __str__(self) -> str:
        return f"{self.project} {self.kind} run at {self.started_at:%Y-%m-%d %H:%M:%S}"


class EntryMerge(models.Model):
    """An entry merged into a compaction summary: the summary links to every entry it replaced."""

    summary = models.ForeignKey(VaultEntry, on_delete=models.CASCADE, related_name="merged_links")
    entry = models.ForeignKey(VaultEntry, on_delete=models.CASCADE, related_name="merged_into_links")
    run = models.ForeignKey(CompactionRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["summary", "id"]
        constraints = [models.UniqueConstraint(fields=["summary", "entry"], name="entrymerge_unique")]

    def __str__(self) -> str:
        return f"entry {self.entry_id} merged into {self.summary_id}"


class SessionMark(models.Model):
    """A hash of what a maintenance job last read from a session, so unchanged input is not mined twice."""

    class Purpose(models.TextChoices):
        COMPACTION = "compaction", "Compaction mining"
        EXTRACTION = "extraction", "Post-conversation extraction"

    session = models.ForeignKey("sessions_app.Session", on_delete=models.CASCADE, related_name="+")
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    content_hash = models.CharField(max_length=64)
    updated_at = models.DateTimeField()
    # The durable-fact lines the session's extractions wrote to daily notes: a conversation extracted
    # again after it grew writes only the facts its new messages bring.
    facts = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "purpose"], name="sessionmark_unique_purpose")
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} {self.purpose} {self.content_hash[:10]}"


class AgentMaintenance(models.Model):
    """Per-agent maintenance state kept in the database (not in a process) so every worker sees it."""

    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="maintenance")
    last_extraction_at = models.DateTimeField(null=True, blank=True)
    last_consolidation_at = models.DateTimeField(null=True, blank=True)
    # The nightly consolidation's record of the agent (vault.maintenance.consolidation): when its last
    # consolidation started (the run takes the agents tried longest ago first) and ended (not since it
    # started: its worker was killed or timed out on it), and how many of its scheduled consolidations in
    # a row failed (raised, interrupted, or the model's answer was not used), the last one's reason,
    # which /healthz names.
    consolidation_started_at = models.DateTimeField(null=True, blank=True)
    consolidation_ended_at = models.DateTimeField(null=True, blank=True)
    consolidation_failures = models.PositiveIntegerField(default=0)
    consolidation_failure = models.TextField(blank=True, default="")

    def __str__(self) -> str:
        return f"maintenance state of {self.agent}"


class RetentionMark(models.Model):
    """When retention archived something (an entry or a message): it is purged after the grace period."""

    class Kind(models.TextChoices):
        ENTRY = "entry", "Vault entry"
        MESSAGE = "message", "Session message"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    object_id = models.BigIntegerField()
    marked_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "object_id"], name="retentionmark_unique")]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id} expired at {self.marked_at:%Y-%m-%d}"


class DeletionAudit(models.Model):
    """One row per deleted item (forget or purge). The content itself is not kept: only its hash and size,
    so an audit can prove what was deleted without keeping what was asked to be forgotten."""

    class Reason(models.TextChoices):
        FORGET = "forget", "Forget request"
        PURGE = "purge", "Retention purge"
        UNDONE = "undone", "Failed import undone"

    # Null once the project is removed (the row outlives it: an audit of the removal itself, kind
    # "project", names it by `project_slug`).
    project = models.ForeignKey(Project, on_delete=models.SET_NULL, null=True, related_name="+")
    project_slug = models.CharField(max_length=64, blank=True)
    agent_slug = models.CharField(max_length=64, blank=True)
    kind = models.CharField(max_length=8)
    object_id = models.BigIntegerField()
    category = models.CharField(max_length=16, blank=True)
    reason = models.CharField(max_length=8, choices=Reason.choices)
    criteria = models.JSONField(default=dict, blank=True)
    content_sha256 = models.CharField(max_length=64)
    content_chars = models.PositiveIntegerField(default=0)
    versions_deleted = models.PositiveIntegerField(default=0)
    item_created_at = models.DateTimeField(null=True, blank=True)
    deleted_by = models.CharField(max_length=200, blank=True)
    deleted_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-deleted_at", "-id"]

    def __str__(self) -> str:
        return f"{self.reason}: {self.kind} {self.object_id} at {self.deleted_at:%Y-%m-%d %H:%M}"


class ProjectMembership(models.Model):
    """Gives a curator (a user in the curator group, or staff) the pages of one project.

    Superusers see every project. Staff without any membership see every project too (they can
    already use the admin); anyone with memberships sees only those projects.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user"]
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="projectmembership_unique_user_project")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project.slug}"
