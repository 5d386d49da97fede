from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Func


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
    """One conversation of an agent. `external_id` is the agent tool's chat id (seed 000 keeps an
    agent -> chat id map to resume sessions with --resume)."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="sessions")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(max_length=200, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=SessionStatus.choices, default=SessionStatus.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True, db_index=True)
    closed_at = models.DateTimeField(null=True, blank=True)

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
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
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
    search_vector = models.GeneratedField(
        expression=Func(
            SearchVector("text", config="english", weight="B"),
            SearchVector("text", config="portuguese", weight="B"),
            template="(%(expressions)s)",
            arg_joiner=" || ",
            output_field=SearchVectorField(),
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "client_id"],
                condition=~models.Q(client_id=""),
                name="message_unique_client_id",
            )
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="message_search_gin"),
            models.Index(fields=["session", "created_at", "id"], name="message_session_order"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:60]}"
