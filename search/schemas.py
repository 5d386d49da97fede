from datetime import datetime
from typing import Literal

from django.conf import settings
from ninja import Field, Schema

from memoryproject.dict_schema import DictSchema
from memoryproject.input_schema import InputSchema
from memoryproject.numbers import integer
from sessions_app.schemas import RoleName
from vault.schemas import CategoryName, SourceName, StatusName


class SearchResultOut(DictSchema):
    kind: Literal["entry", "message", "file"]
    id: int
    agent: str
    category: CategoryName | None = None
    score: float
    snippet: str
    created_at: datetime
    updated_at: datetime | None = None
    tags: list[str] | None = None
    status: StatusName | None = None
    importance: float | None = None
    access_count: int | None = None
    source: SourceName | None = Field(None, description="Entries: what it was written through")
    created_by: str | None = Field(None, description="Entries: the token, curator or process that wrote it")
    confidence: float | None = Field(None, description="Entries: confidence of heuristic or LLM extraction")
    source_session_id: int | None = Field(None, description="Entries: the session it was extracted from")
    supersedes: int | None = Field(None, description="Entries: the entry this one replaced")
    superseded_by: int | None = Field(None, description="Entries: the entry that replaced this one")
    session: str | None = Field(None, description="Messages: the session's external id")
    session_id: int | None = None
    role: RoleName | None = Field(None, description="Messages: whose message it is")
    archived: bool | None = None
    path: str | None = Field(None, description="Files: the workspace path")
    arms: list[str] = Field(
        default_factory=list, description="Which retrieval found it: lexical, semantic or both (hybrid)"
    )


class SearchOut(DictSchema):
    results: list[SearchResultOut]
    took_ms: float
    terms: list[str] = Field(description="The query terms that were searched for, after stopwords")
    corrections: dict[str, list[str]] = Field(description="Typo neighbours used for unknown words")
    relaxed_phrases: list[str] = Field(
        default_factory=list,
        description="Quoted phrases that matched nothing in the scope, so their words were searched instead",
    )


class ContextIn(InputSchema):
    command: str = Field("", max_length=10000, description="What the new session is asked to do")
    budget_tokens: integer(ge=50, le=settings.MEMORY_CONTEXT_MAX_BUDGET) | None = Field(
        None,
        description="Default MEMORY_TOKEN_BUDGET; at most MEMORY_CONTEXT_MAX_BUDGET",
    )


class ContextOut(Schema):
    text: str
    token_estimate: int
    budget_tokens: int
    sections: dict
    cited: list[int]
    warnings: list[dict]


class EmbeddingsStatusOut(Schema):
    backend: str  # local | openai | off
    model: str
    pending: int  # items waiting to be embedded (new, edited, or made by another model)
    enabled: bool  # semantic search runs (embeddings on and pgvector present)
    detail: str | None = None  # why semantic search is off
    # while this web process searches lexically because the embedder failed on a query: why
    query_error: str | None = None


def search_out(outcome) -> dict:
    """The SearchOut body of a search outcome (REST and MCP answer the same)."""
    return {
        "results": outcome.results,
        "took_ms": outcome.took_ms,
        "terms": [term.label for term in outcome.query.terms],
        "corrections": outcome.query.corrections,
        "relaxed_phrases": outcome.query.relaxed,
    }
