from datetime import datetime
from typing import Literal

from django.conf import settings
from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict, model_validator

from memoryproject.booleans import Boolean
from memoryproject.input_schema import InputSchema
from memoryproject.numbers import Integer, integer, number
from vault.models import REJECT_REASON_MAX_CHARS, EntrySource, VaultEntry
from vault.text import NOT_BLANK_PATTERN

CategoryName = Literal["decisions", "lessons", "tasks", "projects", "handoffs"]
StatusName = Literal["active", "archived", "pending", "superseded", "rejected"]
# What an entry was written through (EntrySource): the schema lists them, a filter on another is a 422.
SourceName = Literal[tuple(EntrySource.values)]


class EntryIn(InputSchema):
    category: CategoryName
    content: str = Field(
        description="At most MEMORY_MAX_ENTRY_BYTES UTF-8 bytes (413 beyond); not blank",
        json_schema_extra={"maxLength": settings.MEMORY_MAX_ENTRY_BYTES, "pattern": NOT_BLANK_PATTERN},
    )
    tags: list[str] = Field(default_factory=list, max_length=settings.MEMORY_MAX_TAGS)
    importance: number(ge=0.0, le=1.0) | None = None
    supersedes: integer(ge=1, le=2**63 - 1) | None = Field(
        default=None,
        description="id of the entry this replaces, an entry of the same agent. When the content duplicates an existing entry, "
        "that entry becomes the successor, or the write is refused (409/422)",
    )
    confidence: number(ge=0.0, le=1.0) | None = None


class EntryPatch(InputSchema):
    category: CategoryName | None = Field(
        default=None,
        description="Moving an entry to another category screens it as a new write of that category "
        "(its review policy, conflicts): it may come back pending, waiting for review",
    )
    content: str | None = None
    tags: list[str] | None = Field(default=None, max_length=settings.MEMORY_MAX_TAGS)
    importance: number(ge=0.0, le=1.0) | None = None
    status: Literal["active", "archived"] | None = Field(
        default=None,
        description="Archive or unarchive an entry. A pending, rejected or superseded entry's status is "
        "not changed by an edit (409): review decides it (POST /review/{id}/approve or /reject)",
    )
    supersedes: integer(ge=1, le=2**63 - 1) | None = Field(
        default=None,
        description="id of the entry this replaces, an entry of the same agent",
    )


class ReviewItemOut(Schema):
    id: int
    kind: str
    other_entry_id: int | None
    detail: str
    created_at: datetime
    resolved_at: datetime | None
    resolution: str


# A plain pydantic model, not a ninja Schema, as sessions_app's MessageOut: ninja reads every field
# through a Python attribute wrapper, several times the validation's own cost for an entry, and for a page
# of them. A `VaultEntry` row becomes this model's fields in one step.
class EntryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    agent: str
    category: CategoryName
    content: str
    tags: list[str]
    status: StatusName
    source: SourceName
    importance: float
    created_by: str
    access_count: int
    last_accessed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    confidence: float | None
    source_session_id: int | None
    source_message_ids: list[int]
    supersedes: int | None
    superseded_by: int | None
    duplicate_of: int | None = None
    review: list[ReviewItemOut]

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, value):
        if not isinstance(value, VaultEntry):
            return value
        successor = getattr(value, "superseded_by", None)
        return {
            "id": value.pk,
            "agent": value.agent.slug,
            "category": value.category,
            "content": value.content,
            "tags": value.tags,
            "status": value.status,
            "source": value.source,
            "importance": value.importance,
            "created_by": value.created_by,
            "access_count": value.access_count,
            "last_accessed_at": value.last_accessed_at,
            "created_at": value.created_at,
            "updated_at": value.updated_at,
            "confidence": value.confidence,
            "source_session_id": value.source_session_id,
            "source_message_ids": value.source_message_ids,
            "supersedes": value.supersedes_id,
            "superseded_by": successor.pk if successor is not None else None,
            "duplicate_of": getattr(value, "duplicate_of", None),
            "review": list(value.review_items.all()),
        }


class EntryPage(Schema):
    items: list[EntryOut]
    count: int
    limit: int
    offset: int


class EntryVersionOut(Schema):
    id: int
    entry_id: int
    action: str
    category: str
    content: str
    tags: list[str]
    status: str
    importance: float
    changed_by: str
    changed_at: datetime


class AgentOut(Schema):
    id: str
    name: str
    created_at: datetime
    counts: dict[str, int]


class ProjectContextIn(InputSchema):
    content: str


class ProjectContextOut(Schema):
    project: str
    content: str
    updated_at: datetime | None


class WhoAmIOut(Schema):
    project: str
    agent: str | None
    scope: str
    token: str


class ReviewApproveIn(InputSchema):
    content: str | None = None
    supersede_conflicting: Boolean = False


class ReviewRejectIn(InputSchema):
    reason: str = Field(
        default="",
        max_length=REJECT_REASON_MAX_CHARS,
        description="Kept whole in the review items' resolution",
    )


class ReviewMergeIn(InputSchema):
    into: integer(ge=1, le=2**63 - 1) = Field(
        ...,
        description="An active entry of the same agent (else 409). It takes the pending entry's text and "
        "supersedes it: the merged entry joins its chain just below it",
    )


class ReviewBulkIn(InputSchema):
    action: Literal["approve", "reject"]
    ids: list[Integer] = Field(..., min_length=1, max_length=500)


class ReviewBulkOut(Schema):
    done: list[int]
    errors: dict[str, str]


class ReviewPolicyIn(InputSchema):
    category: CategoryName | Literal[""] = ""
    hold_agent_writes: Boolean
    hold_extracted: Boolean


class ReviewPolicyOut(Schema):
    category: str
    hold_agent_writes: bool
    hold_extracted: bool
