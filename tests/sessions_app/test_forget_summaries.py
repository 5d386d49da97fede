"""Forgetting a message reaches the compaction summaries built from it: a model's summary, which says
the message's words in its own, is rebuilt without it; the forget's answer counts the summaries."""

import pytest

from sessions_app.compaction import SUMMARY_STATE_KEY
from sessions_app.models import Message

from .test_forget_erase import forget, log


def paraphrase(messages):
    """A model's summary: it names what was said in words of its own, never a message's whole text."""
    said = " ".join(m.text for m in messages)
    locker = " The user keeps their things in locker 88172." if "88172" in said else ""
    return f"The user and the agent went over {len(messages)} messages about the pipeline.{locker}"


@pytest.fixture
def model_summaries(settings):
    settings.MEMORY_COMPACT_SUMMARISER = f"{__name__}.paraphrase"


def compact(api, token):
    response = api.post(
        "/agents/agent-a/sessions/s/compact", {"force": True, "max_input_tokens": 1000}, token=token
    )
    assert response.status_code == 200 and response.json()["compacted"], response.content
    return response.json()["summary"]["text"]


def summaries():
    return list(Message.objects.filter(state__has_key=SUMMARY_STATE_KEY).order_by("pk"))


def test_it_rebuilds_a_models_summary_of_a_forgotten_message(
    api, admin_token, token_a, agent_a, model_summaries
):
    """The model's summary said the forgotten message's words in its own: the line erase found no line
    quoting it, and "locker 88172" stayed in the conversation a model reads, in search and in exports."""
    filler = [(f"filler question {n} about the pipeline", f"answer {n}") for n in range(12)]
    log(api, token_a, [*filler[:5], ("my locker code is 88172", "noted"), *filler[5:]])
    assert "locker 88172" in compact(api, token_a)
    answer = forget(api, admin_token, "s-u5")
    (summary,) = summaries()
    assert "88172" not in summary.text and "[forgotten] 1 of the messages" in summary.text
    assert answer["summaries_rewritten"] == 1 and answer["messages"] == 1 and answer["count"] == 1
    assert "filler question 4 about the pipeline" in summary.text  # rebuilt from what it still replaces
    replaced = summary.state[SUMMARY_STATE_KEY]["replaces"]
    assert Message.objects.filter(pk__in=replaced).count() == len(replaced)  # the forgotten one left out
    response = api.get("/search?q=88172&kinds=messages", token=token_a)
    assert response.status_code == 200 and response.json()["results"] == []


def test_it_rebuilds_a_summary_that_summarised_such_a_summary_again(
    api, admin_token, token_a, agent_a, model_summaries
):
    """A second compaction summarises the first summary with its neighbours: the forgotten message is
    not among the second's messages, but its words are in the second's text."""
    filler = [(f"filler question {n} about the pipeline", f"answer {n}") for n in range(12)]
    log(api, token_a, [*filler[:5], ("my locker code is 88172", "noted"), *filler[5:]])
    compact(api, token_a)
    later = [{"id": f"later-{n}", "role": role, "text": f"later {role} {n} about the rollout"}
             for n in range(12) for role in ("user", "assistant")]  # fmt: skip
    response = api.post("/agents/agent-a/messages", {"session": "s", "messages": later}, token=token_a)
    assert response.status_code == 200, response.content
    assert "locker 88172" in compact(api, token_a)
    answer = forget(api, admin_token, "s-u5")
    assert [m.pk for m in Message.objects.filter(text__contains="88172")] == []
    assert answer["summaries_rewritten"] == 2


def test_a_heuristic_summary_keeps_its_other_lines_and_is_counted(api, admin_token, token_a, agent_a):
    filler = [(f"filler question {n} about the pipeline", f"answer {n}") for n in range(12)]
    log(api, token_a, [*filler[:5], ("my locker code is 88172", "noted"), *filler[5:]])
    assert "88172" in compact(api, token_a)
    assert forget(api, admin_token, "s-u5")["summaries_rewritten"] == 1
    (summary,) = summaries()
    assert "88172" not in summary.text and "- [forgotten]" in summary.text
    assert "rebuilt" not in summary.text  # its lines quote the messages: only the forgotten one's went
