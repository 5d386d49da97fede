"""What an import refuses to read or to take at face value: a source file too large to read whole,
a daily note whose name is no date."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from vault.models import VaultEntry, WorkspaceFile

LIMIT = 4096


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def entry(n: int, text: str) -> str:
    return f"<!-- id:17736798718{n:02d} -->\n## 2026-03-16T16:51\n{text}\n---\n"


def conversation(agent: str, pad: str = "") -> str:
    return json.dumps(
        {
            "agentId": agent,
            "savedAt": "2026-03-01T10:00:00Z",
            "messages": [
                {"role": "user", "text": "hi" + pad},
                {"role": "agent", "text": "We decided to use Redis for caching."},
            ],
        }
    )


@pytest.fixture
def oversized(tmp_path, settings):
    """A .memory/ folder whose one category file, one conversation and one JSONL transcript are over
    the limit, beside files under it."""
    settings.MEMORY_IMPORT_MAX_SOURCE_BYTES = LIMIT
    root = tmp_path / "project"
    memory = root / ".memory"
    write(memory, "dev/decisions.md", entry(1, "We decided to use SSE."))
    write(memory, "dev/lessons.md", "".join(entry(n, "x" * 200) for n in range(30)))
    write(memory, "conversations/dev.json", conversation("dev"))
    write(memory, "conversations/ops.json", conversation("ops", "y" * LIMIT))
    session = root / ".bmad" / "memory" / "sessions" / "s1"
    write(session, "manifest.json", json.dumps({"session_id": "s1", "agent_ids": ["pm"]}))
    line = json.dumps({"id": "m1", "role": "user", "content": "Which DB? " + "z" * 100}) + "\n"
    write(session, "conversation.jsonl", line * (LIMIT // len(line) + 1))
    return root


def _sizes(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in root.rglob("*") if p.is_file()}


def test_import_memory_dir_skips_a_file_over_the_limit_unread_and_imports_the_rest(oversized, target):
    out = io.StringIO()
    call_command("import_memory_dir", str(oversized), "--project", "target", stdout=out)
    said, sizes = out.getvalue(), _sizes(oversized)
    for name in ("lessons.md", "ops.json", "conversation.jsonl"):
        assert (
            f"{name}: is {sizes[name]} bytes; the limit is {LIMIT} bytes (MEMORY_IMPORT_MAX_SOURCE_BYTES). "
            "File skipped"
        ) in said
    assert VaultEntry.objects.get(agent__slug="dev", category="decisions").content == "We decided to use SSE."
    assert not VaultEntry.objects.filter(category="lessons").exists()
    assert not VaultEntry.objects.filter(agent__slug="ops").exists()


def test_import_conversations_skips_a_conversation_over_the_limit(oversized, target):
    out = io.StringIO()
    call_command("import_conversations", str(oversized / ".memory"), "--project", "target", stdout=out)
    size = _sizes(oversized)["ops.json"]
    assert f"ops.json: is {size} bytes; the limit is {LIMIT} bytes" in out.getvalue()
    assert VaultEntry.objects.filter(agent__slug="dev", category="handoffs").exists()
    assert not VaultEntry.objects.filter(agent__slug="ops").exists()


def test_a_daily_note_named_by_no_date_is_reported_as_an_unreadable_date(tmp_path, target):
    """memory/2026-13-45.md was imported as a daily note and said nothing: consolidation, which reads a
    day's note by its date, never reads it. It is kept (nothing is lost) and counted under Dates:, so
    --strict refuses the import."""
    root = tmp_path / "workspace"
    write(root, "MEMORY.md", "# Long-term\n")
    write(root, "memory/2026-03-01.md", "## [10:00:00]\n**User:** hi\n")
    write(root, "memory/2026-13-45.md", "## [10:00:00]\n**User:** which day?\n")
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_memory_dir", str(root), "--project", "target", "--strict", stdout=out)
    said = out.getvalue()
    assert (
        "daily notes named by no date (imported as plain files, which consolidation never reads): 1" in said
    )
    assert "2026-13-45.md: 'memory/2026-13-45.md'" in said and "2026-03-01.md:" not in said
    assert WorkspaceFile.objects.filter(path="memory/2026-13-45.md").exists()
