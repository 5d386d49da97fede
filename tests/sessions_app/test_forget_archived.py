"""A forget by id of a message in cold storage finds the archive holding it by the ids the archive
lists, without decompressing the project's other archives."""

import zlib

import pytest

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
