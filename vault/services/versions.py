"""An entry's versions: each edit, status change, deletion and restore keeps the state before it."""

from django.utils import timezone

from vault.models import EntryVersion, VaultEntry, VersionAction


def _version_save(
    entry: VaultEntry, *, action: str, changed_by: str, restore_state: dict | None = None
) -> EntryVersion:
    return EntryVersion.objects.create(
        entry_id=entry.pk,
        agent_id=entry.agent_id,
        action=action,
        category=entry.category,
        content=entry.content,
        tags=list(entry.tags),
        status=entry.status,
        importance=entry.importance,
        changed_by=changed_by[:200],
        restore_state=restore_state or {},
    )


def _status_set(entry: VaultEntry, status: str, *, changed_by: str) -> None:
    _version_save(entry, action=VersionAction.EDIT, changed_by=changed_by)
    entry.status = status
    entry.updated_at = timezone.now()
    entry.save(update_fields=["status", "updated_at"])
