from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

from vault.search_vectors import (
    GIN_PENDING_KB,
    SearchVectorDeferredManager,
    bilingual_vectors,
    parts_vectors,
    search_vector_field,
)
from vault.text import text_clip


class SessionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    IDLE = "idle", "Idle"
    CLOSED = "closed", "Closed"
    ARCHIVED = "archived", "Archived"


class Role(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    TOOL = "tool", "Tool"
    SYSTEM = "system", "System"


class Session(models.Model):
    """One conversation of an agent. `external_id` is the agent tool's chat id (the tool keeps an
    agent -> chat id map to resume sessions with --resume)."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="sessions")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(max_length=200, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=SessionStatus.choices, default=SessionStatus.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True, db_index=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    restored_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When it last came back from the archive: no activity, but the lifecycle counts the quiet "
        "days before archiving or deleting it from the later of this and the last activity.",
    )
    max_input_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="The model's window as the agent reports it (else the default)."
    )
    buffer_started_at = models.DateTimeField(
        null=True, blank=True, help_text="When the working buffer activated."
    )
    status_changed_at = models.DateTimeField(null=True, blank=True)
    context_bytes_bound = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="At least the UTF-8 bytes of the session's messages not archived (text and tool "
        "calls) plus 8 a message, the working buffer's cheap test "
        "(recovery.session_tokens_upper_bound); kept by the append, none (counted again when "
        "needed) after a write that may have made it too small.",
    )
    active_branch = models.ForeignKey(
        "Branch", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-last_activity_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "external_id"],
                condition=~models.Q(external_id=""),
                name="session_unique_external_id",
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent} session {self.external_id or self.pk}"


class Message(models.Model):
    """A message in a session. Sessions are trees: `parent` links to the previous message, so
    branches and time travel are pointers into the tree and nothing is ever rewritten."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="messages")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="messages")
    # No index of its own: message_session_order and message_unique_client_id lead with the session.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages", db_index=False)
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children"
    )
    client_id = models.CharField(
        max_length=200, blank=True, help_text="The caller's id, for idempotent retries."
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    text = models.TextField(blank=True)
    internal = models.BooleanField(default=False, help_text="Never copied into checkpoints or handoffs.")
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    state = models.JSONField(default=dict, blank=True)
    archived = models.BooleanField(
        default=False, help_text="Compacted away: kept and searchable, not active."
    )
    created_at = models.DateTimeField(db_index=True)
    # The turn this one answers (its parent's text, shortened): a reply like "Yes, last week!" means
    # nothing alone, so search also matches it, at the lowest weight, by what it replies to.
    reply_to_text = models.TextField(blank=True, default="", editable=False)
    search_vector = search_vector_field(
        *bilingual_vectors("text"),
        *bilingual_vectors("reply_to_text", weight="D"),
        *parts_vectors("text"),
    )

    objects = SearchVectorDeferredManager()

    class Meta:
        base_manager_name = "objects"
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "client_id"],
                condition=~models.Q(client_id=""),
                name="message_unique_client_id",
            )
        ]
        indexes = [
            GinIndex(
                fields=["search_vector"], name="message_search_gin", gin_pending_list_limit=GIN_PENDING_KB
            ),
            models.Index(fields=["session", "created_at", "id"], name="message_session_order"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {text_clip(self.text, 60)}"


class Branch(models.Model):
    """A named pointer to a message of a session. The conversation of a branch is the path
    from its head back to the root; moving a head never deletes anything."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="branches")
    name = models.CharField(max_length=100)
    head = models.ForeignKey(Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    from_message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["session", "name"], name="branch_unique_name")]

    def __str__(self) -> str:
        return f"{self.session} branch {self.name}"


class Checkpoint(models.Model):
    """The latest snapshot of an agent's conversation: recovered if younger than
    MEMORY_CHECKPOINT_DAYS. One per agent; each save replaces the previous one."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="checkpoints")
    agent = models.OneToOneField("vault.Agent", on_delete=models.CASCADE, related_name="checkpoint")
    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="checkpoints"
    )
    messages = models.JSONField(default=list, blank=True, help_text='[{"role", "text"}], oldest first')
    chat_id = models.CharField(max_length=200, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    saved_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-saved_at"]

    def __str__(self) -> str:
        return f"checkpoint of {self.agent} at {self.saved_at:%Y-%m-%d %H:%M}"

    @property
    def valid_until(self):

        return self.saved_at + timedelta(days=settings.MEMORY_CHECKPOINT_DAYS)


class SessionStateEntry(models.Model):
    """A fact the write-ahead scan found in a user message (SESSION-STATE.md lines)."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="session_state")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="state_entries")
    message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="state_entries"
    )
    category = models.CharField(max_length=32)
    text = models.TextField()
    trigger = models.CharField(max_length=300, blank=True)
    durable = models.BooleanField(default=False)
    vault_entry_id = models.BigIntegerField(
        null=True, blank=True, help_text="The long-term entry written for a durable fact, if new."
    )
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "session state entries"

    def __str__(self) -> str:
        return f"{self.category}: {text_clip(self.text, 60)}"


class WorkingBufferEntry(models.Model):
    """The working buffer (working-buffer.md): once a session's context passes
    MEMORY_WORKING_BUFFER_RATIO of the model's window, every exchange is also logged here (the user's
    message and a short summary of the agent's reply), a backup in case compaction loses context."""

    class Side(models.TextChoices):
        HUMAN = "human", "Human"
        AGENT = "agent", "Agent (summary)"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="buffer_entries")
    message_id = models.BigIntegerField(null=True, blank=True, help_text="The message logged.")
    side = models.CharField(max_length=8, choices=Side.choices)
    text = models.TextField()
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.side}: {text_clip(self.text, 60)}"


class SessionTransition(models.Model):
    """One lifecycle change of a session (active -> idle -> archived -> deleted, restores, closes).
    Kept after the session is deleted (session becomes NULL; session_pk stays)."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="transitions"
    )
    session_pk = models.BigIntegerField(db_index=True)
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    reason = models.CharField(max_length=300, blank=True)
    by = models.CharField(max_length=200, blank=True)
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"session {self.session_pk}: {self.from_status} -> {self.to_status}"


class SessionArchive(models.Model):
    """The cold storage of an archived session: every message row (all fields, ids and parents
    included), the branch heads and the state-entry links, as zlib-compressed JSON. `text` is the
    plain text of the messages, kept for full-text search of archived sessions; `message_ids` lists
    the messages it holds, `first_message_at` and `last_message_at` when they were written."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="+")
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="archive")
    payload = models.BinaryField()
    message_count = models.PositiveIntegerField(default=0)
    raw_bytes = models.PositiveBigIntegerField(default=0)
    compressed_bytes = models.PositiveBigIntegerField(default=0)
    text = models.TextField(blank=True)
    message_ids = ArrayField(
        models.BigIntegerField(),
        default=list,
        blank=True,
        help_text="The ids of the messages in the payload, so that a forget by id finds the archive "
        "holding a message without decompressing the others.",
    )
    first_message_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the payload's first message was written (None: no messages), so that a forget "
        "by time range decompresses only the archives whose messages can fall in it.",
    )
    last_message_at = models.DateTimeField(
        null=True, blank=True, help_text="When its last message was written."
    )
    archived_at = models.DateTimeField(db_index=True)
    search_vector = search_vector_field(*bilingual_vectors("text"), *parts_vectors("text"), scoped=False)

    objects = SearchVectorDeferredManager()

    class Meta:
        base_manager_name = "objects"
        ordering = ["-archived_at", "-id"]
        indexes = [
            GinIndex(
                fields=["search_vector"],
                name="session_archive_search_gin",
                gin_pending_list_limit=GIN_PENDING_KB,
            ),
            GinIndex(fields=["message_ids"], name="session_archive_ids_gin"),
        ]

    def __str__(self) -> str:
        return f"archive of session {self.session_id} ({self.message_count} messages)"
