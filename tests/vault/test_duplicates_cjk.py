"""Near duplicates of text written without spaces (vault/trust.py's word_set).

Chinese and Japanese were compared by their clauses (the parser's "words" run from one punctuation
mark to the next): a text of fewer than five clauses was never a near duplicate, and a decision
restated in other words was stored twice. Compared by character pairs, two different decisions that
share most of their characters (PostgreSQL or MySQL for the same database) score as high as a
restatement, so a pair comparison never drops an entry: it holds it for review, linked to the other.
Thai, Lao, Myanmar and Khmer lost their vowel and tone marks to the accent folding: texts that differ
in a mark only (ข้าว rice, ข่าว news) were exact duplicates, and the second was dropped."""

import pytest

from vault.models import VaultEntry

pytestmark = pytest.mark.django_db


def _create(api, token, content):
    return api.post("/agents/agent-a/entries", {"category": "decisions", "content": content}, token=token)


def test_a_chinese_decision_restated_waits_for_review_linked_to_the_first(api, token_a):
    first = _create(api, token_a, "数据库迁移在周五完成，需要先备份所有的用户表和订单表。").json()
    response = _create(api, token_a, "周五完成数据库迁移，需要先备份所有的用户表和订单表。")
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "pending"
    assert [(item["kind"], item["other_entry_id"]) for item in body["review"]] == [("duplicate", first["id"])]


def test_two_chinese_decisions_sharing_most_characters_are_both_kept(api, token_a):
    """92% of their pairs are shared: a word comparison would drop the second; it waits for review."""
    first = _create(api, token_a, "我们决定使用PostgreSQL作为主数据库，下周开始迁移用户表和订单表。").json()
    response = _create(api, token_a, "我们决定使用MySQL作为主数据库，下周开始迁移用户表和订单表。")
    assert response.status_code == 201
    body = response.json()
    assert body["id"] != first["id"] and body["status"] == "pending"
    assert [(item["kind"], item["other_entry_id"]) for item in body["review"]] == [("duplicate", first["id"])]
    assert VaultEntry.objects.count() == 2


def test_the_same_chinese_text_with_other_punctuation_is_still_the_same_entry(api, token_a):
    first = _create(api, token_a, "我们决定使用Redis作为会话缓存，明天部署到生产环境。").json()
    response = _create(api, token_a, "我们决定使用Redis作为会话缓存。明天部署到生产环境！")
    assert response.status_code == 200 and response.json()["duplicate_of"] == first["id"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("เราซื้อข้าวทุกวันจันทร์", "เราซื้อข่าวทุกวันจันทร์"),  # rice / news: a tone mark
        ("ຂ້ອຍກິນເຂົ້າທຸກມື້", "ຂ້ອຍກິນເຂົາທຸກມື້"),  # rice / him: a tone mark
    ],
    ids=["thai", "lao"],
)
def test_texts_that_differ_in_a_tone_mark_are_two_entries(api, token_a, first, second):
    _create(api, token_a, first)
    response = _create(api, token_a, second)
    assert response.status_code == 201
    assert VaultEntry.objects.count() == 2


def test_the_same_pairs_in_another_order_are_not_the_same_text(api, token_a):
    """Every pair shared (a similarity of 1.0), the two names swapped: the opposite decision."""
    first = _create(api, token_a, "我们决定使用PostgreSQL作为主数据库，不用MySQL。").json()
    response = _create(api, token_a, "我们决定使用MySQL作为主数据库，不用PostgreSQL。")
    assert response.status_code == 201
    assert response.json()["review"][0]["other_entry_id"] == first["id"]
