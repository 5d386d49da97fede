from datetime import datetime

from ninja import Field, Schema


class SearchResultOut(Schema):
    kind: str = Field(description="entry, message or file")
    id: int
    agent: str
    category: str | None = None
    score: float
    snippet: str
    created_at: datetime
    updated_at: datetime | None = None
    tags: list[str] | None = None
    status: str | None = None
    importance: float | None = None
    access_count: int | None = None
    session: str | None = Field(None, description="Messages: the session's external id")
    session_id: int | None = None
    role: str | None = None
    archived: bool | None = None
    path: str | None = Field(None, description="Files: the workspace path")


class SearchOut(Schema):
    results: list[SearchResultOut]
    took_ms: float
    terms: list[str] = Field(description="The query terms that were searched for, after stopwords")
    corrections: dict[str, list[str]] = Field(description="Typo neighbours used for unknown words")


class ContextIn(Schema):
    command: str = Field("", max_length=10000, description="What the new session is asked to do")
    budget_tokens: int | None = Field(None, ge=50, le=1_000_000, description="Default MEMORY_TOKEN_BUDGET")


class ContextOut(Schema):
    text: str
    token_estimate: int
    budget_tokens: int
    sections: dict
    cited: list[int]
    warnings: list[dict]
