"""A day's note is bounded (MEMORY_DAILY_NOTE_MAX_BYTES): past it the day goes on in continuation notes,
memory/YYYY-MM-DD-2.md, -3.md, ..., and every reader of daily notes reads all of them."""

import io
import random
import threading
import uuid
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection

from sessions_app import services as session_services
from sessions_app.maintenance.extraction import extraction_perform
from sessions_app.recovery import recovery_build
from tests.fake_llm import fake_llm  # noqa: F401
from vault import selectors, services
from vault.maintenance.consolidation import consolidation_run, daily_notes_recent
from vault.models import QueuedNoteAppend, WorkspaceFile

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 16, 10, 0, 0, tzinfo=UTC)
DAY = "2026-03-16"


@pytest.fixture(autouse=True)
def small_notes(settings):
    settings.TIME_ZONE = "UTC"
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0
    settings.MEMORY_DAILY_NOTE_MAX_BYTES = 4096
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


def exchanges(agent, first, count, *, session_key="s1", at=T0):
    """Append `count` exchanges (user, agent) in one call; returns the append's result."""
    messages = []
    for n in range(first, first + count):
        messages += [
            {"role": "user", "text": f"question {n} about the ledger migration of service {n}"},
            {
                "role": "assistant",
                "text": f"answer {n}: the ledger of service {n} moves on Friday " + "x" * 150,
            },
        ]
    with time_machine.travel(at, tick=False):
        return session_services.messages_append(agent=agent, messages=messages, session_key=session_key)


def parts(agent):
    """The live parts of T0's note in order, found here by their names (not by the selector under test)."""
    found = WorkspaceFile.objects.filter(
        agent=agent, path__regex=rf"^memory/{DAY}(-[0-9]+)?\.md$", deleted_at=None
    )
    return sorted(found, key=lambda note: int(note.path[len(f"memory/{DAY}") :].strip("-.md") or 1))


def test_a_note_past_the_bound_goes_on_in_continuation_notes_and_keeps_every_exchange(
    agent_a, api, token_a, client_a
):
    """The day's note grew by every exchange without any bound: past MEMORY_MAX_ENTRY_BYTES no curator
    could save it and no import could take it back, and past about 700 KB of ids PostgreSQL refused its
    search vector, so every later exchange of the day was left out of it."""
    for first in range(0, 60, 10):
        assert exchanges(agent_a, first, 10).warnings == []
    notes = parts(agent_a)
    assert [note.path for note in notes][:3] == [
        f"memory/{DAY}.md",
        f"memory/{DAY}-2.md",
        f"memory/{DAY}-3.md",
    ]
    assert len(notes) >= 4
    assert all(note.size <= 4096 for note in notes)
    assert notes[1].content.startswith(f"# Daily Notes -- {DAY} (part 2, continued from memory/{DAY}.md)\n")
    whole = "".join(note.content for note in notes)
    for n in range(60):
        assert whole.count(f"**User:** question {n} about") == 1
    # Readable through the API and the files page, part by part.
    listed = api.get("/agents/agent-a/files", token=token_a, prefix="memory/").json()
    assert [item["path"] for item in listed["items"]] == sorted(note.path for note in notes)
    last = notes[-1].path
    assert "question 59 about" in api.get(f"/agents/agent-a/files/{last}", token=token_a).json()["content"]
    page = client_a.get(f"/projects/acme/agents/agent-a/files/?path={last}")
    assert page.status_code == 200 and b"question 59 about" in page.content
    # A curator can edit any part (each is within MEMORY_MAX_ENTRY_BYTES).
    services.file_edit(
        agent=agent_a, path=notes[0].path, old_text="question 0 ", new_text="Q0 ", changed_by="t"
    )


def test_an_append_never_fails_on_a_big_note(agent_a, settings):
    """Exchanges full of ids (uuids, hosts, hashes): at about 700 KB the note's search vector passed
    PostgreSQL's 1 MB and every later append of the day lost its exchange from the note (a warning on
    the append); with the default bound the day goes on in parts of 64 KB."""
    settings.MEMORY_DAILY_NOTE_MAX_BYTES = 64 * 1024
    rng = random.Random(7)

    def ids():
        return " ".join(str(uuid.UUID(int=rng.getrandbits(128))) + f" srv-{rng.getrandbits(32):08x}.example.com"
                        for _ in range(8))  # fmt: skip

    session = None
    for batch in range(17):
        messages = []
        for n in range(batch * 50, batch * 50 + 50):
            messages += [
                {"role": "user", "text": f"q{n} {ids()}"},
                {"role": "assistant", "text": f"a{n} {ids()}"},
            ]
        with time_machine.travel(T0 + timedelta(minutes=batch), tick=False):
            result = session_services.messages_append(
                agent=agent_a, messages=messages, session=session, session_key="ids"
            )
        session = result.session
        assert result.warnings == [], batch
    notes = parts(agent_a)
    assert sum(note.size for note in notes) > 800 * 1024
    assert all(note.size <= 64 * 1024 for note in notes)
    assert "**User:** q849 " in notes[-1].content


def test_a_block_larger_than_the_bound_fills_a_part_of_its_own(agent_a):
    exchanges(agent_a, 0, 2)
    big = "\n## 11:00 · extraction\n" + "- a long finding about the ledger\n" * 200
    note = services.daily_note_append(agent=agent_a, when=T0, text=big, changed_by="t")
    assert note.path == f"memory/{DAY}-2.md" and note.content.endswith(big)
    after = services.daily_note_append(agent=agent_a, when=T0, text="\n- one more\n", changed_by="t")
    assert after.path == f"memory/{DAY}-3.md"
    assert "".join(n.content for n in parts(agent_a)).count("a long finding") == 200


def test_an_exchange_replayed_later_in_the_day_is_not_logged_again_in_a_later_part(agent_a):
    block = "\n## [10:00:00]\n**User:** the replayed question\n**Agent:** the replayed answer\n"
    services.daily_note_append(agent=agent_a, when=T0, text=block, changed_by="t")
    exchanges(agent_a, 0, 30)
    assert len(parts(agent_a)) >= 2
    replay = block.replace("10:00:00", "15:00:00")
    services.daily_note_append(agent=agent_a, when=T0, text=replay, changed_by="t")
    assert "".join(n.content for n in parts(agent_a)).count("the replayed question") == 1


def test_exchanges_are_still_queued_once_the_note_moved_on_to_a_later_part(agent_a, settings):
    """The queue (MEMORY_DAILY_NOTE_WRITE_SECONDS) must look at the part written last: the first part
    is not written any more once the day moved on, and every append would rewrite the note."""
    exchanges(agent_a, 0, 30)
    assert len(parts(agent_a)) >= 2
    WorkspaceFile.objects.filter(agent=agent_a, path=f"memory/{DAY}.md").update(
        updated_at=T0 - timedelta(hours=2)
    )
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 3600
    exchanges(agent_a, 100, 1, at=T0 + timedelta(minutes=1))
    assert QueuedNoteAppend.objects.filter(agent=agent_a, path=f"memory/{DAY}.md").count() == 1
    assert "question 100 about" not in parts(agent_a)[-1].content
    services.daily_notes_flush(agent=agent_a)
    assert "question 100 about" in parts(agent_a)[-1].content
    assert not QueuedNoteAppend.objects.exists()


def test_consolidation_reads_every_part_and_counts_a_day_once(agent_a):
    yesterday = T0 - timedelta(days=1)
    services.daily_note_append(
        agent=agent_a, when=yesterday, text="\n- Deploys happen on Fridays\n", changed_by="t"
    )
    services.daily_note_append(
        agent=agent_a, when=T0, text="\n- The ledger uses PostgreSQL\n", changed_by="t"
    )
    exchanges(agent_a, 0, 30)
    services.daily_note_append(agent=agent_a, when=T0, text="\n- Deploys happen on Fridays\n", changed_by="t")
    services.daily_note_append(
        agent=agent_a, when=T0, text="\n- The ledger uses PostgreSQL\n", changed_by="t"
    )
    assert len(parts(agent_a)) >= 2
    read = [path for path, _ in daily_notes_recent(agent_a, T0, 7)]
    assert read == ["memory/2026-03-15.md"] + [note.path for note in parts(agent_a)]
    with time_machine.travel(T0, tick=False):
        result = consolidation_run(agent=agent_a, now=T0)
    memory = selectors.file_content(agent_a.pk, "MEMORY.md")
    assert result["updated"] is True
    assert "- Deploys happen on Fridays" in memory  # on two days: recurring
    assert "The ledger uses PostgreSQL" not in memory  # twice, but on one day (two parts of it)


def test_the_recovery_block_reads_the_days_last_part(agent_a):
    with time_machine.travel(T0, tick=False):
        result = exchanges(agent_a, 0, 30)
        assert len(parts(agent_a)) >= 2
        block = recovery_build(result.session)
    assert "question 29 about" in block["text"]


def test_extraction_shows_the_model_the_days_last_part(agent_a, fake_llm):  # noqa: F811
    """The model read the whole day's note, however long (a busy day's is more than a context window);
    it now reads the part the day is being written to, at most MEMORY_DAILY_NOTE_MAX_BYTES."""
    result = exchanges(agent_a, 0, 30)
    last = parts(agent_a)[-1].path
    assert last != f"memory/{DAY}.md"
    fake_llm.reply_json({"should_update": True, "reason": "x", "daily_entry": "- noted",
                         "memory_update": "", "profile_update": ""})  # fmt: skip
    with time_machine.travel(T0 + timedelta(minutes=1), tick=False):
        done = extraction_perform(agent_id=agent_a.pk, session_id=result.session.pk, trigger_source="web")
    prompt = fake_llm.requests[0]["json"]["messages"][1]["content"]
    assert f"## Today's daily note ({last})" in prompt
    assert "question 29 about" in prompt and "question 0 about" not in prompt
    assert done["path"] == "llm" and done["written"] == [parts(agent_a)[-1].path]
    assert "- noted" in parts(agent_a)[-1].content


def test_every_part_goes_through_export_and_import(agent_a, api, token_a, target, tmp_path, settings):
    """A day's note over MEMORY_MAX_ENTRY_BYTES was exported but an import refused it ("File skipped"):
    a round trip lost the day. Every part fits, so every part comes back."""
    settings.MEMORY_MAX_ENTRY_BYTES = 8192
    exchanges(agent_a, 0, 30)
    before = {note.path: note.content for note in parts(agent_a)}
    response = api.get("/agents/agent-a/export", token=token_a)
    zipfile.ZipFile(io.BytesIO(response.getvalue())).extractall(tmp_path / "export")
    call_command(
        "import_memory_dir", str(tmp_path / "export"), "--project", target.slug, stdout=io.StringIO()
    )
    imported = WorkspaceFile.objects.filter(project=target, path__startswith=f"memory/{DAY}", deleted_at=None)
    assert {note.path: note.content for note in imported} == before
    assert "".join(before.values()).count("**User:** question") == 30


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_past_the_bound_keep_every_exchange(agent_a, agent_b):
    """Writers of one day take turns on its first part's row, so two of them moving the day on at once
    neither lose an exchange nor open the same part twice."""
    failures = []

    def writer(thread):
        try:
            for batch in range(4):
                first = thread * 1000 + batch * 5
                exchanges(agent_a, first, 5, session_key=f"thread-{thread}")
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    notes = parts(agent_a)
    whole = "".join(note.content for note in notes)
    for thread in range(4):
        for n in range(thread * 1000, thread * 1000 + 20):
            assert whole.count(f"**User:** question {n} about") == 1
    numbers = [note.path for note in notes]
    assert len(numbers) == len(set(numbers)) >= 4
    assert all(note.size <= 4096 for note in notes)
