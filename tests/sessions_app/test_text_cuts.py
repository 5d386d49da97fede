"""Texts cut by characters for what a model or a curator reads (a handoff's quoted messages, a long tool
result in the context) are cut where a reader's character ends: never inside a flag, between an emoji
and its skin tone or joiner, or between a letter and its combining accent."""

import io
import json

import pytest
from django.core.management import call_command

from tests.clusters import ENTRY_RUN, FLAG, RUN, parts_left
from vault.models import VaultEntry

pytestmark = pytest.mark.django_db


def test_a_handoff_cuts_its_messages_between_characters(api, token_a, agent_a, settings):
    """handoff_format cut each message at MEMORY_HANDOFF_MESSAGE_CHARS code points: half a flag, an
    emoji without its skin tone, an e without its accent ended the line."""
    for chars in range(20, 20 + len(ENTRY_RUN)):
        settings.MEMORY_HANDOFF_MESSAGE_CHARS = chars
        messages = [
            {"role": "user", "text": "ok " + ENTRY_RUN * 10},
            {"role": "agent", "text": ENTRY_RUN * 10},
        ]
        body = api.post(
            "/agents/agent-a/sleep", {"messages": messages, "session": f"s{chars}"}, token=token_a
        )
        assert body.status_code == 200, body.content
        lines = body.json()["handoff"]["content"].split("\n")
        assert [line.split(": ", 1)[0] for line in lines] == ["[User]", "[Agent]"]
        assert all(len(line.split(": ", 1)[1]) <= chars for line in lines)
        assert parts_left(body.json()["handoff"]["content"]) == [], (chars, lines)
        assert FLAG in lines[1]


def test_an_imported_conversations_handoff_cuts_its_messages_between_characters(tmp_path, project, settings):
    for chars in range(20, 20 + len(ENTRY_RUN)):
        settings.MEMORY_HANDOFF_MESSAGE_CHARS = chars
        folder = tmp_path / f"c{chars}" / "conversations"
        folder.mkdir(parents=True)
        saved = {"agentId": f"dev{chars}", "savedAt": "2026-03-01T10:00:00Z",
                 "messages": [{"role": "user", "text": "ok " + ENTRY_RUN * 10}]}  # fmt: skip
        (folder / f"dev{chars}.json").write_text(json.dumps(saved), encoding="utf-8")
        call_command(
            "import_conversations", str(folder.parent), "--project", project.slug, stdout=io.StringIO()
        )
        handoff = VaultEntry.objects.get(agent__slug=f"dev{chars}", category="handoffs").content
        assert handoff.startswith("[User]: ok " + FLAG) and len(handoff) <= len("[User]: ") + chars
        assert parts_left(handoff) == [], (chars, handoff)


def test_a_long_tool_result_in_the_context_is_cut_between_characters(api, token_a, agent_a, settings):
    """tool_result_truncate kept the head's first 70% and the tail's last 20% of MEMORY_TOOL_RESULT_MAX_CHARS
    code points: both cuts could fall inside 👩‍💻, 🇯🇵, 👍🏽, e + U+0301 or England's flag."""
    messages = [
        {"role": "user", "text": "read the log"},
        {"role": "assistant", "text": "", "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "text": "log " + RUN * 40 + " end", "tool_call_id": "c1"},
    ]  # fmt: skip
    stored = api.post("/agents/agent-a/messages", {"session": "t", "messages": messages}, token=token_a)
    assert stored.status_code == 200, stored.content
    for chars in range(100, 100 + len(RUN)):
        settings.MEMORY_TOOL_RESULT_MAX_CHARS = chars
        response = api.post(
            "/agents/agent-a/sessions/t/compact", {"max_input_tokens": 100_000}, token=token_a
        )
        assert response.status_code == 200, response.content
        [tool] = [m["text"] for m in response.json()["context"] if m["role"] == "tool"]
        head, _, rest = tool.partition("\n\n[... ")
        removed, _, tail = rest.partition(" characters truncated ...]\n\n")
        assert len(head) + int(removed) + len(tail) == len("log " + RUN * 40 + " end"), chars
        assert len(head) + len(tail) <= chars and tail.endswith(" end")
        assert parts_left(head) == [] and parts_left(tail) == [], (chars, head[-12:], tail[:12])
