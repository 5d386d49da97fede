"""Exact duplicates are the same words as written, not the same words once accents are folded.

The content hash was taken of the text with its case, accents and compatibility forms folded, so
texts that differ in a mark that changes the word (Vietnamese tones, Greek accents, ñ, ß, Polish ż,
Czech ý, Yoruba tones, a superscript digit) were the same text and the second write was dropped,
the first one bumped in its place. The vowel signs of Hindi were not letters to the word parser
either, so दिन (day) and दान (donation) were both "द न". Long texts that differ in such a mark only
were near duplicates scoring 1.0 on their folded words and were dropped too: they now wait for
review next to the other. The folding still serves what it was for: "nao" typed for "não"."""

import pytest

from vault.models import EntryStatus, VaultEntry

pytestmark = pytest.mark.django_db

VIETNAMESE_SELL = "Chúng tôi sẽ bán căn nhà ở Hà Nội cho gia đình anh Minh vào tháng sau"
VIETNAMESE_FRIEND = "Chúng tôi sẽ bạn căn nhà ở Hà Nội cho gia đình anh Minh vào tháng sau"


def _create(api, token, content):
    return api.post("/agents/agent-a/entries", {"category": "decisions", "content": content}, token=token)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Lan là bạn tôi", "Lan là bán tôi"),  # friend / sell
        ("Πότε φεύγουμε;", "Ποτέ φεύγουμε"),  # when / never
        ("Cada año", "Cada ano"),  # year / anus
        ("Maße prüfen", "Masse prüfen"),  # dimensions / mass (casefold made ß "ss")
        ("Das ist schön", "Das ist schon"),  # beautiful / already
        ("Moja żona", "Moja zona"),  # wife / zone
        ("Chci byt", "Chci být"),  # a flat / to be
        ("Vreau pește", "Vreau peste"),  # fish / over
        ("Saç boyası", "Sac boyası"),  # hair / sheet metal
        ("Ọkọ̀ mi", "Ọkọ mi"),  # my vehicle / my husband
        ("Мой дом", "Мои дом"),  # my (one) / my (many)
        ("एक दिन", "एक दान"),  # a day / a donation
        ("Limit 10² requests", "Limit 102 requests"),  # a hundred / a hundred and two
    ],
    ids=[
        "vietnamese",
        "greek",
        "spanish",
        "german-eszett",
        "german-umlaut",
        "polish",
        "czech",
        "romanian",
        "turkish",
        "yoruba",
        "russian",
        "hindi",
        "superscript",
    ],
)
def test_texts_that_differ_in_a_mark_that_changes_a_word_are_two_entries(api, token_a, first, second):
    first_id = _create(api, token_a, first).json()["id"]
    response = _create(api, token_a, second)
    assert response.status_code == 201, response.json()
    assert response.json()["id"] != first_id
    assert sorted(VaultEntry.objects.values_list("content", flat=True)) == sorted([first, second])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Decidimos não usar Redis", "decidimos nao\u0303 usar redis".replace("nao\u0303", "na\u0303o")),
        ("Use Redis for sessions!", "use redis, for   sessions"),
        ("ＡＰＩ key rotated monthly", "API key rotated monthly"),
    ],
    ids=["composed-and-decomposed-accent", "case-and-punctuation", "full-width"],
)
def test_the_same_words_written_otherwise_are_still_one_entry(api, token_a, first, second):
    first_id = _create(api, token_a, first).json()["id"]
    response = _create(api, token_a, second)
    assert response.status_code == 200 and response.json()["duplicate_of"] == first_id
    assert VaultEntry.objects.count() == 1


def test_a_long_text_that_differs_in_tone_marks_only_waits_for_review(api, token_a):
    """Twelve words folded alike (a similarity of 1.0): held for review, linked to the first."""
    first = _create(
        api, token_a, "Chúng tôi sẽ bán căn nhà ở Hà Nội cho gia đình anh Minh vào tháng sau"
    ).json()
    response = _create(api, token_a, "Chúng tôi sẽ bạn căn nhà ở Hà Nội cho gia đình anh Minh vào tháng sau")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == EntryStatus.PENDING.value
    assert [(item["kind"], item["other_entry_id"]) for item in body["review"]] == [("duplicate", first["id"])]
    assert VaultEntry.objects.count() == 2


def test_a_negation_typed_without_its_accent_is_still_a_duplicate(api, token_a):
    first = _create(api, token_a, "Decidimos não usar Redis para o cache das filas de trabalho").json()
    response = _create(api, token_a, "Decidimos nao usar Redis para o cache das filas de trabalho")
    assert response.status_code == 200 and response.json()["duplicate_of"] == first["id"]


def test_a_decision_found_at_sleep_that_differs_in_a_mark_is_not_skipped(api, token_a, agent_a):
    """insights_store skipped a session's decision whose folded text (vault.text.normalise_fact) was an
    entry's: Maße (dimensions) and Masse (mass) were the same decision, and the second was never stored."""
    _create(api, token_a, "We decided to check the Maße of every crate before loading.")
    conversation = [{"role": "agent", "text": "We decided to check the Masse of every crate before loading."}]
    save = {"agentId": "agent-a", "savedAt": "2026-03-15T23:04:23.463Z", "messages": conversation}
    assert api.post("/agents/agent-a/messages", save, token=token_a).status_code == 200
    slept = api.post("/agents/agent-a/sleep", {"messages": conversation}, token=token_a).json()
    assert [d["content"] for d in slept["decisions"]] == [conversation[0]["text"]]
    contents = VaultEntry.objects.filter(category="decisions").values_list("content", flat=True)
    assert sorted(contents) == sorted(
        [conversation[0]["text"], "We decided to check the Maße of every crate before loading."]
    )


def test_merging_a_pending_text_that_differs_in_tone_marks_keeps_its_text(api, admin_token, token_a):
    """The merge appended the pending text unless its folded text was in the target's: bạn (friend)
    "was" bán (sell), so the target stayed as it was and the pending statement was gone from it."""
    target = _create(api, token_a, VIETNAMESE_SELL).json()
    pending = _create(api, token_a, VIETNAMESE_FRIEND).json()
    assert pending["status"] == EntryStatus.PENDING.value
    body = api.post(f"/review/{pending['id']}/merge", {"into": target["id"]}, token=admin_token).json()
    assert body["id"] == target["id"]
    assert VIETNAMESE_SELL in body["content"] and VIETNAMESE_FRIEND in body["content"]


def test_merging_a_pending_text_the_target_holds_as_written_leaves_the_target(api, admin_token, token_a):
    target = _create(api, token_a, "Hôm qua: " + VIETNAMESE_SELL).json()
    pending = _create(api, token_a, VIETNAMESE_SELL + "!").json()
    assert pending["status"] == EntryStatus.PENDING.value
    body = api.post(f"/review/{pending['id']}/merge", {"into": target["id"]}, token=admin_token).json()
    assert body["content"] == target["content"]
