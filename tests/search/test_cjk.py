"""Chinese, Japanese and Korean memories are found by the words they hold (vault/search_text.py).

Before, PostgreSQL's parser kept a run of CJK characters as one lexeme: "我们决定使用Redis作为会话缓存"
was a single word, so neither "会话缓存" (session cache) nor even "Redis" found the decision."""

import pytest
from django.db import connection

from sessions_app import services as session_services
from sessions_app.models import Message

pytestmark = pytest.mark.django_db

DECISION_ZH = "我们决定使用Redis作为会话缓存，明天部署到生产环境。"
OTHER_ZH = "数据库迁移在周五完成，需要先备份。"
DECISION_JA = "セッションキャッシュにはRedisを使うことに決めた。"
OTHER_JA = "金曜日にデータベースの移行を終えた。"
DECISION_KO = "세션 캐시에 Redis를 사용하기로 결정했다"
OTHER_KO = "금요일에 데이터베이스 이전을 마쳤다"


def _found(api, token, q, kinds="entries", **params):
    response = api.get("/search", token=token, q=q, mode="lexical", kinds=kinds, limit=10, **params)
    assert response.status_code == 200, response.json()
    return [r["id"] for r in response.json()["results"]]


@pytest.mark.parametrize(
    ("decision", "other", "queries"),
    [
        (DECISION_ZH, OTHER_ZH, ["会话缓存", "缓存", "Redis", "我们用什么做会话缓存？", "生产环境"]),
        (DECISION_JA, OTHER_JA, ["セッションキャッシュ", "キャッシュ", "Redis", "キャッシュは何を使う？"]),
        (DECISION_KO, OTHER_KO, ["세션 캐시", "캐시", "Redis", "캐시는 무엇을 사용하나"]),
    ],
    ids=["chinese", "japanese", "korean"],
)
def test_a_cjk_memory_is_found_by_a_word_inside_it_and_by_a_question(
    api, agent_a, token_a, make_entry, decision, other, queries
):
    wanted = make_entry(agent_a, decision)
    make_entry(agent_a, other)
    make_entry(agent_a, "The deploy runbook lives in the ops wiki")
    for q in queries:
        assert _found(api, token_a, q)[:1] == [wanted.pk], q


def test_the_question_ranks_the_memory_that_shares_the_most_pairs_first(api, agent_a, token_a, make_entry):
    make_entry(agent_a, "我们讨论了缓存的过期时间。")  # shares only 缓存
    wanted = make_entry(agent_a, DECISION_ZH)
    make_entry(agent_a, "会议在明天。")  # shares only 明天
    found = _found(api, token_a, "会话缓存用什么？")
    assert found[0] == wanted.pk
    assert len(found) == 2  # 明天 is not asked


def test_a_quoted_cjk_phrase_asks_for_its_characters_in_that_order(api, agent_a, token_a, make_entry):
    wanted = make_entry(agent_a, DECISION_ZH)
    apart = make_entry(agent_a, "缓存会话的数据")  # the same characters, another order
    found = _found(api, token_a, "会话缓存")
    assert found[0] == wanted.pk and apart.pk in found  # two of the three pairs: found, below
    assert _found(api, token_a, '"会话缓存"') == [wanted.pk]
    assert _found(api, token_a, "缓存 -会话缓存") == []


def test_a_cjk_message_is_found_in_a_conversation(api, token_a):
    messages = [
        {"role": "user", "text": "会话缓存应该用什么？"},
        {"role": "assistant", "text": "用Redis，因为我们已经在用它做队列。"},
        {"role": "user", "text": "好的，明天部署。"},
    ]
    response = api.post("/agents/agent-a/messages", {"session": "s1", "messages": messages}, token=token_a)
    assert response.status_code == 200, response.json()
    found = _found(api, token_a, "队列", kinds="messages")
    # then the reply to it, by the turn it answers (test_bm25)
    assert [Message.objects.get(pk=pk).text for pk in found] == [
        "用Redis，因为我们已经在用它做队列。",
        "好的，明天部署。",
    ]
    found = _found(api, token_a, "Redis", kinds="messages")
    assert Message.objects.get(pk=found[0]).text == "用Redis，因为我们已经在用它做队列。"


def test_a_long_cjk_text_for_the_context_is_cut_to_the_words_limit(api, agent_a, token_a, make_entry):
    """A context command is searched by its first distinct words: a long Chinese task counts its pairs,
    so the search it makes is never refused as too many words."""
    from search.query import MAX_WORDS, query_compile, text_query

    task = "请检查会话缓存的配置并且确认生产环境的部署计划是否已经完成以及数据库迁移的备份是否可用" * 2
    q = text_query(task)
    assert q and len(q.split()) <= MAX_WORDS
    query_compile(q)  # accepted
    make_entry(agent_a, DECISION_ZH)
    response = api.post("/agents/agent-a/context", {"command": task, "budget_tokens": 2000}, token=token_a)
    assert response.status_code == 200, response.json()
    assert DECISION_ZH in response.json()["text"]


def test_a_stored_vector_holds_the_pairs_and_the_latin_word_apart(agent_a, make_entry):
    entry = make_entry(agent_a, "使用Redis作为缓存")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT array(SELECT lexeme FROM unnest(search_vector) WHERE lexeme NOT LIKE '#%%' ORDER BY 1)"
            " FROM vault_vaultentry WHERE id = %s",
            [entry.pk],
        )
        lexemes = set(cursor.fetchone()[0])
    assert {"使用", "作为", "为缓", "缓存", "redi"} <= lexemes  # "redis", stemmed
    assert not any(len(lexeme) > 2 and lexeme[0] >= "\u3000" for lexeme in lexemes), lexemes


@pytest.mark.parametrize(
    ("text", "q"),
    [
        ("我养了一只猫，它每天睡十个小时。", "猫"),  # the last character of its run
        ("猫粮放在厨房的柜子里。", "猫"),  # the first
        ("服务器机房的冷却水管漏了。", "水"),
        ("ドキュメントは日本語で書く。", "語"),
        ("이 문서는 집에서 썼다", "집"),  # a Korean word of one syllable, alone
    ],
)
def test_a_one_character_query_finds_the_memories_holding_that_character(
    api, agent_a, token_a, make_entry, text, q
):
    wanted = make_entry(agent_a, text)
    make_entry(agent_a, OTHER_ZH)
    make_entry(agent_a, "The deploy runbook lives in the ops wiki")
    assert _found(api, token_a, q) == [wanted.pk]


def test_the_single_characters_do_not_make_a_quoted_phrase_match_across_runs(
    api, agent_a, token_a, make_entry
):
    wanted = make_entry(agent_a, DECISION_ZH)
    assert _found(api, token_a, '"会话缓存"') == [wanted.pk]
    assert _found(api, token_a, '"使用Redis"') == [wanted.pk]
    assert _found(api, token_a, '"会缓"') == []  # both single characters are stored, not next to each other


THAI = "เราตัดสินใจใช้Redisเป็นแคชของเซสชัน"  # we decided to use Redis as the session cache
LAO = "ພວກເຮົາຕັດສິນໃຈໃຊ້ຖານຂໍ້ມູນໃໝ່"  # we decided to use a new database
KHMER = "យើងសម្រេចចិត្តប្រើឃ្លាំងសម្ងាត់"  # we decided to use the cache
MYANMAR = "ကျွန်ုပ်တို့သည်ဒေတာဘေ့စ်အသစ်ကိုသုံးရန်ဆုံးဖြတ်ခဲ့သည်"  # we decided to use a new database


@pytest.mark.parametrize(
    ("text", "queries"),
    [
        (THAI, ["แคช", "เซสชัน", "Redis", "ตัดสินใจ"]),
        (LAO, ["ຖານຂໍ້ມູນ", "ຕັດສິນໃຈ"]),
        (KHMER, ["ឃ្លាំងសម្ងាត់", "សម្រេចចិត្ត"]),
        (MYANMAR, ["ဒေတာဘေ့စ်", "ဆုံးဖြတ်"]),
    ],
    ids=["thai", "lao", "khmer", "myanmar"],
)
def test_a_memory_in_a_script_without_spaces_is_found_by_a_word_inside_it(
    api, agent_a, token_a, make_entry, text, queries
):
    wanted = make_entry(agent_a, text)
    make_entry(agent_a, OTHER_ZH)
    make_entry(agent_a, "The deploy runbook lives in the ops wiki")
    for q in queries:
        assert _found(api, token_a, q) == [wanted.pk], q
        assert _found(api, token_a, f'"{q}"') == [wanted.pk], q


@pytest.mark.parametrize("q", ['"キャッシュ"', '"使用Redis"', '"会话缓存abc"'])
def test_a_quoted_cjk_word_of_five_characters_or_more_is_searched_not_refused(
    api, agent_a, token_a, make_entry, q
):
    """It was looked up for typo neighbours by the text as typed, not as cut: a 500."""
    wanted = make_entry(agent_a, "セッションキャッシュには使用Redis会话缓存abcを使う")
    assert _found(api, token_a, q) == [wanted.pk]


def _snippets(api, token, q):
    response = api.get("/search", token=token, q=q, mode="lexical", kinds="entries", limit=10)
    assert response.status_code == 200, response.json()
    return [r["snippet"] for r in response.json()["results"]]


def test_a_cjk_snippet_marks_the_words_and_keeps_a_deep_match(api, agent_a, token_a, make_entry):
    """The snippet marked nothing inside a run of CJK characters (a mark needed a non-letter before it),
    and so started at the text's start, leaving out a match past its first 120 characters."""
    make_entry(agent_a, DECISION_ZH)
    long = make_entry(agent_a, "前面的说明" * 60 + "部署密钥在保险库里" + "后面" * 100)
    assert _snippets(api, token_a, "会话缓存") == ["我们决定使用Redis作为**会话缓存**，明天部署到生产环境。"]
    assert _snippets(api, token_a, "Redis") == ["我们决定使用**Redis**作为会话缓存，明天部署到生产环境。"]
    found = api.get("/search", token=token_a, q="部署密钥", mode="lexical", kinds="entries").json()["results"]
    snippet = next(r["snippet"] for r in found if r["id"] == long.pk)
    assert "**部署密钥**" in snippet and snippet.startswith("…")


def test_an_archived_cjk_message_is_found(api, agent_a, token_a):
    """An archived session's messages are matched in Python by the query's patterns: a pattern needed a
    non-letter before it, so a word inside a run of CJK characters (and Redis in 用Redis) found nothing."""
    result = session_services.messages_append(
        agent=agent_a, session_key="cold", messages=[{"role": "user", "text": DECISION_ZH}]
    )
    session_services.session_archive(session=result.session)
    for q in ("会话缓存", "Redis", "我们用什么做会话缓存？"):
        found = api.get("/search", token=token_a, q=q, kinds="messages", status="archived").json()["results"]
        assert [r["snippet"].replace("**", "") for r in found] == [DECISION_ZH], q
        assert "**" in found[0]["snippet"], q


def test_a_word_inside_a_thai_run_is_marked_and_an_archived_thai_message_found(
    api, agent_a, token_a, make_entry
):
    """Thai, Lao, Myanmar and Khmer are searched by pairs as CJK is, but the Python matching of snippets
    and archived messages still wanted a non-letter before a word: nothing was marked inside a Thai run,
    and an archived Thai message was never found by a word inside it."""
    make_entry(agent_a, THAI)
    assert _snippets(api, token_a, "แคช") == [THAI.replace("แคช", "**แคช**")]
    result = session_services.messages_append(
        agent=agent_a, session_key="cold-th", messages=[{"role": "user", "text": THAI}]
    )
    session_services.session_archive(session=result.session)
    found = api.get("/search", token=token_a, q="แคช", kinds="messages", status="archived").json()["results"]
    assert [r["snippet"] for r in found] == [THAI.replace("แคช", "**แคช**")]
