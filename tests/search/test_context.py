import pytest

from search.models import ContextBuild
from vault import services
from vault.models import VaultEntry
from vault.selectors import workspace_prompt_build
from vault.text import token_estimate

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(agent_a, make_entry):
    """A realistic memory: handoff, decisions, lessons, tasks, workspace files."""
    made = {
        "handoff": make_entry(
            agent_a, "Last time we migrated the ledger to PostgreSQL 16.", category="handoffs"
        ),
        "decisions": [
            make_entry(agent_a, f"Decided the ledger uses PostgreSQL option {i} " + "detail " * 40)
            for i in range(4)
        ],
        "lessons": [
            make_entry(
                agent_a, f"Learned the ledger PostgreSQL lesson {i} " + "detail " * 40, category="lessons"
            )
            for i in range(3)
        ],
        "tasks": make_entry(
            agent_a, "- [ ] write the ledger report\n- [x] done thing\n- [ ] rotate keys", category="tasks"
        ),
    }
    services.file_write(
        agent=agent_a,
        path="AGENTS.md",
        content="You are the ledger agent.",
        changed_by="t",
        enabled=True,
        sort_order=1,
    )
    services.file_write(
        agent=agent_a, path="SOUL.md", content="Be careful.", changed_by="t", enabled=True, sort_order=2
    )
    services.file_write(agent=agent_a, path="memory/2026-01-01.md", content="daily", changed_by="t")
    return made


def build(api, token, agent="agent-a", **body):
    return api.post(
        f"/agents/{agent}/context", {"command": "work on the PostgreSQL ledger", **body}, token=token
    )


def test_it_builds_every_section_with_seed_headings(api, token_a, memory):
    response = build(api, token_a, budget_tokens=8000)
    assert response.status_code == 200, response.content
    body = response.json()
    text = body["text"]
    assert text.startswith("## MEMORY CONTEXT")
    for heading in ["Project:", "Last Session:", "Relevant Decisions:", "Relevant Lessons:", "Open Tasks:"]:
        assert heading in text
    assert "Payments platform." in text
    assert (
        "- [ ] write the ledger report" in text and "- [ ] rotate keys" in text and "done thing" not in text
    )
    assert "--- AGENTS.md ---\nYou are the ledger agent." in text
    assert text.index("AGENTS.md") < text.index("SOUL.md")
    assert "daily" not in text
    assert "## MEMORY: When asked to save/learn/remember" in text
    assert body["sections"]["decisions"]["included"] == 3
    assert body["sections"]["lessons"]["included"] == 2
    assert body["token_estimate"] == token_estimate(text) <= 8000
    assert body["warnings"] == []


def test_it_cites_entries_and_counts_access(api, token_a, memory):
    body = build(api, token_a, budget_tokens=8000).json()
    cited = set(body["cited"])
    assert memory["handoff"].pk in cited and memory["tasks"].pk in cited
    assert len(cited & {e.pk for e in memory["decisions"]}) == 3
    for entry in VaultEntry.objects.filter(pk__in=cited):
        assert entry.access_count == 1 and entry.last_accessed_at is not None
    uncited = VaultEntry.objects.exclude(pk__in=cited).filter(agent__slug="agent-a")
    assert all(e.access_count == 0 for e in uncited)
    record = ContextBuild.objects.get()
    assert sorted(record.entry_ids) == sorted(cited) and record.command == "work on the PostgreSQL ledger"
    build(api, token_a, budget_tokens=8000)
    assert VaultEntry.objects.get(pk=memory["handoff"].pk).access_count == 2


@pytest.mark.parametrize(
    "budget", [200, 300, 400, 500, 600, 800, 1000, 1200, 1500, 2000, 3000, 4000, 6000, 8000]
)
def test_text_never_exceeds_the_budget(api, token_a, memory, budget):
    body = build(api, token_a, budget_tokens=budget).json()
    assert token_estimate(body["text"]) <= budget
    assert body["token_estimate"] <= budget
    cited = set(body["cited"])
    for entry in VaultEntry.objects.filter(pk__in=cited):
        assert entry.content.split()[0] in body["text"]


def test_it_drops_lessons_then_decisions_then_tasks_then_handoff(api, token_a, memory):
    full = build(api, token_a, budget_tokens=8000).json()["token_estimate"]
    seen = []
    for budget in [*range(full, 150, -20), *range(150, 49, -5)]:
        sections = build(api, token_a, budget_tokens=budget).json()["sections"]
        state = (
            sections["lessons"]["included"],
            sections["decisions"]["included"],
            sections["handoff"]["included"],
        )
        seen.append(state)
        if state[1] or sections["tasks"]["included"]:
            assert state[2] == 1  # the handoff outlives every decision and every task
        if state[0]:
            assert state[1] == 3  # decisions stay whole while any lesson is left
    assert (2, 3, 1) in seen and (0, 3, 1) in seen and (0, 0, 1) in seen and (0, 0, 0) in seen


def test_default_budget_is_2000(api, token_a, agent_a, make_entry):
    for _ in range(40):
        make_entry(agent_a, "- [ ] task " + "x" * 300, category="tasks")
    body = build(api, token_a).json()
    assert body["budget_tokens"] == 2000
    assert body["token_estimate"] <= 2000


def test_it_uses_the_recovery_snapshot_when_a_checkpoint_exists(api, token_a, memory, monkeypatch):
    from search import services as search_services

    messages = [{"role": "user", "text": f"message {i}"} for i in range(5)]
    monkeypatch.setattr(search_services, "checkpoint_messages", lambda agent: messages)
    text = build(api, token_a, budget_tokens=8000).json()["text"]
    assert "Recovering previous session:" in text
    assert "[user]: message 4" in text and "[user]: message 2" in text and "message 1" not in text


def test_without_a_checkpoint_there_is_no_recovery_section(api, token_a, memory):
    assert "Recovering previous session" not in build(api, token_a, budget_tokens=8000).json()["text"]


def test_a_failing_section_is_reported_not_fatal(api, token_a, memory, monkeypatch):
    from search import services as search_services

    def broken(agent, max_chars=None):
        raise RuntimeError("boom")

    monkeypatch.setattr(search_services, "_tasks", broken)
    body = build(api, token_a, budget_tokens=8000).json()
    assert body["warnings"][0]["section"] == "tasks" and "boom" in body["warnings"][0]["detail"]
    assert "Relevant Decisions:" in body["text"]


def test_an_empty_or_stopword_command_falls_back_to_newest(api, token_a, memory):
    for command in ["", "the and of"]:
        body = build(api, token_a, command=command, budget_tokens=8000).json()
        assert body["sections"]["decisions"]["included"] == 3


@pytest.mark.parametrize(
    "body", [{"budget_tokens": 10}, {"budget_tokens": "lots"}, {"command": 5}, {"budget_tokens": 10**9}]
)
def test_it_rejects_bad_input(api, token_a, agent_a, body):
    response = api.post("/agents/agent-a/context", body, token=token_a)
    assert response.status_code in (400, 422)
    assert response.json()["detail"]


def test_tenancy(api, memory, token_b, admin_token, outsider_token, read_token_a):
    assert build(api, token_b).status_code == 404
    assert build(api, admin_token).status_code == 200
    assert build(api, read_token_a).status_code == 200
    assert build(api, None).status_code == 401
    assert build(api, admin_token, agent="nobody").status_code == 404


def test_outsider_gets_its_own_agent_not_ours(api, memory, outsider_token):
    response = build(api, outsider_token, budget_tokens=8000)
    assert response.status_code == 200
    body = response.json()
    assert body["cited"] == []
    assert "Payments platform" not in body["text"] and "ledger" not in body["text"].lower()


def test_workspace_prompt_build_orders_and_skips(agent_a):
    defaults = workspace_prompt_build(agent_a)
    assert defaults.startswith("--- AGENTS.md ---") and "--- MEMORY.md ---" in defaults
    agent_a.files.update(enabled=False)
    services.file_write(agent=agent_a, path="B.md", content="bee", changed_by="t", enabled=True, sort_order=5)
    services.file_write(agent=agent_a, path="A.md", content="ay", changed_by="t", enabled=True, sort_order=5)
    services.file_write(agent=agent_a, path="Z.md", content="zed", changed_by="t", enabled=True, sort_order=1)
    services.file_write(agent=agent_a, path="off.md", content="off", changed_by="t", enabled=False)
    assert workspace_prompt_build(agent_a) == "--- Z.md ---\nzed\n\n--- A.md ---\nay\n\n--- B.md ---\nbee"


@pytest.mark.parametrize("budget", [200, 300, 450, 600])
def test_a_text_cut_inside_a_code_fence_closes_the_fence(agent_a, budget):
    """The workspace and project texts were cut anywhere: cut inside a ``` block, they left it open, and
    everything after it (the instructions) reached the model as code."""
    from search.services import context_build

    agent_a.files.update(enabled=False)
    agent_a.project.context = "The ledger:\n~~~sql\n" + "SELECT 1;\n" * 300 + "~~~\nend"
    agent_a.project.save()
    services.file_write(agent=agent_a, path="AGENTS.md", content="Run it:\n```python\n" + "print(1)\n" * 300
                        + "```\nafter", changed_by="t", enabled=True, sort_order=1)  # fmt: skip
    body = context_build(agent=agent_a, command="ledger", budget_tokens=budget)
    text = body["text"]
    assert token_estimate(text) <= budget
    for fence in ("```", "~~~"):
        lines = [line for line in text.splitlines() if line.startswith(fence)]
        assert len(lines) % 2 == 0, (fence, text)
    assert "\n---\n## MEMORY: When asked" in text


@pytest.mark.parametrize("budget", [120, 300, 800, 2000])
def test_a_budget_holds_cjk_and_emoji_memory_by_its_bytes(agent_a, make_entry, budget):
    """Tokens were counted at four characters each, so a context of CJK memory held four characters a
    token, three times what a tokenizer would count; the cut must not split a character either."""
    from search.services import context_build

    agent_a.project.context = "支付平台。" * 400
    agent_a.project.save()
    services.file_write(agent=agent_a, path="AGENTS.md", content="你是账本代理。🙂" * 500, changed_by="t",
                        enabled=True, sort_order=1)  # fmt: skip
    make_entry(agent_a, "上次我们把账本迁移到了数据库。" * 40, category="handoffs")
    for i in range(4):
        make_entry(agent_a, f"我们决定账本使用数据库 {i} " + "细节" * 150)
        make_entry(agent_a, f"我们学到账本数据库教训 {i} " + "细节" * 150, category="lessons")
        make_entry(agent_a, f"- [ ] 写账本报告 {i} 🚀" + "细节" * 100, category="tasks")
    body = context_build(agent=agent_a, command="账本数据库", budget_tokens=budget)
    assert len(body["text"].encode("utf-8")) <= budget * 4
    assert body["token_estimate"] == token_estimate(body["text"]) <= budget
    assert "\ufffd" not in body["text"]


def test_open_tasks_are_the_ones_the_vault_page_shows_as_open(agent_a, make_entry):
    """The context read open tasks by its own pattern, "- [ ]" or "* [ ]" anywhere: numbered and "+"
    tasks, which the vault page ticks, were never injected, and an example inside a code block was."""
    from search.services import context_build

    entry = make_entry(agent_a, "1. [ ] migrate the ledger\n2) [x] done\n+ [ ] rotate the keys\n"
                       "```md\n- [ ] an example, not a task\n```\n* [ ] ship it", category="tasks")  # fmt: skip
    text = context_build(agent=agent_a, command="ledger", budget_tokens=2000)["text"]
    tasks = text.split("Open Tasks:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert tasks == [
        f"- [ ] migrate the ledger (#{entry.pk})",
        f"- [ ] rotate the keys (#{entry.pk})",
        f"- [ ] ship it (#{entry.pk})",
    ]


def test_a_failing_relevance_query_reports_both_ranked_sections(api, token_a, memory, monkeypatch):
    from search import services as search_services

    def broken(agent, **kwargs):
        raise RuntimeError("ranking down")

    monkeypatch.setattr(search_services, "entries_best_by_category", broken)
    body = build(api, token_a, budget_tokens=8000).json()
    assert [w["section"] for w in body["warnings"]] == ["decisions", "lessons"]
    assert "Relevant Decisions:" not in body["text"] and "Open Tasks:" in body["text"]
    assert "write the ledger report" in body["text"]


def test_ranked_sections_take_the_best_of_each_category_in_one_query(agent_a, make_entry):
    from search.query import query_compile
    from search.selectors import entries_best_by_category

    decisions = [make_entry(agent_a, f"ledger decision number {i}") for i in range(5)]
    lessons = [make_entry(agent_a, f"ledger lesson number {i}", category="lessons") for i in range(4)]
    make_entry(agent_a, "ledger task", category="tasks")
    make_entry(agent_a, "unrelated decision about fonts")
    best = entries_best_by_category(
        agent_a, compiled=query_compile("ledger"), limits={"decisions": 3, "lessons": 2}
    )
    assert set(best) == {"decisions", "lessons"}
    assert len(best["decisions"]) == 3 and len(best["lessons"]) == 2
    assert {row["id"] for row in best["decisions"]} <= {e.pk for e in decisions}
    assert {row["id"] for row in best["lessons"]} <= {e.pk for e in lessons}
    # best first: equal text relevance, so the newest wins
    assert [row["id"] for row in best["decisions"]] == [e.pk for e in decisions[::-1][:3]]
    scores = [row["score"] for row in best["decisions"]]
    assert scores == sorted(scores, reverse=True)


def test_open_tasks_are_read_a_page_at_a_time_and_only_as_far_as_the_budget_needs(agent_a):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from search import services as search_services

    same_time = timezone.now()  # equal timestamps: the id breaks ties between pages
    _tasks_store(agent_a, [f"- [ ] task number {i}\n- [x] closed {i}" for i in range(250)], same_time)
    everything = search_services._tasks(agent_a)
    texts = [item.text for item in everything]
    assert len(texts) == 250 and len(set(texts)) == 250  # three pages, nothing twice, nothing lost
    assert texts[0] == "task number 249"  # newest first
    with CaptureQueriesContext(connection) as queries:
        some = search_services._tasks(agent_a, max_chars=400)
    assert len(queries) == 1 and 10 <= len(some) <= search_services.TASK_PAGE
    assert [item.text for item in some] == texts[: len(some)]


@pytest.mark.parametrize("budget", [300, 900, 2000])
def test_reading_open_tasks_only_as_far_as_the_budget_needs_changes_no_text(agent_a, make_entry, budget):
    """Reading stops within the first page once the tasks alone overflow what the block's opening, the
    project context and the instructions leave: the text is the one every task read would give."""
    from django.db import transaction
    from django.utils import timezone

    from search import services as search_services

    agent_a.project.context = "The ledger project. " * 30
    agent_a.project.save()
    make_entry(agent_a, "Last time we migrated the ledger. " * 30, category="handoffs")
    make_entry(agent_a, "Decided the ledger uses PostgreSQL. " * 5)
    _tasks_store(agent_a, [f"- [ ] task {i} " + "step " * (i % 7) + f"\n- [ ] also {i}" for i in range(150)],
                 timezone.now())  # fmt: skip
    read_every_task = search_services._tasks

    def build_rolled_back(**patches):
        with transaction.atomic(), pytest.MonkeyPatch.context() as patch:  # the same access counts each time
            for name, value in patches.items():
                patch.setattr(search_services, name, value)
            body = search_services.context_build(agent=agent_a, command="ledger", budget_tokens=budget)
            transaction.set_rollback(True)
        return body

    built = [
        build_rolled_back(),
        build_rolled_back(_tasks=lambda agent, max_chars=None: read_every_task(agent)),
    ]
    assert built[0]["text"] == built[1]["text"] and built[0]["cited"] == built[1]["cited"]
    assert built[0]["sections"]["tasks"]["dropped"] < built[1]["sections"]["tasks"]["dropped"]


def test_fitting_to_the_budget_renders_each_item_once_not_once_per_cut(agent_a, monkeypatch):
    """Each cut re-rendered the whole block, every one of its items again: a context of the benchmark's
    (about 250 open task lines, eight renderings) spent 4.9 ms of CPU fitting itself to its budget."""
    from django.utils import timezone

    from search import services as search_services

    now = timezone.now()
    _tasks_store(agent_a, [f"- [ ] task {i}" for i in range(100)], now)
    rendered = []
    original = search_services._fence_open
    monkeypatch.setattr(search_services, "_fence_open", lambda text: rendered.append(text) or original(text))
    body = search_services.context_build(agent=agent_a, command="task", budget_tokens=300)
    assert body["token_estimate"] <= 300 and body["sections"]["tasks"]["dropped"] > 0
    tasks = len(search_services._tasks(agent_a, 300 * 4))
    assert len(rendered) <= tasks + 20, (len(rendered), tasks)  # one cut may render its item again


LONG_COMMAND = (
    "You are picking up the work of the previous session on the shared infrastructure repository. "
    "Please read the notes carefully before you change anything, run the whole test suite first, "
    "keep every commit small with an honest message, and ask before deleting data. The task for today "
    "is to move the session cache of the checkout service from Redis to Memcached without downtime."
)


def test_a_command_longer_than_a_query_still_ranks_by_its_words(api, token_a, agent_a, make_entry):
    # 60 words: more than a query may hold, so it was not searched at all and the newest decisions
    # were given instead of the one the task is about
    from search.query import MAX_WORDS

    assert len(LONG_COMMAND.split()) > MAX_WORDS
    relevant = make_entry(agent_a, "Decided: the checkout service keeps its session cache in Memcached")
    for i in range(5):
        make_entry(agent_a, f"Decided the font of report {i} is Inter")
    body = build(api, token_a, command=LONG_COMMAND, budget_tokens=8000).json()
    assert relevant.pk in body["cited"]
    assert "session cache in Memcached" in body["text"]
    assert ContextBuild.objects.get().command == LONG_COMMAND  # recorded as sent


def test_a_command_of_ten_thousand_characters_is_searched_and_embedded_by_a_bounded_query(
    api, token_a, agent_a, make_entry, monkeypatch
):
    from search import services as search_services
    from search.query import MAX_QUERY_CHARS, MAX_WORDS

    embedded, started = [], []
    real_start = search_services.query_vector_start

    def recording_start(text):
        embedded.append(text)
        started.append(real_start(text))
        return started[-1]

    monkeypatch.setattr(search_services, "query_vector_start", recording_start)
    monkeypatch.setattr(search_services, "resolve_mode", lambda mode: "hybrid")
    relevant = make_entry(agent_a, "Decided: the checkout service keeps its session cache in Memcached")
    for i in range(5):
        make_entry(agent_a, f"Decided the font of report {i} is Inter")
    command = ("checkout Memcached session cache. " + LONG_COMMAND + " ") * 25
    command = command[:10000]
    response = build(api, token_a, command=command, budget_tokens=8000)
    assert response.status_code == 200, response.content
    assert relevant.pk in response.json()["cited"]
    (query,) = embedded
    assert len(query) <= MAX_QUERY_CHARS and len(query.split()) <= MAX_WORDS
    assert query.split()[:4] == ["checkout", "Memcached", "session", "cache"]
    # The embedding started in the background (loading the model, importing numpy) ends here, not
    # during a later test: a half-imported numpy broke pytest.approx there now and then.
    for future in started:
        future.result()


def test_text_query_keeps_a_query_and_shortens_prose():
    from search.query import MAX_QUERY_CHARS, MAX_WORDS, query_compile, text_query

    assert text_query('kafka "blue green" -outage OR redis') == 'kafka "blue green" -outage OR redis'
    assert text_query("") == "" and text_query("   ") == "" and text_query("the and of " * 20) == ""
    prose = "The cache, the CACHE and the -cache: " + " ".join(f"word{i} and" for i in range(100))
    query = text_query(prose)
    words = query.split()
    # stopwords and repeats (any case) dropped, exclusions read as words, in order, at most MAX_WORDS
    assert words[:3] == ["cache", "word0", "word1"] and len(words) == MAX_WORDS
    assert "and" not in words and "The" not in words
    assert query_compile(query).terms  # accepted as a query
    long_words = " ".join(f"{'x' * 60}{chr(97 + i % 26)}{i}" for i in range(40))
    assert len(text_query(long_words)) <= MAX_QUERY_CHARS


def test_a_handoff_larger_than_the_room_left_is_cut_not_dropped(agent_a, make_entry):
    """A handoff over the budget was dropped whole, even with most of the budget unused: the new session
    lost its last session entirely. Its head is kept, marked as cut, and it is still cited."""
    from search.services import TRUNCATED, context_build

    handoff = make_entry(agent_a, "We shipped the ledger migration. " + "Then more detail. " * 800,
                         category="handoffs")  # fmt: skip
    body = context_build(agent=agent_a, command="ledger", budget_tokens=2000)
    text = body["text"]
    assert "Last Session:\nWe shipped the ledger migration." in text and TRUNCATED in text
    assert body["sections"]["handoff"] | {"entry_ids": None} == {
        "included": 1, "dropped": 0, "truncated": True, "entry_ids": None
    }  # fmt: skip
    assert handoff.pk in body["cited"]
    assert 1900 < body["token_estimate"] == token_estimate(text) <= 2000


def test_the_handoff_outlives_the_workspace_files(agent_a, make_entry):
    """Workspace files (not one of the seed's layers) were shortened only after the handoff was dropped:
    a long AGENTS.md pushed the latest handoff out of a 2,000-token context."""
    from search.services import context_build

    services.file_write(agent=agent_a, path="AGENTS.md", content="Be thorough. " * 1500, changed_by="t",
                        enabled=True, sort_order=1)  # fmt: skip
    handoff = make_entry(agent_a, "Last time we migrated the ledger to PostgreSQL 16.", category="handoffs")
    body = context_build(agent=agent_a, command="ledger", budget_tokens=2000)
    assert (
        f"Last Session:\nLast time we migrated the ledger to PostgreSQL 16. (#{handoff.pk}," in body["text"]
    )
    assert body["sections"]["workspace"]["truncated"] and "--- AGENTS.md ---\nBe thorough." in body["text"]
    assert body["token_estimate"] <= 2000


def test_the_handoff_outlives_many_open_tasks(api, token_a, agent_a):
    """The open tasks were shortened after the handoff: an agent with a few hundred open task lines (the
    benchmark's) got 78 tasks and no handoff at all in a 2,000-token context, the seed's most valuable layer
    dropped first."""
    from django.utils import timezone

    _tasks_store(agent_a, [f"- [ ] task number {i} " + "detail " * 8 for i in range(300)], timezone.now())
    handoff = services.entry_create(
        agent=agent_a, category="handoffs", content="Last time we migrated the ledger. " * 20, created_by="t"
    )
    body = build(api, token_a, budget_tokens=2000).json()
    sections = body["sections"]
    assert sections["handoff"] | {"entry_ids": None} == {
        "included": 1, "dropped": 0, "truncated": False, "entry_ids": None
    }  # fmt: skip
    assert f"Last Session:\n{handoff.content.strip()} (#{handoff.pk}," in body["text"]
    assert sections["tasks"]["truncated"] and 10 < sections["tasks"]["included"] < 300
    assert "- [ ] task number 299 " in body["text"]  # the newest tasks first
    assert body["token_estimate"] <= 2000


def test_open_tasks_cut_to_the_budget_fill_it(agent_a):
    """Dropping a task counted its text, not its bullet, tag and line break: each task dropped cut about 9
    bytes too many, and the benchmark's 2,000-token contexts came back at about 1,550 tokens."""
    from django.utils import timezone

    from search.services import context_build

    _tasks_store(agent_a, [f"- [ ] task number {i} " + "detail " * 8 for i in range(300)], timezone.now())
    body = context_build(agent=agent_a, command="task", budget_tokens=2000)
    assert body["sections"]["tasks"]["truncated"]
    assert 1980 <= body["token_estimate"] <= 2000


def test_a_huge_handoff_leaves_room_for_the_open_tasks(api, token_a, agent_a):
    """A handoff longer than the budget is cut to half of it before the tasks are shortened: its head and
    the newest tasks both reach the new session."""
    from django.utils import timezone

    from search.services import TRUNCATED

    _tasks_store(agent_a, [f"- [ ] task number {i} " + "detail " * 8 for i in range(300)], timezone.now())
    handoff = services.entry_create(
        agent=agent_a,
        category="handoffs",
        content="We shipped the ledger migration. " + "Then more detail. " * 800,
        created_by="t",
    )
    body = build(api, token_a, budget_tokens=2000).json()
    text, sections = body["text"], body["sections"]
    assert "Last Session:\nWe shipped the ledger migration. Then more detail." in text
    handoff_text = text.split("Last Session:\n")[1].split("\n\n")[0]
    assert TRUNCATED in handoff_text and 3000 < len(handoff_text) <= 4000
    assert sections["handoff"]["included"] == 1 and sections["handoff"]["truncated"]
    assert handoff.pk in body["cited"]
    assert "- [ ] task number 299 " in text and 10 < sections["tasks"]["included"] < 300
    assert body["token_estimate"] <= 2000


def test_an_item_cut_to_its_own_cap_is_reported_as_truncated(api, token_a, agent_a, make_entry):
    """A decision, a lesson or a task longer than its per-item cap is cut to it ("…"), budget or not,
    and the section said truncated: false: the caller could not tell that the text it got was cut."""
    decision = make_entry(agent_a, "Decided the ledger uses PostgreSQL. " + "reason " * 200)
    make_entry(agent_a, "Learned the ledger PostgreSQL lesson.", category="lessons")
    make_entry(agent_a, "- [ ] write the ledger report " + "step " * 100, category="tasks")
    body = build(api, token_a, budget_tokens=8000).json()
    sections = body["sections"]
    assert sections["decisions"]["entry_ids"] == [decision.pk] and sections["decisions"]["dropped"] == 0
    decisions = body["text"].split("Relevant Decisions:\n")[1].split("\n")[0]
    assert decisions.startswith("- Decided the ledger uses PostgreSQL. reason") and "… (#" in decisions
    assert sections["decisions"]["truncated"] and sections["tasks"]["truncated"]
    assert not sections["lessons"]["truncated"] and not sections["handoff"]["truncated"]


def _tasks_store(agent, contents, at):
    """Task entries of `agent`, all written at the instant `at`."""
    VaultEntry.objects.bulk_create(
        [
            VaultEntry(
                project=agent.project,
                agent=agent,
                category="tasks",
                content=content,
                created_at=at,
                updated_at=at,
            )
            for content in contents
        ]
    )
