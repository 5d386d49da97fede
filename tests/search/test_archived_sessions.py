"""Archived sessions live in cold storage and stay findable when archived items are asked for."""

import pytest

from sessions_app import services as session_services
from sessions_app.models import Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def archived(agent_a):
    session_services.messages_append(
        agent=agent_a,
        session_key="chat-cold",
        messages=[
            {
                "client_id": "u1",
                "role": "user",
                "text": "How do we rotate the Kubernetes ingress certificates?",
            },
            {
                "client_id": "a1",
                "role": "assistant",
                "text": "cert-manager renews the ingress certificates every 60 days.",
            },
            {"client_id": "u2", "role": "user", "text": "Thanks, that is all", "internal": True},
        ],
    )
    session = agent_a.sessions.get(external_id="chat-cold")
    session_services.session_close(agent=agent_a, session=session)
    session_services.session_archive(session=session)
    assert not Message.objects.filter(session=session).exists()
    return session


def test_archived_session_messages_are_found_when_archived_items_are_asked_for(api, token_a, archived):
    found = api.get(
        "/search", token=token_a, q="ingress certificates", kinds="messages", status="archived"
    ).json()
    texts = [r["snippet"] for r in found["results"]]
    assert len(found["results"]) == 2, found
    assert all(r["kind"] == "message" and r["session"] == "chat-cold" for r in found["results"])
    assert any("cert-manager" in t for t in texts)
    assert api.get("/search", token=token_a, q="ingress certificates", kinds="messages", status="all").json()[
        "results"
    ]


def test_archived_session_messages_are_not_found_by_default(api, token_a, archived):
    assert (
        api.get("/search", token=token_a, q="ingress certificates", kinds="messages").json()["results"] == []
    )


def test_internal_and_excluded_archived_messages_stay_out(api, token_a, archived):
    assert (
        api.get("/search", token=token_a, q="thanks", kinds="messages", status="archived").json()["results"]
        == []
    )
    found = api.get(
        "/search", token=token_a, q="ingress certificates -cert", kinds="messages", status="archived"
    ).json()["results"]
    assert [r["role"] for r in found] == ["user"]


@pytest.mark.parametrize("persona", ["token_b", "outsider_token"])
def test_other_agents_and_projects_never_see_archived_messages(api, request, archived, persona):
    token = request.getfixturevalue(persona)
    found = api.get(
        "/search", token=token, q="ingress certificates", kinds="messages", status="archived"
    ).json()
    assert found["results"] == []


def test_restoring_brings_the_messages_back_to_ordinary_search(api, token_a, archived):
    session_services.session_restore(session=archived)
    found = api.get("/search", token=token_a, q="ingress certificates", kinds="messages").json()["results"]
    assert len(found) == 2
