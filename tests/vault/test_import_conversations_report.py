"""import_conversations says per file what it stored and what it skipped, not what it found."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from vault.models import VaultEntry

CONVERSATION = {
    "agentId": "dev",
    "savedAt": "2026-03-01T10:00:00Z",
    "messages": [
        {"role": "user", "text": "hi"},
        {"role": "agent", "text": "We decided to use Redis for caching."},
    ],
}


def _import(folder) -> str:
    out = io.StringIO()
    call_command("import_conversations", str(folder), "--project", "target", stdout=out)
    return next(line for line in out.getvalue().splitlines() if line.startswith(str(folder / "dev.json")))


def test_a_conversation_imported_again_says_it_stored_nothing_and_skipped_what_it_found(tmp_path, target):
    """The second import printed "1 decisions, 0 lessons, 1 handoff" as the first did, though both
    entries were skipped as already imported."""
    folder = tmp_path / "conversations"
    folder.mkdir()
    (folder / "dev.json").write_text(json.dumps(CONVERSATION), encoding="utf-8")
    first = _import(folder)
    assert first.endswith("dev.json: stored 1 decisions, 0 lessons, 1 handoffs")
    again = _import(folder)
    assert again.endswith(
        "dev.json: stored 0 decisions, 0 lessons, 0 handoffs; skipped 1 decisions, 0 lessons, 1 handoffs "
        "(already imported, forgotten here since, or refused: see the summary)"
    )
    assert VaultEntry.objects.filter(agent__slug="dev").count() == 2


def test_an_export_given_to_import_conversations_names_import_memory_dir(tmp_path, target):
    """An export of this server (the README's export_memory_dir) given to import_conversations: its
    `.export.json` and `.project-versions.json` were read as conversations "without messages", and the
    command exited 0 having stored nothing. Hidden files are no conversations; the error says which
    command reads an export."""
    (tmp_path / ".export.json").write_text('{"format": 2}\n', encoding="utf-8")
    (tmp_path / ".project-versions.json").write_text("[]\n", encoding="utf-8")
    (tmp_path / "dev").mkdir()
    with pytest.raises(CommandError, match="is an export of this server.*import_memory_dir"):
        call_command("import_conversations", str(tmp_path), "--project", "target", stdout=io.StringIO())


def test_a_hidden_json_file_beside_conversations_is_not_read_as_one(tmp_path, target):
    folder = tmp_path / "conversations"
    folder.mkdir()
    (folder / "dev.json").write_text(json.dumps(CONVERSATION), encoding="utf-8")
    (folder / ".sync-state.json").write_text("{}", encoding="utf-8")
    out = io.StringIO()
    call_command("import_conversations", str(folder), "--project", "target", stdout=out)
    assert ".sync-state.json" not in out.getvalue()
    assert VaultEntry.objects.filter(agent__slug="dev").count() == 2
