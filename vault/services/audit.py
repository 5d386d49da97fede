"""The deletion audit: one row per item of memory deleted for good (an entry, a message, a session, a
project a failed import had created), written by every deletion through `deletion_audit_record`."""

import hashlib
from datetime import datetime

from vault.models import DeletionAudit


def content_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def deletion_audit_record(
    *,
    project_id: int | None,
    agent_slug: str,
    kind: str,
    object_id: int,
    category: str,
    reason: str,
    criteria: dict,
    content: str,
    item_created_at: datetime,
    deleted_by: str,
    now: datetime,
    versions_deleted: int = 0,
    content_sha256: str | None = None,
    project_slug: str = "",
) -> DeletionAudit:
    """The audit row of something deleted for good: what, why, by whom, and the hash and size of its
    content, never the content itself. Every deletion of memory (entries, messages, sessions) writes one."""
    return DeletionAudit.objects.create(
        project_id=project_id,
        project_slug=project_slug,
        agent_slug=agent_slug,
        kind=kind,
        object_id=object_id,
        category=category,
        reason=reason,
        criteria=criteria,
        content_sha256=content_sha256 or content_sha(content),
        content_chars=len(content),
        versions_deleted=versions_deleted,
        item_created_at=item_created_at,
        deleted_by=deleted_by[:200],
        deleted_at=now,
    )
