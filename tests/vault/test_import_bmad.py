"""Import of the `.bmad/memory/` layout: sessions with their manifests, decisions, findings and preferences,
and the shared files."""

import json

import pytest

from sessions_app.models import Message, Session
from tests.vault.test_import_export import run, snapshot, write
from vault.models import VaultEntry


@pytest.fixture
def bmad(tmp_path):
    root = tmp_path / "project" / ".bmad" / "memory"
    session = root / "sessions" / "sess-2026-01-11-abc123"
    write(
        session,
        "manifest.json",
        json.dumps(
            {
                "session_id": "sess-2026-01-11-abc123",
                "created_at": "2026-01-11T10:00:00Z",
                "updated_at": "2026-01-11T14:30:00Z",
                "user_id": "user-789",
                "agent_ids": ["bmad-master", "architect", "analyst"],
                "metadata": {"project_name": "payment-system", "tags": ["payments"]},
            }
        ),
    )
    write(
        session,
        "conversation.jsonl",
        "\n".join(
            [
                json.dumps(
                    {
                        "id": "msg-000",
                        "timestamp": "2026-01-11T10:05:00Z",
                        "agent_id": "architect",
                        "role": "user",
                        "content": "Which DB?",
                    }
                ),
                json.dumps(
                    {
                        "id": "msg-001",
                        "timestamp": "2026-01-11T10:05:23Z",
                        "agent_id": "architect",
                        "role": "assistant",
                        "content": "I recommend PostgreSQL.",
                        "context": {"parent_message_id": "msg-000"},
                    }
                ),
                "{truncated",
            ]
        )
        + "\n",
    )
    write(
        session,
        "decisions.jsonl",
        json.dumps(
            {
                "id": "dec-001",
                "timestamp": "2026-01-11T10:10:00Z",
                "made_by": "architect",
                "approved_by": ["user-789"],
                "decision": "Use PostgreSQL for primary database",
                "rationale": "ACID compliance required",
                "alternatives_considered": [
                    {"option": "MongoDB", "rejected_reason": "Eventual consistency risk"}
                ],
                "impact": "high",
                "tags": ["database", "architecture"],
            }
        )
        + "\n"
        + json.dumps({"id": "dec-002"})
        + "\n",
    )
    write(
        session,
        "findings.jsonl",
        json.dumps(
            {
                "id": "finding-003",
                "timestamp": "2026-01-11T10:08:15Z",
                "discovered_by": "analyst",
                "category": "scalability",
                "severity": "high",
                "description": "Database connection pooling not configured",
                "evidence": "Connection pool config missing from application.yml",
                "recommendation": "Implement HikariCP with max 50 connections",
                "status": "open",
                "tags": ["performance"],
            }
        )
        + "\n",
    )
    write(
        session,
        "preferences.jsonl",
        json.dumps(
            {
                "id": "pref-001",
                "timestamp": "2026-01-11T10:00:00Z",
                "category": "communication",
                "key": "response_style",
                "value": "concise_with_examples",
                "context": "User prefers brief explanations followed by code examples",
                "confidence": 0.9,
                "learned_from": ["sess-2026-01-10-xyz"],
            }
        )
        + "\n",
    )
    write(root, "sessions/broken-session/manifest.json", "{oops")
    write(root, "shared/user-preferences.json", json.dumps({"theme": "dark", "language": "pt-BR"}))
    write(
        root,
        "shared/agent-knowledge.json",
        json.dumps([{"id": "k1", "content": "Deploys happen on Fridays", "agent_id": "analyst"}]),
    )
    write(root, "shared/corrupt.json", "[1,")
    return tmp_path / "project"


def test_it_imports_a_bmad_folder(bmad, target):
    before = snapshot(bmad)
    report = run(bmad, target, default_agent="main")
    assert snapshot(bmad) == before
    decision = VaultEntry.objects.get(legacy_id="sess-2026-01-11-abc123/dec-001")
    assert decision.agent.slug == "architect" and decision.category == "decisions"
    assert "Rationale: ACID compliance required" in decision.content
    assert "MongoDB (rejected: Eventual consistency risk)" in decision.content
    assert decision.importance == 0.8 and decision.created_at.isoformat() == "2026-01-11T10:10:00+00:00"
    assert set(decision.tags) >= {"database", "architecture", "payments"}
    finding = VaultEntry.objects.get(legacy_id="sess-2026-01-11-abc123/finding-003")
    assert finding.agent.slug == "analyst" and finding.category == "lessons"
    for text in (
        "Severity: high",
        "Evidence: Connection pool config missing",
        "Recommendation: Implement HikariCP",
    ):
        assert text in finding.content
    preference = VaultEntry.objects.get(legacy_id="sess-2026-01-11-abc123/pref-001")
    assert (
        preference.agent.slug == "bmad-master"
        and "response_style = concise_with_examples" in preference.content
    )
    assert "preference" in preference.tags and preference.importance == 0.9
    shared = VaultEntry.objects.filter(legacy_id__startswith="shared/")
    assert {e.agent.slug for e in shared} == {"main", "analyst"}
    assert shared.filter(content__contains="theme = dark").exists()
    session = Session.objects.get(external_id="sess-2026-01-11-abc123")
    assert session.agent.slug == "bmad-master" and session.project == target
    messages = list(Message.objects.filter(session=session).order_by("created_at", "id"))
    assert [(m.client_id, m.role, m.text) for m in messages] == [
        ("msg-000", "user", "Which DB?"),
        ("msg-001", "assistant", "I recommend PostgreSQL."),
    ]
    assert messages[1].parent_id == messages[0].pk  # the source's parent link
    assert [m.created_at.isoformat() for m in messages] == [
        "2026-01-11T10:05:00+00:00",
        "2026-01-11T10:05:23+00:00",
    ]
    assert session.created_at == messages[0].created_at and session.last_activity_at == messages[1].created_at
    problems = "\n".join(report.problems)
    for expected in ("conversation.jsonl:3", "decisions.jsonl:2", "broken-session", "corrupt.json"):
        assert expected in problems
    count = VaultEntry.objects.count()
    second = run(bmad, target, default_agent="main")
    assert VaultEntry.objects.count() == count
    assert Message.objects.count() == 2 and Session.objects.count() == 1
    assert second.counts["conversations already imported (skipped)"] == 1
    assert not second.counts["messages stored"]
    assert not any(key.startswith("entries created") for key in second.counts)


def test_a_jsonl_record_is_one_line_whatever_unicode_line_breaks_its_strings_hold(tmp_path, target):
    # JSON.stringify and json.dumps(ensure_ascii=False) write U+2028, U+2029, U+0085 and form feeds
    # raw: only "\n" ends a record (a "\r" before it is tolerated).
    session = tmp_path / ".bmad" / "memory" / "sessions" / "s1"
    texts = ["first\u2028second", "a\u2029b\u0085c\x0cd\x1ce\x1df\x1eg\x0bh", "plain"]
    records = [
        json.dumps({"id": f"m{i}", "role": "user", "content": text, "agent_id": "pm"}, ensure_ascii=False)
        for i, text in enumerate(texts)
    ]
    write(session, "manifest.json", json.dumps({"session_id": "s1", "agent_ids": ["pm"]}))
    (session / "conversation.jsonl").write_bytes(
        (records[0] + "\n" + records[1] + "\r\n" + records[2] + "\n").encode("utf-8")
    )
    report = run(tmp_path, target)
    assert not report.problems
    assert list(Message.objects.order_by("created_at", "id").values_list("text", flat=True)) == texts
