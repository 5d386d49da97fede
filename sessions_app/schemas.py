from datetime import date, datetime
from typing import Literal

from django.conf import settings
from ninja import Field, Schema
from pydantic import AliasChoices, BaseModel, ConfigDict, model_validator

from memoryproject.booleans import Boolean
from memoryproject.input_schema import InputSchema
from memoryproject.numbers import integer, number
from memoryproject.openapi import AGENT_PATH_SCHEMA
from memoryproject.timestamps import EARLIEST_TEXT, Instant
from vault.schemas import EntryOut
from vault.text import NO_NUL_PATTERN, NOT_BLANK_PATTERN

from .compaction import message_tokens
from .models import Message, Role

# Whose message it is (Role): every stored message has one of these (the append, the imports and the
# admin take no other), so the schema lists them.
RoleName = Literal[tuple(Role.values)]


def _alias(*names: str) -> AliasChoices:
    """Accept camelCase spelling too (chatId, toolCalls...)."""
    return AliasChoices(*names)


# The service's rules (sessions_app.services.common.message_input_check and the writes), stated in the
# schema; the checks and their messages stay the service's. A user or system message needs text that is not
# blank: `text`, or `content` when `text` is null or left out. A NUL is refused in any text stored or looked
# up (by the service, or as a 400 from PostgreSQL); NO_NUL is only on fields that are always used (not on a
# chat_id that `session` overrides, nor on a model_id a sleep without messages ignores).
NO_NUL = {"pattern": NO_NUL_PATTERN}
_NOT_BLANK = {"type": "string", "pattern": NOT_BLANK_PATTERN}
MESSAGE_TEXT_RULE = {
    "anyOf": [
        {"properties": {"role": {"enum": ["assistant", "agent", "tool"]}}},
        {"properties": {"text": _NOT_BLANK}, "required": ["text"]},
        {"properties": {"text": {"type": "null"}, "content": _NOT_BLANK}, "required": ["content"]},
    ]
}
# A call appends at most MEMORY_APPEND_MAX_MESSAGES messages (413 beyond).
APPEND_MAX_ITEMS = {"maxItems": min(10_000, settings.MEMORY_APPEND_MAX_MESSAGES)}


class MessageIn(InputSchema):
    """One message. `id` is the caller's client id (idempotency); the `content`, `toolCalls`,
    `toolCallId` and `timestamp` are accepted as well."""

    model_config = ConfigDict(json_schema_extra=MESSAGE_TEXT_RULE)

    id: str | None = Field(
        None,
        max_length=200,
        description="Client id: a retry with it is not stored twice",
        validation_alias=_alias("id", "client_id", "clientId"),
        json_schema_extra=NO_NUL,
    )
    role: str = Field(
        ...,
        max_length=32,
        description="user, assistant (or agent), tool, system",
        # The roles the append accepts (sessions_app.services.common): listed here so that the schema
        # says what the server checks; the check and its message stay the service's.
        json_schema_extra={"enum": ["user", "assistant", "agent", "human", "tool", "system"]},
    )
    text: str | None = Field(
        None,
        description=(
            "The message text (alias: content); not blank for user and system messages; with tool_calls "
            "and state at most MEMORY_MAX_MESSAGE_BYTES UTF-8 bytes (413 beyond)"
        ),
        json_schema_extra={"maxLength": settings.MEMORY_MAX_MESSAGE_BYTES, **NO_NUL},
    )
    content: str | None = None
    internal: Boolean = False
    tool_calls: list[dict] = Field(
        default_factory=list, max_length=1000, validation_alias=_alias("tool_calls", "toolCalls")
    )
    tool_call_id: str | None = Field(
        None, max_length=200, validation_alias=_alias("tool_call_id", "toolCallId"), json_schema_extra=NO_NUL
    )
    state: dict = Field(default_factory=dict)
    timestamp: Instant | None = Field(
        None,
        description=(
            "When it was said: ISO 8601 (an offset, Z, or none: UTC; a date alone: its midnight UTC) or "
            f"seconds since 1970. At or after {EARLIEST_TEXT}; a time later than the server's clock is "
            "stored as the time the message was received. Default: the time it is received"
        ),
    )

    def as_input(self) -> dict:
        return {
            "role": self.role,
            "text": self.text if self.text is not None else (self.content or ""),
            "client_id": self.id or "",
            "internal": self.internal,
            "tool_calls": self.tool_calls,
            "tool_call_id": self.tool_call_id or "",
            "state": self.state,
            "created_at": self.timestamp,
        }


class MessagesIn(InputSchema):
    """Append messages, or save a whole conversation in the autosave format
    (`{"agentId", "savedAt", "messages": [{"role", "text"}]}`), which implies mode "full"."""

    session: str | None = Field(
        None,
        max_length=200,
        description=(
            "The agent tool's chat id (alias: chatId); omitted or \"current\": the agent's most recently "
            "active open session, a new one when none is open"
        ),
        json_schema_extra=NO_NUL,
    )
    chat_id: str | None = Field(None, max_length=200, validation_alias=_alias("chat_id", "chatId"))
    model_id: str | None = Field(None, max_length=200, validation_alias=_alias("model_id", "modelId"))
    mode: Literal["append", "full"] | None = Field(
        None, description="full: the messages are the whole conversation; only its new tail is stored"
    )
    agentId: str | None = Field(  # noqa: N815 - the autosave format's field name
        None,
        max_length=64,
        description="The agent in the path (the autosave format names it; another is refused)",
        json_schema_extra={"pattern": AGENT_PATH_SCHEMA["pattern"]},
    )
    savedAt: str | int | float | None = None  # noqa: N815
    messages: list[MessageIn] = Field(..., max_length=10_000, json_schema_extra=APPEND_MAX_ITEMS)
    max_input_tokens: integer(ge=1000, le=100_000_000) | None = Field(
        None,
        validation_alias=_alias("max_input_tokens", "maxInputTokens"),
        description="The model's context window, remembered on the session (working buffer threshold)",
    )

    @property
    def is_full(self) -> bool:
        if self.mode is not None:
            return self.mode == "full"
        return self.agentId is not None or self.savedAt is not None

    @property
    def session_key(self) -> str:
        return self.session or self.chat_id or ""


# A plain pydantic model, not a ninja Schema: ninja reads every field of every item through a Python
# attribute wrapper, which made a 50-message append's answer, and a long conversation page, cost several
# times their own validation (docs/benchmarks.md). A `Message` row becomes this model's fields in one step.
class MessageOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    client_id: str
    role: RoleName
    text: str
    internal: bool
    tool_calls: list
    tool_call_id: str
    state: dict
    parent: int | None
    archived: bool
    created_at: datetime
    token_estimate: int

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, value):
        if isinstance(value, Message):
            return {
                "id": value.pk,
                "client_id": value.client_id,
                "role": value.role,
                "text": value.text,
                "internal": value.internal,
                "tool_calls": value.tool_calls,
                "tool_call_id": value.tool_call_id,
                "state": value.state,
                "parent": value.parent_id,
                "archived": value.archived,
                "created_at": value.created_at,
                "token_estimate": message_tokens(value),
            }
        return value


class SessionOut(Schema):
    id: int
    chat_id: str
    model_id: str
    status: str
    active_branch: str | None
    created_at: datetime
    last_activity_at: datetime
    closed_at: datetime | None
    restored_at: datetime | None = Field(
        None, description="When it last came back from the archive (a restore is no activity)."
    )
    max_input_tokens: int | None = None
    buffer_started_at: datetime | None = None

    @staticmethod
    def resolve_chat_id(obj) -> str:
        return obj.external_id

    @staticmethod
    def resolve_active_branch(obj) -> str | None:
        return obj.active_branch.name if obj.active_branch_id else None


class StateEntryOut(Schema):
    id: int
    category: str
    text: str
    trigger: str
    durable: bool
    vault_entry_id: int | None
    message: int | None
    created_at: datetime

    @staticmethod
    def resolve_message(obj) -> int | None:
        return obj.message_id


WARNINGS = (
    "Steps that failed (logged), and a stored message's timestamp that was later than the server's clock "
    "(source 'timestamp', with its loc: stored as the time it was received)"
)


class AppendOut(Schema):
    session: SessionOut
    stored: int
    duplicates: int
    items: list[MessageOut]
    state: list[StateEntryOut]
    head: int | None
    saved_branch: str | None = Field(
        None, description="Branch created to keep messages a divergent save left"
    )
    warnings: list[dict] = Field(default_factory=list, description=WARNINGS)
    recovery: dict | None = Field(None, description="Recovery block when the user seems to have lost context")
    buffer_logged: int = 0


class MessagePage(Schema):
    session: SessionOut | None
    items: list[MessageOut]
    count: int
    token_estimate: int


class SessionStateOut(Schema):
    session: SessionOut | None
    items: list[StateEntryOut]
    markdown: str


class CheckpointIn(InputSchema):
    session: str | None = Field(None, max_length=200, json_schema_extra=NO_NUL)
    messages: list[MessageIn] | None = Field(None, max_length=10_000)
    chat_id: str | None = Field(
        None, max_length=200, validation_alias=_alias("chat_id", "chatId"), json_schema_extra=NO_NUL
    )
    model_id: str | None = Field(
        None, max_length=200, validation_alias=_alias("model_id", "modelId"), json_schema_extra=NO_NUL
    )


class CheckpointMessage(Schema):
    role: str
    text: str


class CheckpointOut(Schema):
    agent: str
    session: int | None
    messages: list[CheckpointMessage]
    chat_id: str
    model_id: str
    saved_at: datetime
    valid_until: datetime

    @staticmethod
    def resolve_agent(obj) -> str:
        return obj.agent.slug

    @staticmethod
    def resolve_session(obj) -> int | None:
        return obj.session_id


class SleepIn(InputSchema):
    session: str | None = Field(None, max_length=200, json_schema_extra=NO_NUL)
    chat_id: str | None = Field(None, max_length=200, validation_alias=_alias("chat_id", "chatId"))
    model_id: str | None = Field(None, max_length=200, validation_alias=_alias("model_id", "modelId"))
    messages: list[MessageIn] | None = Field(None, max_length=10_000, json_schema_extra=APPEND_MAX_ITEMS)
    summary: str = Field(
        "",
        description="Opens the handoff: empty, or text that is not blank (MEMORY_MAX_ENTRY_BYTES at most)",
        json_schema_extra={
            "maxLength": settings.MEMORY_MAX_ENTRY_BYTES,
            "anyOf": [{"maxLength": 0}, {"pattern": NOT_BLANK_PATTERN}],
        },
    )


class SleepOut(Schema):
    session: SessionOut
    stored: int
    checkpoint: CheckpointOut
    handoff: EntryOut | None
    decisions: list[EntryOut]
    lessons: list[EntryOut]
    warnings: list[dict] = Field(default_factory=list, description=WARNINGS)


class BranchIn(InputSchema):
    name: str = Field(..., min_length=1, max_length=100)
    message: str | None = Field(None, max_length=200, description="Client id or id; default: the head")


class CheckoutIn(InputSchema):
    # Exactly one of the two, not empty (the view checks it and says so).
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"properties": {"branch": {"type": "string", "minLength": 1}}, "required": ["branch"]},
                {"properties": {"message": {"type": "string", "minLength": 1}}, "required": ["message"]},
            ]
        }
    )

    branch: str | None = Field(None, max_length=100)
    message: str | None = Field(None, max_length=200, description="Client id or id (time travel)")


class BranchOut(Schema):
    name: str
    created_at: datetime
    from_message: int | None
    from_client_id: str
    head: int | None
    message_count: int
    active: bool


class CheckoutOut(Schema):
    branch: str
    head: int | None
    saved_branch: str | None
    conversation: list[MessageOut]


class CompactIn(InputSchema):
    max_input_tokens: integer(ge=100, le=100_000_000) | None = None
    trigger_ratio: number(gt=0.0, le=1.0) | None = None
    emergency: Boolean = False
    force: Boolean = False


class ContextMessage(Schema):
    id: int
    role: RoleName
    text: str
    tool_calls: list
    tool_call_id: str


class CompactOut(Schema):
    compacted: bool
    reason: str
    tokens_before: int
    tokens_after: int
    threshold: int
    summary: MessageOut | None
    archived_ids: list[int]
    context: list[ContextMessage]


# --- continuity and lifecycle -------------------------------------------------------------------


class RecoveryOut(Schema):
    signals: list[str]
    text: str = Field(description="Prepend to the agent's context; empty when nothing could be assembled")
    token_estimate: int
    budget_tokens: int
    sections: dict[str, int]
    warnings: list[dict]


class BufferEntryOut(Schema):
    id: int
    message_id: int | None
    side: str
    text: str
    created_at: datetime


class BufferOut(Schema):
    session: SessionOut
    active: bool
    started_at: datetime | None
    max_input_tokens: int
    threshold_tokens: int
    context_tokens: int
    entries: list[BufferEntryOut]
    markdown: str


class TransitionOut(Schema):
    from_status: str
    to_status: str
    reason: str
    by: str
    at: datetime


class SessionStatsOut(Schema):
    session: SessionOut
    status: str
    messages: int
    messages_by_role: dict[str, int]
    tokens: int
    context_tokens: int
    decisions: int
    lessons: int
    state_entries: int
    buffer_entries: int
    size_bytes: int
    raw_bytes: int
    archived: bool
    created_at: datetime
    last_activity_at: datetime
    transitions: list[TransitionOut]


class GrowthOut(Schema):
    date: date
    entries: int
    messages: int
    sessions: int


class ProjectStatsOut(Schema):
    agents: int
    entries: int
    entries_by_category: dict[str, int]
    entries_by_status: dict[str, int]
    sessions: int
    sessions_by_status: dict[str, int]
    messages: int
    archived_messages: int
    files: int
    storage_bytes: dict[str, int]
    growth: list[GrowthOut]


class RestoreOut(Schema):
    session: SessionOut
    messages: int
