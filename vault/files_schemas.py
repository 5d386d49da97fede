from datetime import datetime
from typing import Literal

from django.conf import settings
from ninja import Field, Schema
from pydantic import ConfigDict

from memoryproject.booleans import Boolean
from memoryproject.input_schema import InputSchema
from memoryproject.numbers import Integer, integer
from vault.memory_tool import FILE_PATH_PATTERN, PATH_PATTERN
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


class FileIn(InputSchema):
    content: str
    enabled: Boolean | None = None
    sort_order: integer(ge=-1_000_000, le=1_000_000) | None = None


class FilePatch(InputSchema):
    enabled: Boolean | None = None
    sort_order: integer(ge=-1_000_000, le=1_000_000) | None = None


class FileEditIn(InputSchema):
    # The service's checks (vault.services.file_edit), stated here; they and their messages stay its own.
    old_text: str = Field(
        description="Not empty; found in the file (once, unless replace_all). A file holds no NUL.",
        json_schema_extra={"minLength": 1, "pattern": NO_NUL_PATTERN},
    )
    new_text: str = Field(
        description="No NUL; at most MEMORY_MAX_ENTRY_BYTES UTF-8 bytes, like the edited file",
        json_schema_extra={"maxLength": settings.MEMORY_MAX_ENTRY_BYTES, "pattern": NO_NUL_PATTERN},
    )
    replace_all: Boolean = False


class FileEditOut(FileOut):
    replacements: int
    replace_all: bool


class FileVersionOut(Schema):
    id: int
    action: str
    content: str
    changed_by: str
    changed_at: datetime


# What each command needs (vault.memory_tool, which checks it and words the errors the model reads), as
# one schema per command: the fields a command does not use are ignored. A file's text has no NUL, like
# every text stored; str_replace's old_str is found in the file, so it is not empty and has none either.
_PATH = {"type": "string", "pattern": PATH_PATTERN}
_FILE = {"type": "string", "pattern": FILE_PATH_PATTERN}
_TEXT = {"type": "string", "pattern": NO_NUL_PATTERN}
_VIEW_RANGE = {"type": "array", "prefixItems": [{"minimum": 1}, {"anyOf": [{"const": -1}, {"minimum": 1}]}]}


def _command(name: str, required: list[str], **properties) -> dict:
    return {"properties": {"command": {"const": name}, **properties}, "required": ["command", *required]}


MEMORY_TOOL_COMMANDS = {
    "anyOf": [
        _command("view", ["path"], path=_FILE, view_range={"anyOf": [{"type": "null"}, _VIEW_RANGE]}),
        _command("view", ["path"], path=_PATH, view_range={"type": "null"}),  # a directory: no range
        _command(
            "create",
            ["path", "file_text"],
            path=_FILE,
            file_text={**_TEXT, "maxLength": settings.MEMORY_MAX_ENTRY_BYTES},
        ),
        _command(
            "str_replace",
            ["path", "old_str", "new_str"],
            path=_FILE,
            old_str={**_TEXT, "minLength": 1},
            new_str=_TEXT,
        ),
        _command(
            "insert",
            ["path", "insert_line", "insert_text"],
            path=_FILE,
            insert_line={"type": "integer", "minimum": 0},
            insert_text=_TEXT,
        ),
        _command("delete", ["path"], path=_FILE),
        _command("rename", ["old_path", "new_path"], old_path=_FILE, new_path=_FILE),
    ]
}


class MemoryToolIn(InputSchema):
    """One command of Anthropic's memory tool (memory_20250818), exactly as the model sent it."""

    model_config = ConfigDict(json_schema_extra=MEMORY_TOOL_COMMANDS)

    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"]
    path: str | None = None
    view_range: list[Integer] | None = Field(default=None, min_length=2, max_length=2)
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: Integer | None = None
    insert_text: str | None = None
    old_path: str | None = None
    new_path: str | None = None


class MemoryToolOut(Schema):
    result: str
