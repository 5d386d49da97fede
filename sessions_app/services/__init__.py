"""Writes to short-term memory: appends, the write-ahead scan, checkpoints, session close, branches,
the context window and the lifecycle. The API, pages, commands and tasks all call these; every service
is importable from `sessions_app.services`."""

from sessions_app.services.append import (
    REPLAY_MATCH_MESSAGES,
    AppendResult,
    durable_fact_record,
    messages_append,
)
from sessions_app.services.branches import (
    branch_checkout,
    branch_create,
    message_checkout,
)
from sessions_app.services.close import (
    CloseResult,
    checkpoint_save,
    handoff_format,
    session_close,
)
from sessions_app.services.common import (
    DEFAULT_SUMMARISER,
    DELETED,
    LIFECYCLE_ACTOR,
    MAIN_BRANCH,
    MEMORY_FILE,
    MEMORY_FILE_HEADER,
    ROLE_ALIASES,
    WAL_TAG,
    MessageInput,
    message_input_check,
    transition_record,
)
from sessions_app.services.lifecycle import (
    ArchiveFilter,
    archived_sessions_refreeze,
    archived_sessions_thaw,
    lifecycle_run,
    session_archive,
    session_delete,
    session_ensure,
    session_restore,
)
from sessions_app.services.window import (
    BUFFER_USER_CHARS,
    CompactResult,
    context_render,
    max_input_tokens_check,
    session_compact,
    summariser_default,
    working_buffer_update,
)

__all__ = [
    "AppendResult",
    "ArchiveFilter",
    "archived_sessions_refreeze",
    "archived_sessions_thaw",
    "BUFFER_USER_CHARS",
    "CloseResult",
    "CompactResult",
    "DEFAULT_SUMMARISER",
    "DELETED",
    "LIFECYCLE_ACTOR",
    "MAIN_BRANCH",
    "MEMORY_FILE",
    "MEMORY_FILE_HEADER",
    "MessageInput",
    "REPLAY_MATCH_MESSAGES",
    "ROLE_ALIASES",
    "WAL_TAG",
    "branch_checkout",
    "branch_create",
    "checkpoint_save",
    "context_render",
    "durable_fact_record",
    "handoff_format",
    "lifecycle_run",
    "max_input_tokens_check",
    "message_checkout",
    "message_input_check",
    "messages_append",
    "session_archive",
    "session_close",
    "session_compact",
    "session_delete",
    "session_ensure",
    "session_restore",
    "summariser_default",
    "transition_record",
    "working_buffer_update",
]
