"""Tool annotations, set honestly, and the output helper shared by the tool modules."""

from mcp.types import ToolAnnotations
from ninja.responses import NinjaJSONEncoder

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Adds or appends; repeating it does not lose anything (duplicates and client ids are recognised).
ADDITIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
ADDITIVE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Replaces or deletes what was there (the previous state is versioned or audited, but it is gone).
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


_REST_ENCODER = NinjaJSONEncoder()


def _as_rest(value):
    """A python-mode dump made JSON-ready by the encoder of the REST API's renderer: timestamps as
    `2026-11-26T14:49:18.731Z` (milliseconds), where pydantic's JSON mode writes microseconds."""
    if isinstance(value, dict):
        return {key: _as_rest(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_rest(item) for item in value]
    if value is None or isinstance(value, str | int | float):
        return value
    return _as_rest(_REST_ENCODER.default(value))


def dump(schema, obj) -> dict:
    """An object as the REST API's response schema renders it (JSON-ready, the same text)."""
    return _as_rest(schema.model_validate(obj).model_dump())
