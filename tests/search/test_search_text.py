"""Identifiers, paths, hosts and addresses are searched by their words (vault/search_text.py).

Before, PostgreSQL's parser kept "src/worker/queue_runner.py" or "django.db.utils.IntegrityError" as one
lexeme, so a search for "queue_runner.py", "worker" or "IntegrityError" did not find the memory that
held them."""

import random

import pytest
from django.db import connection

from search.query import query_compile
from vault import services
from vault.search_text import search_text, stored_text

pytestmark = pytest.mark.django_db


def _sql_search_text(texts: list[str]) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT memory_search_text(t) FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n",
            [texts],
        )
        return [row[0] for row in cursor.fetchall()]


def test_the_python_rule_and_the_database_function_agree():
    """Queries are cut in Python, stored text in SQL: any difference would make a query miss its text."""
    fixed = [
        "src/worker/queue_runner.py",
        "django.db.utils.IntegrityError",
        "alice@example.com",
        "C:\\Users\\ana\\notes.txt",
        "https://wiki.example.com/ops/deploy-checklist?x=1",
        "End of a sentence. Next one.",
        "e.g. 3.14 and v2.4.1 at 10:30",
        "a..b .hidden trailing. café.py naïve.módulo _private.__init__",
        "我们决定使用Redis作为会话缓存。明天部署 猫",
        "セッションキャッシュにRedisを使う／세션 캐시에 Redis를 𠀋𠀌 ｶﾀｶﾅ 々",
        "เราตัดสินใจใช้Redisเป็นแคช ພາສາລາວ ភាសាខ្មែរ မြန်မာဘာသာ 猫ภา",
        "",
    ]
    rng = random.Random(20261126)
    alphabet = "aZ9_./\\@:- é\n'会话缓存をセ세션𠀋。ภาี่ພາភ្မြ"
    generated = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(3000)]
    texts = fixed + generated
    assert [stored_text(t) for t in texts] == _sql_search_text(texts)
    assert stored_text("src/worker/queue_runner.py") == "src worker queue_runner py"
    assert stored_text("End of a sentence. Next one.") == "End of a sentence. Next one."
    # The pairs where the run was, then the last character of each run longer than one.
    assert stored_text("使用Redis作为缓存。猫") == "使用 Redis 作为 为缓 缓存 。 猫 用 存"
    assert search_text("使用Redis作为缓存。猫") == "使用 Redis 作为 为缓 缓存 。 猫"
    assert stored_text("ใช้Redis") == "ใช ช้ Redis"


@pytest.mark.parametrize(
    "q",
    [
        "queue_runner.py",
        "queue_runner",
        "queue runner",
        "worker",
        "src/worker/queue_runner.py",
        '"queue_runner.py"',
    ],
)
def test_a_file_path_is_found_by_its_name_and_its_folders(api, agent_a, token_a, make_entry, q):
    wanted = make_entry(agent_a, "The retry bug was in src/worker/queue_runner.py, fixed with a backoff")
    make_entry(agent_a, "Coffee before the standup keeps the team awake")
    response = api.get("/search", token=token_a, q=q, mode="lexical", kinds="entries")
    assert response.status_code == 200, response.json()
    assert [r["id"] for r in response.json()["results"]] == [wanted.pk]


@pytest.mark.parametrize("q", ["IntegrityError", "utils.IntegrityError", "django.db.utils.IntegrityError"])
def test_a_dotted_name_is_found_by_its_last_part(api, agent_a, token_a, make_entry, q):
    wanted = make_entry(agent_a, "Catch django.db.utils.IntegrityError when two writers insert the same slug")
    response = api.get("/search", token=token_a, q=q, mode="lexical", kinds="entries")
    assert [r["id"] for r in response.json()["results"]] == [wanted.pk]


def test_a_dotted_query_is_a_phrase_of_its_parts_not_any_of_them(agent_a, make_entry):
    """`queue_runner.py` asks for those words in that order: a text holding them apart does not match."""
    from search.selectors import SearchFilters, SearchScope, search_run

    wanted = make_entry(agent_a, "Fixed in jobs/queue_runner.py")
    make_entry(agent_a, "The queue needs a runner written in py (not a path)")
    compiled = query_compile("queue_runner.py")
    assert "'queue' <-> 'runner' <-> 'py'" in compiled.terms[0].tsquery
    outcome = search_run(
        q="queue_runner.py",
        scope=SearchScope(agent_a.project_id, [agent_a.pk]),
        filters=SearchFilters(kinds=("entries",), mode="lexical"),
    )
    assert [r["id"] for r in outcome.results] == [wanted.pk]


def test_a_host_in_a_message_and_in_a_workspace_file_is_found_by_its_words(
    api, agent_a, token_a, make_message
):
    message = make_message(agent_a, "The runbook is at https://wiki.example.com/ops/deploy-checklist now")
    services.file_write(
        agent=agent_a, path="notes/hosts.md", content="Primary: db1.internal.example.net\n", changed_by="t"
    )
    services.file_append(
        agent=agent_a, path="notes/hosts.md", text="Replica: db2.replica.example.net\n", changed_by="t"
    )
    found = api.get("/search", token=token_a, q="deploy-checklist", mode="lexical", kinds="messages").json()
    assert [r["id"] for r in found["results"]] == [message.pk]
    for q in ("internal", "replica", "db2.replica"):
        results = api.get("/search", token=token_a, q=q, mode="lexical", kinds="files").json()["results"]
        assert [r["path"] for r in results] == ["notes/hosts.md"], q
    # The file's folder and name are words of its path too.
    results = api.get("/search", token=token_a, q="hosts", mode="lexical", kinds="files").json()["results"]
    assert [r["path"] for r in results] == ["notes/hosts.md"]


def test_the_parts_of_a_name_reach_the_typo_vocabulary(api, agent_a, token_a, make_entry):
    wanted = make_entry(agent_a, "Catch django.db.utils.IntegrityError on duplicate slugs")
    for q in ("IntegrityEror", "Integrity"):  # a typo; a prefix of the part
        response = api.get("/search", token=token_a, q=q, mode="lexical", kinds="entries")
        assert [r["id"] for r in response.json()["results"]] == [wanted.pk], q
