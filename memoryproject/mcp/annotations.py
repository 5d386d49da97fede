"""Tool annotations, set honestly, and the output helper shared by the tool modules."""

from mcp.types import ToolAnnotations

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


def dump(schema, obj) -> dict:
    """An object as the REST API's response schema renders it (JSON-ready)."""
    return schema.model_validate(obj).model_dump(mode="json")
