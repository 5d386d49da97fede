from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from vault.schemas import CategoryName


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


class ConsolidationOut(Schema):
    agent: str
    path: str
    updated: bool
    used: str
    reason: str
    notes_read: list[str]
    llm_error: str | None = None


class ForgetIn(Schema):
    ids: list[int] | None = Field(default=None, max_length=10_000, description="Vault entry ids")
    message_ids: list[int] | None = Field(default=None, max_length=10_000, description="Message ids")
    agent: str | None = Field(default=None, max_length=64)
    category: CategoryName | None = None
    tags: list[str] | None = Field(default=None, max_length=64)
    since: datetime | None = None
    until: datetime | None = None
    source: Literal["api", "ui", "import", "extraction", "compaction"] | None = None
    kinds: list[Literal["entries", "messages"]] = Field(default_factory=lambda: ["entries"], min_length=1)


class ForgetOut(Schema):
    count: int
    entries: int
    messages: int
    not_found: list[int]
