"""Instants callers give (a message's timestamp, an import's dates, search and forget filters): stored as
the instant they name, in UTC, whatever TIME_ZONE is, or refused with a 422 naming the field; never a 500,
and never later than the server's clock. TIME_ZONE decides only which local day an instant falls on."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from memoryproject.timestamps import shown
from sessions_app.models import Message, Session
from vault.models import WorkspaceFile

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 16, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def notes_written_at_once(settings):
    settings.MEMORY_DAILY_NOTE_WRITE_SECONDS = 0


def append(api, token, *stamps, session="s", texts=None):
    messages = [
        {
            "role": "user" if n % 2 == 0 else "assistant",
            "text": (texts or {}).get(n, f"hello {n}"),
            "timestamp": s,
        }
        for n, s in enumerate(stamps)
    ]
    return api.post("/agents/agent-a/messages", {"session": session, "messages": messages}, token=token)


@pytest.mark.parametrize(
    "stamp, stored",
    [
        ("2026-03-01T10:00:00+14:00", datetime(2026, 2, 28, 20, 0, tzinfo=UTC)),
        ("2026-03-01T10:00:00-12:00", datetime(2026, 3, 1, 22, 0, tzinfo=UTC)),
        ("2026-03-01T10:00:00+23:59", datetime(2026, 2, 28, 10, 1, tzinfo=UTC)),
        ("2026-03-01T10:00:00Z", datetime(2026, 3, 1, 10, 0, tzinfo=UTC)),
        ("2026-03-01T10:00:00.123456Z", datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)),
        # No offset: UTC, as the API shows every instant, not TIME_ZONE's local time.
        ("2026-03-01T10:00:00", datetime(2026, 3, 1, 10, 0, tzinfo=UTC)),
        ("2026-03-01T10:00:00.5", datetime(2026, 3, 1, 10, 0, 0, 500000, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
        (1772359200, datetime(2026, 3, 1, 10, 0, tzinfo=UTC)),
        ("1900-01-01T00:00:00Z", datetime(1900, 1, 1, tzinfo=UTC)),
        ("0001-01-02T00:00:00Z", datetime(1, 1, 2, tzinfo=UTC)),
        # A date to come is stored as the time the server received it.
        ("2026-03-16T12:00:01Z", NOW),
        ("2100-01-01T00:00:00Z", NOW),
        ("9999-12-31T23:59:59Z", NOW),
        ("9999-12-31T23:59:59-12:00", NOW),
    ],
)
def test_it_stores_a_timestamp_as_the_instant_it_names(api, token_a, settings, stamp, stored):
    settings.TIME_ZONE = "America/Sao_Paulo"
    with time_machine.travel(NOW, tick=False):
        response = append(api, token_a, stamp)
    assert response.status_code == 200, response.content
    assert Message.objects.get().created_at == stored
    listed = api.get("/agents/agent-a/messages", token=token_a, session="s").json()["items"]
    assert listed[0]["created_at"] == shown(stored)


@pytest.mark.parametrize(
    "stamp, says",
    [
        ("0001-01-01T00:00:00+14:00", "must be at or after 0001-01-02T00:00:00Z"),
        ("0001-01-01T00:00:00Z", "must be at or after 0001-01-02T00:00:00Z"),
        ("0001-01-01T00:00:00", "must be at or after 0001-01-02T00:00:00Z"),
        ("10000-01-01T00:00:00Z", "valid datetime"),
        ("2026-02-30T00:00:00Z", "valid datetime"),
        ("2026-03-01T24:00:01Z", "valid datetime"),
        ("2026-03-01T10:00:60Z", "valid datetime"),
        ("2026-03-01T10:00:00+24:00", "valid datetime"),
        ("yesterday", "valid datetime"),
        (True, "valid datetime"),
    ],
)
def test_it_refuses_a_timestamp_it_cannot_store_with_a_422_naming_it(api, token_a, stamp, says):
    response = append(api, token_a, "2026-03-01T10:00:00Z", stamp)
    assert response.status_code == 422, response.content
    body = response.json()
    assert says in body["detail"] and "messages.1.timestamp" in body["detail"], body
    assert body["errors"][0]["loc"][-3:] == ["messages", 1, "timestamp"] or body["errors"][0]["loc"][-1] == (
        "timestamp"
    ), body
    assert not Message.objects.exists()


def test_a_message_dated_in_the_future_does_not_come_before_what_was_said_after_it(api, token_a, agent_a):
    """Kept as sent, a message dated 2100 was the conversation's newest for 74 years: listed first with
    order=desc, the last turn in the context, and the day's exchange filed in memory/2100-01-01.md."""
    with time_machine.travel(NOW, tick=False):
        assert append(api, token_a, "2100-01-01T00:00:00Z", "2100-01-01T00:00:01Z").status_code == 200
    with time_machine.travel(NOW + timedelta(minutes=1), tick=False):
        assert (
            append(api, token_a, None, None, texts={0: "later question", 1: "later answer"}).status_code
            == 200
        )
    newest = api.get("/agents/agent-a/messages", token=token_a, session="s", order="desc").json()["items"]
    assert [m["text"] for m in newest] == ["later answer", "later question", "hello 1", "hello 0"]
    notes = set(
        WorkspaceFile.objects.filter(agent=agent_a, path__startswith="memory/").values_list("path", flat=True)
    )
    assert notes == {"memory/2026-03-16.md"}


def test_the_reply_says_a_timestamp_to_come_was_stored_as_received(api, token_a, agent_a):
    """A timestamp later than the clock was clamped to the receive time silently: the caller kept
    believing its message was stored under the date it sent."""
    with time_machine.travel(NOW, tick=False):
        body = append(api, token_a, "2026-03-16T11:00:00Z", "2100-01-01T00:00:00Z").json()
        again = append(api, token_a, "2026-03-16T11:00:00Z", session="other").json()
    assert body["stored"] == 2 and again["warnings"] == []
    assert body["warnings"] == [
        {
            "source": "timestamp",
            "loc": ["messages", 1, "timestamp"],
            "detail": "messages[1]: timestamp 2100-01-01T00:00:00Z is later than the server's clock; "
            "stored as the time it was received, 2026-03-16T12:00:00Z",
        }
    ]


def test_sleep_says_a_timestamp_to_come_was_stored_as_received(api, token_a, agent_a):
    messages = [{"role": "user", "text": "we decided to ship", "timestamp": "2100-01-01T00:00:00Z"}]
    with time_machine.travel(NOW, tick=False):
        body = api.post("/agents/agent-a/sleep", {"session": "s", "messages": messages}, token=token_a).json()
    assert body["stored"] == 1
    assert [(w["source"], w["loc"]) for w in body["warnings"]] == [
        ("timestamp", ["messages", 0, "timestamp"])
    ]


def test_an_imported_session_dated_in_the_future_is_archived_in_its_turn(
    api, token_a, agent_a, target, tmp_path, settings
):
    """An export's session whose dates were to come (a server with its clock ahead, a hand-edited file)
    kept its last activity in 2100: the lifecycle never found it quiet, so it was never archived."""
    import io
    import json
    import zipfile

    from django.core.management import call_command

    from sessions_app.services.lifecycle import lifecycle_run

    with time_machine.travel(NOW, tick=False):
        append(api, token_a, "2026-03-16T11:00:00Z", "2026-03-16T11:00:01Z")
        archive = api.get("/agents/agent-a/export", token=token_a)
    folder = tmp_path / "export"
    zipfile.ZipFile(io.BytesIO(archive.getvalue())).extractall(folder)
    [session_file] = [p for p in folder.rglob("*.json") if "sessions" in p.parts]
    data = json.loads(session_file.read_text())
    data["created_at"] = data["last_activity_at"] = "2100-01-01T00:00:00+00:00"
    for message in data["messages"]:
        message["created_at"] = "2100-01-01T00:00:00+00:00"
    session_file.write_text(json.dumps(data))
    with time_machine.travel(NOW + timedelta(hours=1), tick=False):
        call_command("import_memory_dir", str(folder), "--project", target.slug, stdout=io.StringIO())
    imported = Session.objects.get(project=target)
    assert imported.last_activity_at <= NOW + timedelta(hours=1)
    assert all(m.created_at <= NOW + timedelta(hours=1) for m in Message.objects.filter(session=imported))
    later = NOW + timedelta(days=settings.MEMORY_SESSION_ARCHIVE_DAYS + 2)
    with time_machine.travel(later, tick=False):
        lifecycle_run(now=later)
    imported.refresh_from_db()
    assert imported.status == "archived"


def test_search_and_forget_filters_take_any_instant(api, token_a, admin_token, agent_a):
    """since=0001-01-01T00:00:00+14:00 (year 0 in UTC) and until=9999-12-31T23:59:59-12:00 (year 10000)
    were 500s; a bound without an offset (UTC) was a 500 on a search of archived sessions, compared
    with their messages' aware dates. Bounds outside what Python holds select as the range's end does."""
    from sessions_app.services.lifecycle import session_archive

    with time_machine.travel(NOW, tick=False):
        append(api, token_a, None, None, texts={0: "the rollout checklist", 1: "noted"})
        append(api, token_a, None, None, session="old", texts={0: "the rollout runbook", 1: "noted"})
    session_archive(session=Session.objects.get(external_id="old"))
    for since, until, found in [
        ("0001-01-01T00:00:00+14:00", None, 3),
        ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59-12:00", 3),
        ("2026-03-16T12:00:00", None, 3),  # at or after: the instant itself is in
        ("2026-03-16T08:00:00-04:00", None, 3),
        (None, "2026-03-16T12:00:00", 0),  # before: the instant itself is out
        (None, "2026-03-16T12:00:00.001", 3),
        ("2026-03-16T12:00:00.001Z", None, 0),
    ]:  # the two rollout messages, and the answer to the live one (its reply context)
        query = {k: v for k, v in {"since": since, "until": until}.items() if v}
        response = api.get("/search", token=token_a, q="rollout", status="all", kinds="messages", **query)
        assert response.status_code == 200, (query, response.content)
        assert len(response.json()["results"]) == found, (
            query,
            [
                (r["text"] if "text" in r else r["snippet"], r.get("archived"))
                for r in response.json()["results"]
            ],
        )
    response = api.post(
        "/forget",
        {
            "agent": "agent-a",
            "kinds": ["messages"],
            "since": "0001-01-01T00:00:00+14:00",
            "until": "2026-03-16",
        },
        token=admin_token,
    )
    assert response.status_code == 200 and response.json()["messages"] == 0, response.content
    response = api.post(
        "/forget",
        {"agent": "agent-a", "kinds": ["messages"], "until": "9999-12-31T23:59:59-12:00"},
        token=admin_token,
    )
    # the live session's two and the archived one's two: a forget reaches cold storage as search does
    assert response.status_code == 200 and response.json()["messages"] == 4, response.content


def test_the_openapi_document_says_what_a_filter_bound_is(api):
    parameters = {
        p["name"]: p for p in api.get("/openapi.json").json()["paths"]["/api/v1/search"]["get"]["parameters"]
    }
    for name, says in [("since", "at or after"), ("until", "before")]:
        assert says in parameters[name]["description"] and "UTC" in parameters[name]["description"]
        schema = parameters[name]["schema"]
        assert "date-time" in str(schema), schema


@pytest.mark.parametrize(
    "zone, exchanges",
    [
        # New York: 2026-03-08 02:00 EST became 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT became 01:00 EST.
        (
            "America/New_York",
            [
                ("2026-03-08T04:59:59Z", "2026-03-07", "23:59:59"),
                ("2026-03-08T05:00:00Z", "2026-03-08", "00:00:00"),
                ("2026-03-08T06:59:59Z", "2026-03-08", "01:59:59"),
                ("2026-03-08T07:00:00Z", "2026-03-08", "03:00:00"),
                ("2026-03-09T03:59:59Z", "2026-03-08", "23:59:59"),
                ("2026-03-09T04:00:00Z", "2026-03-09", "00:00:00"),
                ("2026-11-01T05:30:00Z", "2026-11-01", "01:30:00"),
                ("2026-11-01T06:30:00Z", "2026-11-01", "01:30:00"),
                ("2026-11-02T04:59:59Z", "2026-11-01", "23:59:59"),
            ],
        ),
        # Lisbon: 2026-03-29 01:00 WET became 02:00 WEST (01:00Z).
        (
            "Europe/Lisbon",
            [
                ("2026-03-28T23:59:59Z", "2026-03-28", "23:59:59"),
                ("2026-03-29T00:59:59Z", "2026-03-29", "00:59:59"),
                ("2026-03-29T01:00:00Z", "2026-03-29", "02:00:00"),
                ("2026-03-29T22:59:59Z", "2026-03-29", "23:59:59"),
                ("2026-03-29T23:00:00Z", "2026-03-30", "00:00:00"),
            ],
        ),
        # Sao Paulo, 2018-11-04: midnight did not happen (00:00 -03 became 01:00 -02, at 03:00Z).
        (
            "America/Sao_Paulo",
            [
                ("2018-11-04T02:59:59Z", "2018-11-03", "23:59:59"),
                ("2018-11-04T03:00:00Z", "2018-11-04", "01:00:00"),
                ("2018-11-05T01:59:59Z", "2018-11-04", "23:59:59"),
                ("2018-11-05T02:00:00Z", "2018-11-05", "00:00:00"),
            ],
        ),
    ],
)
def test_an_exchange_lands_in_the_note_of_its_local_day_across_midnight_and_dst(
    api, token_a, settings, zone, exchanges
):
    """TIME_ZONE decides the day a daily note is filed under and the time its exchange shows."""
    settings.TIME_ZONE = zone
    for n, (instant, _, _) in enumerate(exchanges):
        answer = datetime.fromisoformat(instant)
        question = answer - timedelta(microseconds=1) if answer.microsecond else answer
        response = append(
            api,
            token_a,
            question.isoformat(),
            answer.isoformat(),
            texts={0: f"question {n}", 1: f"answer {n}"},
        )
        assert response.status_code == 200, response.content
    for n, (_, day, shown_at) in enumerate(exchanges):
        note = api.get(f"/agents/agent-a/files/memory/{day}.md", token=token_a).json()["content"]
        assert f"## [{shown_at}]\n**User:** question {n}\n**Agent:** answer {n}\n" in note, (n, day, note)
    days = {day for _, day, _ in exchanges}
    listed = api.get("/agents/agent-a/files", token=token_a, prefix="memory/").json()
    paths = {f["path"] for f in (listed["items"] if isinstance(listed, dict) else listed)}
    assert paths == {f"memory/{day}.md" for day in days}, paths


def test_an_export_under_one_time_zone_imports_the_same_instants_under_another(
    api, token_a, agent_a, target, tmp_path, settings
):
    """Instants go out in UTC with their microseconds, and come back the same under any TIME_ZONE."""
    import io
    import zipfile

    from django.core.management import call_command

    from vault.models import VaultEntry

    settings.TIME_ZONE = "America/Sao_Paulo"
    stamps = ["2026-03-01T23:30:00.123456-03:00", "2026-03-02T02:30:00.000001Z", "2026-03-02T00:00:00+14:00"]
    assert append(api, token_a, *stamps).status_code == 200
    api.post(
        "/agents/agent-a/entries",
        {"category": "lessons", "content": "Deploys wait for Monday"},
        token=token_a,
    )
    zipped = api.get("/agents/agent-a/export", token=token_a)
    zipfile.ZipFile(io.BytesIO(zipped.getvalue())).extractall(tmp_path / "export")
    settings.TIME_ZONE = "Asia/Tokyo"
    call_command(
        "import_memory_dir", str(tmp_path / "export"), "--project", target.slug, stdout=io.StringIO()
    )

    def instants(project):
        messages = Message.objects.filter(project=project).order_by("created_at", "id")
        entries = VaultEntry.objects.filter(agent__project=project)
        return [(m.text, m.created_at) for m in messages], [
            (e.content, e.created_at, e.updated_at) for e in entries
        ]

    assert instants(target) == instants(agent_a.project)
    assert [m for _, m in instants(target)[0]] == sorted(datetime.fromisoformat(s) for s in stamps)


def test_messages_with_one_timestamp_keep_their_order_in_every_page_and_the_export(api, token_a, agent_a):
    """Ties on created_at are broken by the order the messages were stored in, the same in the list's
    pages (both orders), a search's pages and the export."""
    import io
    import json
    import zipfile

    same = "2026-03-01T10:00:00Z"
    texts = {n: f"tie number {n} about the ledger" for n in range(30)}
    for first in (0, 10, 20):
        batch = {n - first: texts[n] for n in range(first, first + 10)}
        assert append(api, token_a, *[same] * 10, texts=batch).status_code == 200
    expected = [texts[n] for n in range(30)]

    def pages(order):
        got = []
        for offset in range(0, 30, 7):
            query = {"session": "s", "order": order, "limit": 7, "offset": offset}
            got += [
                m["text"] for m in api.get("/agents/agent-a/messages", token=token_a, **query).json()["items"]
            ]
        return got

    assert pages("asc") == expected and pages("desc") == expected[::-1]
    found = []
    for offset in range(0, 30, 7):
        query = {"q": "ledger", "kinds": "messages", "limit": 7, "offset": offset, "mode": "lexical"}
        found += [r["id"] for r in api.get("/search", token=token_a, **query).json()["results"]]
    assert len(found) == len(set(found)) == 30
    zipped = zipfile.ZipFile(io.BytesIO(api.get("/agents/agent-a/export", token=token_a).getvalue()))
    [name] = [n for n in zipped.namelist() if "/sessions/" in f"/{n}" and n.endswith(".json")]
    assert [m["text"] for m in json.loads(zipped.read(name))["messages"]] == expected


def test_an_imported_conversation_keeps_each_timestamp_as_the_instant_it_names(tmp_path, target):
    """A timestamp whose UTC time is before year 1 (0001-01-01T00:00+14:00) failed the whole import with
    an OverflowError; it is now read as no timestamp (the conversation's savedAt), one to come as the
    import's time, one past +15:59 as its instant."""
    import json

    from sessions_app import transfer

    stamps = {
        "2026-03-01T10:00:00+16:00": datetime(2026, 2, 28, 18, 0, tzinfo=UTC),
        "2026-03-01T10:00:00": datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
        "0001-01-01T00:00:00+14:00": datetime(2026, 3, 15, 10, 0, tzinfo=UTC),  # none: the savedAt
        "2100-01-01T00:00:00Z": NOW,
    }
    conversation = {
        "agentId": "dev",
        "savedAt": "2026-03-15T10:00:00Z",
        "messages": [
            {"id": f"m{n}", "role": "user", "text": f"message {n}", "timestamp": stamp}
            for n, stamp in enumerate(stamps)
        ],
    }
    root = tmp_path / ".memory"
    (root / "conversations").mkdir(parents=True)
    (root / "dev").mkdir()
    (root / "dev" / "decisions.md").write_text("")
    (root / "conversations" / "dev.json").write_text(json.dumps(conversation))
    with time_machine.travel(NOW, tick=False):
        report = transfer.import_memory_dir(path=root, project=target)
    assert report.counts["messages stored"] == 4, report.counts
    stored = {m.text: m.created_at for m in Message.objects.filter(project=target)}
    assert stored == {f"message {n}": instant for n, instant in enumerate(stamps.values())}
    assert Session.objects.get(project=target).last_activity_at == NOW


def test_an_entry_imported_with_a_date_to_come_is_not_the_newest_for_ever(api, token_a, target, tmp_path):
    """An entry's header dated 2100 was stored so: first in every newest-first list until then."""
    from sessions_app import transfer
    from vault.models import TokenScope
    from vault.services import token_create

    root = tmp_path / ".memory"
    (root / "agent-a").mkdir(parents=True)
    (root / "agent-a" / "decisions.md").write_text(
        "<!-- id:1 -->\n## 2100-01-01T00:00 · #future\nWe decided to ship on Fridays.\n---\n\n"
        "<!-- id:2 -->\n## 2026-03-01T10:00:00.123456\nWe decided to use SSE.\n---\n"
    )
    with time_machine.travel(NOW, tick=False):
        transfer.import_memory_dir(path=root, project=target)
    token = token_create(project=target, scope=TokenScope.ADMIN)[1]
    with time_machine.travel(NOW + timedelta(minutes=1), tick=False):
        created = api.post(
            "/agents/agent-a/entries", {"category": "decisions", "content": "We decided on gRPC"}, token=token
        )
    assert created.status_code == 201, created.content
    listed = api.get("/agents/agent-a/entries", token=token).json()["items"]
    assert [(e["content"], e["created_at"]) for e in listed] == [
        ("We decided on gRPC", shown(NOW + timedelta(minutes=1))),
        ("We decided to ship on Fridays.", shown(NOW)),
        ("We decided to use SSE.", "2026-03-01T10:00:00.123Z"),
    ]
