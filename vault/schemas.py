from datetime import datetime
from typing import Literal

from ninja import Field, Schema

CategoryName = Literal["decisions", "lessons", "tasks", "projects", "handoffs"]
StatusName = Literal["active", "archived"]


class EntryIn(Schema):
    category: CategoryName
    content: str
    tags: list[str] = Field(default_factory=list, max_length=256)
    importance: float | None = Field(default=None, ge=0.0, le=1.0)


class EntryPatch(Schema):
    category: CategoryName | None = None
    content: str | None = None
    tags: list[str] | None = Field(default=None, max_length=256)
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    status: StatusName | None = None


class EntryOut(Schema):
    id: int
    agent: str
    category: str
    content: str
    tags: list[str]
    status: str
    source: str
    importance: float
    created_by: str
    access_count: int
    last_accessed_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_agent(obj) -> str:
        return obj.agent.slug


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


class ProjectContextIn(Schema):
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
