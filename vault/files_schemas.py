from datetime import datetime
from typing import Literal

from django.conf import settings
from ninja import Field, Schema

from vault.text import NO_NUL_PATTERN


class FileSummaryOut(Schema):
    path: str
    enabled: bool
    sort_order: int
    size: int
    created_at: datetime
    updated_at: datetime


class FileOut(FileSummaryOut):
    agent: str
    content: str

    @staticmethod
    def resolve_agent(obj) -> str:
        return obj.agent.slug


class FileWriteOut(FileOut):
    created: bool
    overwritten: bool


class FileList(Schema):
    agent: str
    prefix: str
    count: int
    items: list[FileSummaryOut]


class FileIn(Schema):
    content: str
    enabled: bool | None = None
    sort_order: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)


class FilePatch(Schema):
    enabled: bool | None = None
    sort_order: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)


class FileEditIn(Schema):
    # The service's checks (vault.services.file_edit), stated here; they and their messages stay its own.
    old_text: str = Field(
        description="Not empty; found in the file (once, unless replace_all). A file holds no NUL.",
        json_schema_extra={"minLength": 1, "pattern": NO_NUL_PATTERN},
    )
    new_text: str = Field(
        description="No NUL; at most MEMORY_MAX_ENTRY_BYTES UTF-8 bytes, like the edited file",
        json_schema_extra={"maxLength": settings.MEMORY_MAX_ENTRY_BYTES, "pattern": NO_NUL_PATTERN},
    )
    replace_all: bool = False


class FileEditOut(FileOut):
    replacements: int
    replace_all: bool


class FileVersionOut(Schema):
    id: int
    action: str
    content: str
    changed_by: str
    changed_at: datetime


class MemoryToolIn(Schema):
    """One command of Anthropic's memory tool (memory_20250818), exactly as the model sent it."""

    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"]
    path: str | None = None
    view_range: list[int] | None = Field(default=None, min_length=2, max_length=2)
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: int | None = None
    insert_text: str | None = None
    old_path: str | None = None
    new_path: str | None = None


class MemoryToolOut(Schema):
    result: str
