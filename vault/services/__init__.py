"""Writes to long-term memory. Every entry point (API, admin, pages, commands, tasks) calls these.

One module per purpose; every service is importable from `vault.services`."""

# The domain errors the services raise, importable from here as they were from the single module.
from memoryproject.errors import Conflict, InvalidInput, NotFound, TooLarge
from vault.selectors import daily_note_path
from vault.services.daily_notes import (
    daily_note_append,
    daily_notes_append,
    daily_notes_flush,
    daily_notes_text_erase,
)
from vault.services.derived import (
    daily_notes_extraction_erase,
    derived_texts_held,
    entries_quotes_erase,
    memory_files_text_erase,
)
from vault.services.entries import (
    EntryChanges,
    entry_create,
    entry_create_for_principal,
    entry_task_toggle,
    entry_update,
)
from vault.services.files import (
    file_append,
    file_append_many,
    file_create,
    file_delete,
    file_edit,
    file_lines_erase,
    file_path_check,
    file_rename,
    file_settings_set,
    file_write,
)
from vault.services.history import entry_delete, entry_restore, entry_restore_deleted
from vault.services.insights import handoff_store, insights_store
from vault.services.projects import (
    DEFAULT_PROJECT_SLUG,
    agent_ensure,
    agent_name_set,
    project_context_set,
    project_create,
    project_created_remove,
    project_ensure_default,
    project_redaction_set,
    slug_check,
    token_check,
    token_create,
    token_revoke,
    workspace_defaults_upgrade,
)
from vault.services.review import (
    STALE_FORM_LOC,
    entries_mark_accessed,
    entry_curator_update,
    entry_supersede,
    review_approve,
    review_bulk,
    review_merge,
    review_policy_set,
    review_reject,
)
from vault.tokens import TOKEN_PREFIX, token_hash

__all__ = [
    "Conflict",
    "InvalidInput",
    "NotFound",
    "TooLarge",
    "DEFAULT_PROJECT_SLUG",
    "TOKEN_PREFIX",
    "STALE_FORM_LOC",
    "EntryChanges",
    "agent_ensure",
    "agent_name_set",
    "daily_note_append",
    "daily_notes_extraction_erase",
    "derived_texts_held",
    "entries_quotes_erase",
    "memory_files_text_erase",
    "daily_note_path",
    "entries_mark_accessed",
    "entry_create",
    "entry_create_for_principal",
    "entry_delete",
    "entry_restore",
    "entry_restore_deleted",
    "entry_supersede",
    "entry_task_toggle",
    "entry_curator_update",
    "entry_update",
    "daily_notes_append",
    "daily_notes_flush",
    "daily_notes_text_erase",
    "file_append",
    "file_append_many",
    "file_create",
    "file_delete",
    "file_edit",
    "file_lines_erase",
    "file_path_check",
    "file_rename",
    "file_settings_set",
    "file_write",
    "handoff_store",
    "insights_store",
    "project_context_set",
    "project_create",
    "project_created_remove",
    "project_ensure_default",
    "project_redaction_set",
    "review_approve",
    "review_bulk",
    "review_merge",
    "review_policy_set",
    "review_reject",
    "slug_check",
    "token_check",
    "token_create",
    "token_hash",
    "token_revoke",
    "workspace_defaults_upgrade",
]
