from datetime import datetime
from typing import Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from memoryproject.input_schema import InputSchema
from memoryproject.numbers import integer
from memoryproject.timestamps import SINCE, UNTIL, InstantBound
from vault.schemas import CategoryName, SourceName
from vault.selectors import MAX_ID
from vault.text import NOT_BLANK_PATTERN, TAG_FILTER_MAX, TAG_MAX_CHARS


class CompactionRunOut(Schema):
    id: int | None
    project: str
    kind: str
    trigger: str
    dry_run: bool
    started_at: datetime
    duration_ms: float
    counts: dict[str, int]
    changes: list[dict]
    notes: list[str]

    @staticmethod
    def resolve_project(obj) -> str:
        return obj.project.slug


class RemovalOut(Schema):
    fact: str  # the line of the old MEMORY.md
    why: str  # the model's reason: superseded, duplicate, no longer true


class ConsolidationOut(Schema):
    agent: str
    path: str
    updated: bool
    used: str
    reason: str
    notes_read: list[str]
    notes_over_budget: list[str] = []  # older notes merged deterministically: the prompt had no room
    llm_error: str | None = None
    # The model's MEMORY.md was not used: it dropped more than MEMORY_CONSOLIDATE_MAX_SILENT_DROP of the
    # facts without naming them in its "removed" list (these, at most 50); MEMORY.md was kept.
    refused: bool = False
    facts_dropped_silently: list[str] = []
    # The facts of the old MEMORY.md the written one no longer holds, named in the answer's "removed" with
    # why (at most 50): what a curator reviews.
    removed: list[RemovalOut] = []


# What a forget may ask (memoryproject.maintenance._forget_criteria, which checks it and says why): ids or
# message_ids, or at least one criterion, never both; with "messages" in kinds, none of the criteria that
# only entries have. An empty list or agent counts as not given. (That since is not after until is checked
# there too; JSON Schema cannot compare two values.)
_NONE = {"type": "null"}
_NO_LIST = {"anyOf": [_NONE, {"maxItems": 0}]}
_SOME = {"type": "array", "minItems": 1}
_BY_ID = {
    "anyOf": [
        {"properties": {"ids": _SOME}, "required": ["ids"]},
        {"properties": {"message_ids": _SOME}, "required": ["message_ids"]},
    ],
    "properties": {
        "agent": {"anyOf": [_NONE, {"maxLength": 0}]},
        "category": _NONE,
        "tags": _NO_LIST,
        "since": _NONE,
        "until": _NONE,
        "source": _NONE,
    },
}
_BY_CRITERIA = {
    "properties": {"ids": _NO_LIST, "message_ids": _NO_LIST},
    "anyOf": [
        {"properties": {"agent": {"type": "string", "minLength": 1}}, "required": ["agent"]},
        {"properties": {"tags": _SOME}, "required": ["tags"]},
        *[
            {"properties": {name: {"type": "string"}}, "required": [name]}
            for name in ("category", "since", "until", "source")
        ],
    ],
}
_ENTRIES_ONLY = {
    "anyOf": [
        {"properties": {"kinds": {"not": {"contains": {"const": "messages"}}}}},
        {"properties": {"category": _NONE, "tags": _NO_LIST, "source": _NONE}},
    ]
}
FORGET_RULES = {"allOf": [{"anyOf": [_BY_ID, _BY_CRITERIA]}, _ENTRIES_ONLY]}


FORGET_MAX_IDS = 10_000
FORGET_MAX_TAGS = TAG_FILTER_MAX
# An id the database can hold (bigint): one past 2**63 - 1 was answered "not found", as if it might
# have been an entry's.
RowId = integer(ge=1, le=MAX_ID)


class ForgetIn(InputSchema):
    model_config = ConfigDict(json_schema_extra=FORGET_RULES)

    ids: list[RowId] | None = Field(default=None, max_length=FORGET_MAX_IDS, description="Vault entry ids")
    message_ids: list[RowId] | None = Field(
        default=None, max_length=FORGET_MAX_IDS, description="Message ids"
    )
    agent: str | None = Field(default=None, max_length=64)
    category: CategoryName | None = None
    tags: list[str] | None = Field(
        default=None,
        max_length=FORGET_MAX_TAGS,
        description=f"Entries with all of these tags, each 1-{TAG_MAX_CHARS} letters, digits, '_', '.' "
        "or '-' (a leading '#' is ignored), not blank",
        json_schema_extra={
            "items": {"type": "string", "maxLength": TAG_MAX_CHARS, "pattern": NOT_BLANK_PATTERN}
        },
    )
    since: InstantBound | None = Field(None, description=SINCE)
    until: InstantBound | None = Field(None, description=UNTIL)
    source: SourceName | None = None
    kinds: list[Literal["entries", "messages"]] = Field(
        default_factory=lambda: ["entries"], min_length=1, max_length=2
    )


class ForgetOut(Schema):
    """What a forget deleted, each item with its audit row (DeletionAudit: hash and size, not the text)."""

    count: int = Field(description="Items deleted in all: `entries` + `messages`")
    entries: int = Field(
        description="Vault entries deleted: those the request named (ids or criteria) and the "
        "`derived_entries`"
    )
    derived_entries: int = Field(
        description="Of `entries`, those deleted because the server wrote them from a forgotten message "
        "alone and nobody has changed them since (a durable fact of the write-ahead scan, a decision or "
        "lesson extracted from it); their audit rows name the message"
    )
    entries_rewritten: int = Field(
        description="Entries kept but rewritten without a forgotten message's text: a handoff that quoted "
        "it (its line says [forgotten]); not counted in `count`"
    )
    messages: int = Field(description="Messages deleted (of archived sessions too)")
    summaries_rewritten: int = Field(
        description="Compaction summaries kept but rewritten without a forgotten message: the lines the "
        "heuristic summary quoted from it say [forgotten], and a summary a model wrote from it is rebuilt "
        "by the heuristic from the messages it still replaces; not counted in `count`"
    )
    not_found: list[int] = Field(
        description="Ids named in `ids` or `message_ids` that do not exist or that this token may not "
        "touch; nothing was done for them (always empty for a forget by criteria)"
    )
