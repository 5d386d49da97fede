"""A forget by id of a message in cold storage finds the archive holding it by the ids the archive
lists, without decompressing the project's other archives."""

import importlib
import zlib
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Message, SessionArchive

pytestmark = pytest.mark.django_db


def archived_sessions(api, token, count):
    ids = {}
    for n in range(count):
        messages = [
            {"id": f"c{n}-u", "role": "user", "text": f"question number {n} here"},
            {"id": f"c{n}-a", "role": "assistant", "text": f"answer number {n}"},
        ]
        response = api.post(
            "/agents/agent-a/messages", {"session": f"c{n}", "messages": messages}, token=token
        )
        assert response.status_code == 200, response.content
        ids.update(Message.objects.filter(session__external_id=f"c{n}").values_list("client_id", "pk"))
        assert api.post(f"/agents/agent-a/sessions/c{n}/archive", token=token).status_code == 200
    return ids


@pytest.fixture
def decompressions(monkeypatch):
    calls = []
    decompress = zlib.decompress

    def counted(data, *args, **kwargs):
        calls.append(len(data))
        return decompress(data, *args, **kwargs)

    monkeypatch.setattr(zlib, "decompress", counted)
    return calls


def test_it_lists_the_ids_of_the_messages_it_holds(api, token_a, agent_a):
    ids = archived_sessions(api, token_a, 2)
    held = dict(SessionArchive.objects.values_list("session__external_id", "message_ids"))
    assert held == {"c0": [ids["c0-u"], ids["c0-a"]], "c1": [ids["c1-u"], ids["c1-a"]]}


def test_a_forget_of_an_id_no_archive_holds_decompresses_none(
    api, admin_token, token_a, agent_a, decompressions
):
    """Every archive of the project was decompressed to look for the id: a cost growing with the
    project for each forget of an id already gone."""
    archived_sessions(api, token_a, 3)
    answer = api.post("/forget", {"message_ids": [999999]}, token=admin_token).json()
    assert (answer["messages"], answer["not_found"]) == (0, [999999])
    assert decompressions == []


def test_a_forget_by_id_decompresses_only_the_archive_holding_it(
    api, admin_token, token_a, agent_a, decompressions
):
    ids = archived_sessions(api, token_a, 3)
    answer = api.post("/forget", {"message_ids": [ids["c1-u"]]}, token=admin_token).json()
    assert (answer["messages"], answer["not_found"]) == (1, [])
    assert len(decompressions) == 1  # the restore of that session's archive, erased and archived again
    assert SessionArchive.objects.get(session__external_id="c1").message_ids == [ids["c1-a"]]


def archived_session(api, token, name, *days_ago):
    """A session of one message per age in `days_ago`, written that many days ago, then archived."""
    messages = [
        {"id": f"{name}-{n}", "role": "user", "text": f"{name} said {n}"} for n in range(len(days_ago))
    ]
    response = api.post("/agents/agent-a/messages", {"session": name, "messages": messages}, token=token)
    assert response.status_code == 200, response.content
    for n, days in enumerate(days_ago):
        Message.objects.filter(client_id=f"{name}-{n}").update(
            created_at=timezone.now() - timedelta(days=days)
        )
    assert api.post(f"/agents/agent-a/sessions/{name}/archive", token=token).status_code == 200


def forget_range(api, admin_token, **days_ago):
    body = {"agent": "agent-a", "kinds": ["messages"]}
    body |= {key: (timezone.now() - timedelta(days=days)).isoformat() for key, days in days_ago.items()}
    answer = api.post("/forget", body, token=admin_token)
    assert answer.status_code == 200, answer.content
    return answer.json()


def held():
    archives = SessionArchive.objects.values_list("session__external_id", "message_count")
    return {name: count for name, count in archives if count}


def test_a_forget_by_time_range_decompresses_only_the_archives_its_range_reaches(
    api, admin_token, token_a, agent_a, decompressions
):
    """Every archive archived after `since` was decompressed to look for messages in the range: all of
    them, when sessions are archived some days after their last message, whatever their dates."""
    archived_session(api, token_a, "old", 12, 10)
    archived_session(api, token_a, "mid", 6, 5)
    archived_session(api, token_a, "new", 2, 1)
    assert forget_range(api, admin_token, since=3)["messages"] == 2
    assert len(decompressions) == 1  # the restore of "new", its messages erased, archived again
    assert held() == {"old": 2, "mid": 2}
    assert forget_range(api, admin_token, since=11, until=9)["messages"] == 1
    assert len(decompressions) == 2  # "old"'s last message is in the range: restored, nothing looked at
    assert held() == {"old": 1, "mid": 2}


def test_an_archive_whose_messages_lie_on_both_sides_of_the_range_is_looked_into(
    api, admin_token, token_a, agent_a, decompressions
):
    archived_session(api, token_a, "long", 20, 1)
    assert forget_range(api, admin_token, since=10, until=5)["messages"] == 0
    assert len(decompressions) == 1  # read to look, no message in the range: left archived
    assert held() == {"long": 2}
    archived_session(api, token_a, "wide", 20, 7, 1)
    assert forget_range(api, admin_token, since=10, until=5)["messages"] == 1
    assert held() == {"long": 2, "wide": 2}


def test_the_migration_dates_the_archives_stored_before(api, token_a, agent_a):
    from django.apps import apps

    fill = importlib.import_module(
        "sessions_app.migrations.0017_session_archive_message_dates"
    ).message_dates_fill
    archived_session(api, token_a, "old", 12, 10)
    archive = SessionArchive.objects.get()
    SessionArchive.objects.update(first_message_at=None, last_message_at=None)
    fill(apps, None)
    assert SessionArchive.objects.values_list("first_message_at", "last_message_at").get() == (
        archive.first_message_at,
        archive.last_message_at,
    )
    assert (archive.last_message_at - archive.first_message_at).days == 2
