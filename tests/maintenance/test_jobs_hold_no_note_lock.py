"""Extraction and consolidation ask a model for seconds to minutes inside their transaction (the agent's
job lock). They first write the daily notes' queued exchanges, which locks each note's row: that write
was made inside the transaction, so the lock was held until the model answered, and every append of
the agent that ended a turn (writing the note once MEMORY_DAILY_NOTE_WRITE_SECONDS passed) and every
read of the note waited for the model. The queued exchanges are now written before, committed at once."""

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from sessions_app.maintenance.extraction import extraction_perform
from tests.fake_llm import completion
from tests.maintenance.conftest import session_make
from vault import selectors, services
from vault.maintenance.consolidation import consolidation_run

pytestmark = pytest.mark.django_db(transaction=True)

CONVERSATION = [
    "Hi, I'm Sardor and I work on the payments API.",
    "Nice to meet you. We decided to use PostgreSQL for the ledger tables.",
    "Please remember that the ledger needs idempotency keys on every write.",
    "Noted. I learned that the ledger needs idempotency keys on every write.",
]


def exchange(text: str):
    return [(timezone.now(), f"\n## [{timezone.localtime():%H:%M:%S}]\n**User:** {text}\n**Agent:** ok\n")]


def note_append(agent, text):
    services.daily_notes_append(agent=agent, blocks=exchange(text), words_known=True, redacted=True)


def while_the_model_thinks(agent, fake_llm, settings, answer: dict, job) -> list:
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 3600
    note_append(agent, "first exchange")  # the note's first write
    note_append(agent, "second exchange")  # queued: the note was written just now
    release, results = threading.Event(), []

    def reply(request):
        release.wait(30)
        return json.dumps(completion(json.dumps(answer)))

    fake_llm.replies.append((200, reply, 0.0))

    def run():
        try:
            results.append(job())
        except Exception as exc:  # noqa: BLE001 - reported to the test
            results.append(exc)
        finally:
            connection.close()

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert fake_llm.received.wait(30)  # the job is waiting for the model, its transaction open
        settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0  # an append now writes the note
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '500ms'")  # only a wait for a lock counts
            note_append(agent, "third exchange")
    finally:
        release.set()
        worker.join(60)
    return results


def test_an_append_does_not_wait_for_the_extractions_model(agent_a, fake_llm, settings):
    session = session_make(agent_a, CONVERSATION)
    answer = {"should_update": True, "reason": "x", "daily_entry": "- ledger on PostgreSQL",
              "memory_update": "", "profile_update": ""}  # fmt: skip
    [result] = while_the_model_thinks(
        agent_a, fake_llm, settings, answer,
        lambda: extraction_perform(agent_id=agent_a.pk, session_id=session.pk, trigger_source="web"),
    )  # fmt: skip
    assert result["status"] == "done" and result["path"] == "llm", result
    note = selectors.file_content(agent_a.pk, f"memory/{timezone.localdate():%Y-%m-%d}.md")
    assert (
        all(f"{n} exchange" in note for n in ("first", "second", "third")) and "ledger on PostgreSQL" in note
    )


def test_an_append_does_not_wait_for_the_consolidations_model(agent_a, fake_llm, settings):
    services.daily_note_append(agent=agent_a, when=timezone.now() - timedelta(days=2),
                               text="\n## 10:00\n- Deploys happen on Fridays\n", changed_by="t")  # fmt: skip
    answer = {
        "should_update": True,
        "reason": "x",
        "memory_content": "# MEMORY.md\n- Deploys happen on Fridays",
    }
    [result] = while_the_model_thinks(
        agent_a, fake_llm, settings, answer, lambda: consolidation_run(agent=agent_a)
    )
    assert result["used"] == "llm" and result["updated"] is True, result
    note = selectors.file_content(agent_a.pk, f"memory/{timezone.localdate():%Y-%m-%d}.md")
    assert all(f"{n} exchange" in note for n in ("first", "second", "third"))
