"""Conversation-aware ranking (search/conversation.py): with MEMORY_SEARCH_NEIGHBOUR_SHARE set, a
message gains a share of the relevance of the turns next to it (its parent and its replies) that the
same search found."""

import pytest

from search.conversation import neighbours_spread, rows_spread
from search.fusion import fuse
from sessions_app.models import Message

pytestmark = pytest.mark.django_db
SHARE = 0.5


@pytest.fixture
def spread_on(settings):
    settings.MEMORY_SEARCH_NEIGHBOUR_SHARE = SHARE


def message(id, parent=None, **extra):
    return {"kind": "message", "id": id, "parent_id": parent, **extra}


def test_it_adds_a_share_of_the_best_neighbour_found(spread_on):
    rows = {
        ("message", 1): message(1),
        ("message", 2): message(2, parent=1),
        ("message", 3): message(3, parent=2),
        ("message", 4): message(4, parent=2),  # another branch answering 2
        ("message", 9): message(9, parent=8),  # its parent was not found
        ("entry", 1): {"kind": "entry", "id": 1},  # same id as message 1: not a neighbour
    }
    relevance = {
        ("message", 1): 0.2,
        ("message", 2): 0.1,
        ("message", 3): 1.0,
        ("message", 4): 0.4,
        ("message", 9): 0.3,
        ("entry", 1): 0.7,
    }
    spread = neighbours_spread(relevance, rows)
    share = SHARE
    assert spread[("message", 1)] == pytest.approx(0.2 + share * 0.1)  # its reply
    assert spread[("message", 2)] == pytest.approx(0.1 + share * 1.0)  # the best of parent and replies
    assert spread[("message", 3)] == pytest.approx(1.0 + share * 0.1)
    assert spread[("message", 4)] == pytest.approx(0.4 + share * 0.1)
    assert spread[("message", 9)] == 0.3
    assert spread[("entry", 1)] == 0.7
    assert relevance[("message", 2)] == 0.1  # computed from the relevances before the spread


def test_the_factors_apply_after_the_spread(spread_on):
    rows = [
        {**message(1), "score": 2.0, "factor": 2.0},  # relevance 1.0
        {**message(2, parent=1), "score": 0.5, "factor": 0.5},  # relevance 1.0
    ]
    rows_spread(rows)
    share = SHARE
    assert rows[0]["score"] == pytest.approx((1.0 + share) * 2.0)
    assert rows[1]["score"] == pytest.approx((1.0 + share) * 0.5)


def test_fusion_spreads_a_turn_found_by_either_arm_to_its_neighbours(spread_on):
    lexical = [{**message(1), "score": 1.0, "factor": 1.0, "text": "question"}]
    semantic = [
        {**message(2, parent=1), "similarity": 0.9, "factor": 1.0, "text": "its answer"},
        {**message(3), "similarity": 0.9, "factor": 1.0, "text": "unrelated"},
        {**message(4), "similarity": 0.5, "factor": 1.0, "text": "the worst semantic hit"},
    ]
    fused = {row["id"]: row["score"] for row in fuse(lexical, semantic, method="minmax")}
    # 2 and 3 are equally similar; 2 also answers the lexical arm's best row
    assert fused[2] > fused[3]
    assert fused[2] == pytest.approx(0.5 * 1.0 + SHARE * 0.5)


def post(api, token, session, texts):
    messages = [{"role": ("user", "assistant")[i % 2], "text": text} for i, text in enumerate(texts)]
    response = api.post("/agents/agent-a/messages", {"session": session, "messages": messages}, token=token)
    assert response.status_code == 200


@pytest.mark.parametrize("mode", ["lexical", None])
def test_a_turn_whose_reply_answers_the_question_outranks_an_equal_match_elsewhere(
    api, token_a, settings, mode
):
    # Both "kayak" turns match the query by one word and are of the same length; only the first is
    # answered by a turn that holds the rest of the question.
    post(api, token_a, "holidays", ["I booked a kayak today", "A kayak tour down the Douro in Porto, lovely"])
    post(api, token_a, "shopping", ["I spotted a kayak today", "Nice, how much was it?"])
    booked = Message.objects.get(text="I booked a kayak today").pk
    spotted = Message.objects.get(text="I spotted a kayak today").pk
    params = {"q": "kayak Douro Porto", "kinds": "messages"} | ({"mode": mode} if mode else {})

    def ranked():
        results = api.get("/search", **params, token=token_a).json()["results"]
        return [r["id"] for r in results]

    without = ranked()  # off by default
    assert without.index(spotted) < without.index(booked)  # the newer one wins the tie
    settings.MEMORY_SEARCH_NEIGHBOUR_SHARE = SHARE
    found = ranked()
    assert found.index(booked) < found.index(spotted)


def test_it_is_off_by_default():
    relevance = {("message", 1): 1.0, ("message", 2): 0.1}
    rows = {("message", 1): message(1), ("message", 2): message(2, parent=1)}
    assert neighbours_spread(relevance, rows) == relevance
