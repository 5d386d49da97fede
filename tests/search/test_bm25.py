"""BM25-grade lexical ranking (search/bm25.py): term weights from document frequencies in the scope
searched, and candidates chosen rare terms first so an old relevant row is never lost to the caps."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from search.models import ScopeLength
from search.selectors import SearchFilters, SearchScope, search_run
from sessions_app.models import Message, Session

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["small scope", "cached large scope"])
def frequencies(request, monkeypatch):
    """The scope's size read on every search (a small scope), or kept in the process (a scope larger
    than bm25.CACHE_MIN_ROWS, made small here)."""
    from search import bm25

    monkeypatch.setattr(bm25, "_scope_cache", {})
    if request.param == "cached large scope":
        monkeypatch.setattr(bm25, "CACHE_MIN_ROWS", 10)
    return request.param


def find(agent, q, kinds=("messages",), **filters):
    outcome = search_run(
        q=q, scope=SearchScope(agent.project_id, [agent.pk]), filters=SearchFilters(kinds=kinds, **filters)
    )
    return [r["id"] for r in outcome.results]


def bulk_messages(agent, texts, *, start, step=timedelta(minutes=1)):
    session, _ = Session.objects.get_or_create(
        project=agent.project, agent=agent, external_id="history", defaults={"model_id": "m"}
    )
    return Message.objects.bulk_create(
        [
            Message(
                project=agent.project,
                agent=agent,
                session=session,
                role="user",
                text=text,
                created_at=start + i * step,
            )
            for i, text in enumerate(texts)
        ]
    )


def test_a_rare_term_outranks_a_common_one(agent_a, make_message, frequencies):
    now = timezone.now()
    bulk_messages(agent_a, [f"Caroline: chatting about the weekend, part {i}" for i in range(60)], start=now)
    common = make_message(agent_a, "Caroline: see you soon")
    rare = make_message(agent_a, "Melanie: the pottery class was wonderful")
    found = find(agent_a, "Caroline pottery")
    # one match each: the word in one message of sixty-two weighs more than the name in sixty-one
    assert found[0] == rare.pk
    assert found.index(rare.pk) < found.index(common.pk)


def test_an_old_relevant_message_is_found_among_thousands_of_newer_partial_matches(
    agent_a, settings, frequencies
):
    settings.MEMORY_SEARCH_CANDIDATES = 100
    now = timezone.now()
    bulk_messages(
        agent_a,
        [f"Caroline: we walked in the park again, day {i}" for i in range(3000)],
        start=now - timedelta(days=30),
    )
    # imported last (so it is also last in the table and in every posting list), dated a year ago
    (old,) = bulk_messages(
        agent_a, ["Caroline: I adopted a greyhound from the shelter"], start=now - timedelta(days=400)
    )
    found = find(agent_a, "Caroline greyhound park")
    assert found[0] == old.pk


def test_document_frequencies_come_from_the_scope_searched(agent_a, agent_b, make_message, frequencies):
    # "kafka" is everywhere in agent B's memory but rare in agent A's: A's ranking must not care
    now = timezone.now()
    bulk_messages(agent_b, [f"kafka and ledger talk {i}" for i in range(50)], start=now)
    ledger = make_message(agent_a, "the ledger is append only")
    kafka = make_message(agent_a, "kafka retention is seven days")
    bulk_messages(agent_a, [f"ledger entry number {i}" for i in range(20)], start=now)
    found = find(agent_a, "kafka ledger")
    assert found[0] == kafka.pk
    assert ledger.pk in found


def test_rare_term_candidates_keep_exclusions_and_phrases(agent_a, make_message, settings, frequencies):
    settings.MEMORY_SEARCH_CANDIDATES = 50
    now = timezone.now()
    bulk_messages(agent_a, [f"notes about the deploy pipeline {i}" for i in range(200)], start=now)
    wanted = make_message(agent_a, "the blue green deploy of the billing service")
    unwanted = make_message(agent_a, "billing service outage during the deploy")
    assert find(agent_a, "billing deploy -outage")[0] == wanted.pk
    assert unwanted.pk not in find(agent_a, "billing deploy -outage", limit=100)
    assert find(agent_a, '"blue green" billing') == [wanted.pk]


def test_a_reply_is_found_by_the_turn_it_answers(api, token_a):
    messages = [
        {"role": "user", "text": "Did you finish the Lisbon marathon?"},
        {"role": "assistant", "text": "Yes, in four hours and ten minutes!"},
        {"role": "user", "text": "Great, see you at the gym."},
    ]
    assert (
        api.post(
            "/agents/agent-a/messages", {"session": "s1", "messages": messages}, token=token_a
        ).status_code
        == 200
    )
    found = api.get("/search", q="lisbon marathon", kinds="messages", token=token_a).json()["results"]
    texts = [Message.objects.get(pk=r["id"]).text for r in found]
    # the question itself first (its own words weigh more), then the reply that answers it
    assert texts == ["Did you finish the Lisbon marathon?", "Yes, in four hours and ten minutes!"]


@pytest.mark.parametrize(
    "q",
    [
        '"boleto expiry" flaky OR flaky testing expir*',
        # five terms in six slots: the empty slot adds exactly nothing
        'flaky "boleto expiry" testing payments expir*',
    ],
)
def test_the_score_computed_once_per_term_equals_the_written_out_formula(agent_a, make_message, q):
    """bm25_score_sql reads each term's ts_rank once and takes the coordination count from it for
    terms of lexemes; a phrase is still counted by its `@@` (ts_rank does not check adjacency): the
    scores must be those of the formula written out, row for row."""
    from django.db import connection

    from search.bm25 import ONE_OCCURRENCE, _or_of_lexemes, bm25_score_sql
    from search.query import query_compile

    texts = [
        "the boleto expiry test is flaky on the payments runner",
        "expiry of the boleto, then the test again",  # the phrase's words, not adjacent
        "flaky tests everywhere, boleto expiry too, boleto expiry again",
        "nothing of interest here at all",
        "deployment of the expir service",
        # a vector too long for its row (TOAST), read once for every term's ts_rank and `@@`
        "flaky boleto expiry " + " ".join(f"runner{i} payments{i}x testing{i}y" for i in range(400)),
    ]
    for text in texts:
        make_message(agent_a, text)
    compiled = query_compile(q)
    kinds = [_or_of_lexemes(term.tsquery) for term in compiled.terms]
    assert True in kinds and False in kinds  # both ways of counting a match are exercised
    params = {"k1": 1.2, "b": 0.5, "avglen": 7.0}
    reference_parts, matched = [], []
    for i in range(len(compiled.terms)):
        params[f"idf{i}"] = 1.0 + i / 3
        tf = f"(ts_rank(m.search_vector, %(t{i})s::tsquery) / {ONE_OCCURRENCE})"
        length = "(1 - %(b)s + %(b)s * length(m.search_vector) / %(avglen)s::float8)"
        reference_parts.append(f"%(idf{i})s::float8 * {tf} * (%(k1)s + 1) / ({tf} + %(k1)s * {length})")
        matched.append(f"(m.search_vector @@ %(t{i})s::tsquery)::int")
    score = bm25_score_sql("m", compiled, params)
    reference = f"(({' + '.join(reference_parts)}) * ({' + '.join(matched)})::float8 / {len(matched)})"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.text, {score}, {reference} FROM sessions_app_message m WHERE m.agent_id = %(agent)s",
            {**params, "agent": agent_a.pk},
        )
        rows = cursor.fetchall()
    assert len(rows) == len(texts)
    assert sum(1 for _, ours, _ in rows if ours > 0) >= 3
    for text, ours, written_out in rows:
        assert ours == pytest.approx(written_out, rel=1e-12, abs=1e-12), text


def test_the_scores_statement_depends_on_the_number_of_term_slots_only():
    """A statement is planned once per connection: its text does not change with which terms are
    phrases, nor between five and six terms (bench_search's 200 questions: 46 texts, now 16)."""
    from search.bm25 import bm25_score_sql, term_slots
    from search.query import query_compile

    def statement(q):
        compiled = query_compile(q)
        return len(compiled.terms), bm25_score_sql("m", compiled, {})

    assert [term_slots(n) for n in range(1, 10)] == [1, 2, 3, 4, 6, 6, 8, 8, 10]
    three_words, sql = statement("boleto expiry flaky")
    three_with_phrase, sql_phrase = statement('"boleto expiry" flaky runner')
    assert three_words == three_with_phrase == 3 and sql_phrase == sql
    five, sql_five = statement("boleto expiry flaky runner payments")
    six, sql_six = statement('"boleto expiry" flaky runner payments deploy canary')
    assert (five, six) == (5, 6) and sql_five == sql_six
    assert sql_five != sql


def test_a_kind_the_query_finds_nothing_in_is_not_ranked(agent_a, make_message, monkeypatch, frequencies):
    """Each term's rows are counted exactly before ranking; when no row of a kind holds any term, the
    ranking statement would return nothing, so it is not run. Where a term is found, it is."""
    from search import selectors

    make_message(agent_a, "We moved the session cache to Memcached")
    ranked = []
    real_fetch = selectors._fetch
    monkeypatch.setattr(
        selectors, "_fetch", lambda sql, params: ranked.append(sql) or real_fetch(sql, params)
    )
    kinds = ("entries", "messages", "files")
    assert find(agent_a, "zeppelinquokka axolotlfjord", kinds=kinds) == []
    assert ranked == []
    found = find(agent_a, "memcached", kinds=kinds)
    assert len(found) == 1 and len(ranked) == 1 and "sessions_app_message" in ranked[0]
    # The counts do not apply exclusions: a term that is found is ranked, and the ranking excludes.
    ranked.clear()
    assert find(agent_a, "memcached -session", kinds=kinds) == [] and len(ranked) == 1


def _scope_size(table, scope_where, params, fetch):
    """The scope's (rows, mean length) as a search reads them (with its term counts, here alone)."""
    from search import bm25

    cached = bm25._scope_cached(table, params)
    if cached is not None:
        return cached
    scope_from, count_params = bm25._scope_count_sql(table, scope_where, params)
    row = fetch(f"SELECT sc.* FROM {scope_from}", count_params)[0]
    return bm25._scope_settle(table, scope_where, params, fetch, row)


def _mean_length(agent):
    from search.ranking import _fetch

    params = {"project": agent.project_id, "agents": [agent.pk]}
    return _scope_size("sessions_app_message", ["agent_id = ANY(%(agents)s)"], params, _fetch)


def _true_mean_length(agent):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT avg(length(search_vector)) FROM sessions_app_message WHERE agent_id = %s", [agent.pk]
        )
        return float(cursor.fetchone()[0])


SHORT = "Caroline: okay, see you"
LONG = "Melanie: the pottery class ran late, then we drove to the lake, cooked dinner, and watched a film {}"


def test_the_mean_length_is_the_whole_scopes_not_its_oldest_rows(agent_a, frequencies):
    """The length normalisation's mean is taken over the scope, not the first rows a scan meets (they
    were the oldest: 300 short turns here, then 300 long ones)."""
    now = timezone.now()
    bulk_messages(agent_a, [SHORT] * 300, start=now - timedelta(days=30))
    bulk_messages(agent_a, [LONG.format(i) for i in range(300)], start=now)
    total, avglen = _mean_length(agent_a)
    assert total == 600
    assert avglen == pytest.approx(_true_mean_length(agent_a))


def test_a_large_scopes_mean_length_is_a_sample_spread_over_its_history(agent_a, monkeypatch):
    from search import bm25

    monkeypatch.setattr(bm25, "_scope_cache", {})
    monkeypatch.setattr(bm25, "LENGTH_SAMPLE", 200)  # 1,200 rows: one in six
    now = timezone.now()
    bulk_messages(agent_a, [SHORT] * 600, start=now - timedelta(days=30))
    bulk_messages(agent_a, [LONG.format(i) for i in range(600)], start=now)
    true_mean = _true_mean_length(agent_a)
    _, avglen = _mean_length(agent_a)
    # about 200 rows, half of each kind: far from the short turns' mean and close to the true one
    assert avglen == pytest.approx(true_mean, rel=0.15)
    assert _mean_length(agent_a)[1] == avglen  # kept in the process: the same value
    monkeypatch.setattr(bm25, "_scope_cache", {})
    assert _mean_length(agent_a)[1] == avglen  # read again: the same rows, the same sample


def test_the_same_messages_stored_in_another_order_get_the_same_scores(
    agent_a, agent_b, frequencies, monkeypatch
):
    """Two agents holding the same messages, stored in opposite orders (so a scan meets them in
    opposite orders), score every result the same."""
    now = timezone.now()
    # Both searches at the same moment: a search's recency is measured from its own clock, and the
    # time between the two (0.1-0.5 s on a loaded machine) moved a score across its sixth decimal.
    monkeypatch.setattr(timezone, "now", lambda: now + timedelta(seconds=1))
    filler = ["harbour", "meadow", "lantern", "orchard", "pebble", "quarry", "ribbon", "saddle", "thimble"]
    # matching turns of several lengths, so that the length normalisation orders them
    texts = [SHORT] * 250 + [LONG.format(i) + " " + " ".join(filler[: i % 9]) for i in range(250)]
    for agent, ordered in ((agent_a, texts), (agent_b, texts[::-1])):
        bulk_messages(agent, ordered, start=now, step=timedelta(0))  # one time: recency the same

    def scores(agent):
        outcome = search_run(
            q="pottery lake dinner",
            scope=SearchScope(agent.project_id, [agent.pk]),
            filters=SearchFilters(kinds=("messages",), mode="lexical", limit=50),
        )
        # the scores only: rows of the same length tie, and which of them make the 50 follows their ids
        return sorted(r["score"] for r in outcome.results)

    assert len(scores(agent_a)) == 50
    assert scores(agent_a) == scores(agent_b)


def test_a_small_scopes_mean_length_is_read_again_when_its_count_changes(agent_a, monkeypatch):
    """A scope under CACHE_MIN_ROWS is counted on every search; its mean length is kept while the
    count stays the same (no statement reads it), and read again once rows were added."""
    from search import bm25

    monkeypatch.setattr(bm25, "_scope_cache", {})
    reads = []
    read = bm25._mean_length
    monkeypatch.setattr(bm25, "_mean_length", lambda *args: reads.append(args) or read(*args))
    now = timezone.now()
    bulk_messages(agent_a, [SHORT] * 100, start=now - timedelta(days=1))
    first = _mean_length(agent_a)
    assert _mean_length(agent_a) == first
    assert len(reads) == 1
    bulk_messages(agent_a, [LONG.format(i) for i in range(100)], start=now)
    total, avglen = _mean_length(agent_a)
    assert total == 200 and avglen == pytest.approx(_true_mean_length(agent_a)) and avglen > first[1]
    assert len(reads) == 2


def _stored_means():
    return {(s.table_name, s.agent_id): (s.rows, s.avglen) for s in ScopeLength.objects.all()}


@pytest.fixture
def large_scope(agent_a, monkeypatch):
    """agent_a with 300 messages, a scope of CACHE_MIN_ROWS rows or more (made 100 here), and the
    number of times the sample behind the mean length is read."""
    from search import bm25

    monkeypatch.setattr(bm25, "_scope_cache", {})
    monkeypatch.setattr(bm25, "CACHE_MIN_ROWS", 100)
    reads = []
    read = bm25._mean_length
    monkeypatch.setattr(bm25, "_mean_length", lambda *args: reads.append(args) or read(*args))
    now = timezone.now()
    bulk_messages(agent_a, [SHORT] * 150, start=now - timedelta(days=1))
    bulk_messages(agent_a, [LONG.format(i) for i in range(150)], start=now)
    return reads


def test_a_large_scopes_mean_length_is_kept_for_other_processes(agent_a, large_scope, monkeypatch):
    """The mean length of a large scope is stored with the count it was measured at: a process that
    has not searched the scope yet (the process cache emptied here) reads it with the count instead
    of reading the sample again."""
    from search import bm25

    total, avglen = _mean_length(agent_a)
    assert total == 300 and len(large_scope) == 1
    assert _stored_means() == {("sessions_app_message", agent_a.pk): (300, pytest.approx(avglen))}
    monkeypatch.setattr(bm25, "_scope_cache", {})  # another process
    assert _mean_length(agent_a) == (300, pytest.approx(avglen))
    assert len(large_scope) == 1
    # rows added, but within LENGTH_DRIFT (a tenth) of the count the mean was measured at: kept
    bulk_messages(agent_a, [LONG.format(i) for i in range(30)], start=timezone.now())
    monkeypatch.setattr(bm25, "_scope_cache", {})
    assert _mean_length(agent_a) == (330, pytest.approx(avglen))
    assert len(large_scope) == 1


def test_a_stored_mean_length_is_measured_again_when_the_scope_has_moved(agent_a, large_scope, monkeypatch):
    """Past a tenth more (or fewer) rows, or a day after it was measured, the mean is read again
    and stored over the old one."""
    from search import bm25

    _, first = _mean_length(agent_a)
    bulk_messages(agent_a, [LONG.format(i) + " and more words" for i in range(31)], start=timezone.now())
    monkeypatch.setattr(bm25, "_scope_cache", {})
    total, avglen = _mean_length(agent_a)
    assert total == 331 and len(large_scope) == 2 and avglen > first
    assert avglen == pytest.approx(_true_mean_length(agent_a))
    assert _stored_means() == {("sessions_app_message", agent_a.pk): (331, pytest.approx(avglen))}
    # a day old: read again though the count has not moved
    ScopeLength.objects.update(measured_at=timezone.now() - timedelta(seconds=bm25.LENGTH_STALE_SECONDS + 60))
    monkeypatch.setattr(bm25, "_scope_cache", {})
    assert _mean_length(agent_a) == (331, pytest.approx(avglen))
    assert len(large_scope) == 3
    assert ScopeLength.objects.get().measured_at > timezone.now() - timedelta(minutes=1)


def test_only_an_agents_or_a_projects_mean_length_is_stored(agent_a, agent_b, large_scope, monkeypatch):
    """A project's scope is stored under the project; a search over several agents (their rows
    together) is not stored at all: no row could stand for it."""
    from search import bm25
    from search.ranking import _fetch

    bulk_messages(agent_b, [SHORT] * 120, start=timezone.now())
    both = {"project": agent_a.project_id, "agents": [agent_a.pk, agent_b.pk]}
    assert _scope_size("sessions_app_message", ["agent_id = ANY(%(agents)s)"], both, _fetch)[0] == 420
    assert not ScopeLength.objects.exists()
    project = {"project": agent_a.project_id, "agents": None}
    total, avglen = _scope_size("sessions_app_message", ["project_id = %(project)s"], project, _fetch)
    assert total == 420
    stored = ScopeLength.objects.get()
    assert (stored.agent_id, stored.project_id, stored.rows) == (None, agent_a.project_id, 420)
    monkeypatch.setattr(bm25, "_scope_cache", {})
    reads = len(large_scope)
    assert _scope_size("sessions_app_message", ["project_id = %(project)s"], project, _fetch) == (
        420,
        pytest.approx(avglen),
    )
    assert len(large_scope) == reads


def test_a_mean_length_that_cannot_be_stored_leaves_the_callers_transaction_usable(agent_a, caplog):
    """Storing runs in a savepoint: a statement that fails (a table name longer than its column
    here) is logged, and the search's transaction goes on."""
    from django.db import transaction

    from search import bm25
    from search.ranking import _fetch
    from vault.models import Agent

    with transaction.atomic():
        bm25._length_store("x" * 65, agent_a.project_id, agent_a.pk, 500, 12.5, _fetch)
        assert Agent.objects.filter(pk=agent_a.pk).exists()  # the transaction still answers
    assert "Could not keep the mean length" in caplog.text
    assert not ScopeLength.objects.exists()


def test_deleting_an_agent_deletes_its_stored_mean_length(agent_a, large_scope):
    _mean_length(agent_a)
    assert ScopeLength.objects.filter(agent=agent_a).exists()
    agent_a.delete()
    assert not ScopeLength.objects.exists()


def test_a_term_found_common_in_a_large_scope_is_not_counted_again_while_its_count_stands(
    agent_a, monkeypatch, settings
):
    """A term counted to the cap in a scope of CACHE_MIN_ROWS rows or more is common: its frequency is
    the estimate either way, so while the scope's count is kept (SCOPE_CACHE_SECONDS) the next search
    does not count it again (the rare term still is), and ranks the same. Once the count is read
    again, so is the term's (after deletions, exact again)."""
    from search import bm25

    monkeypatch.setattr(bm25, "_scope_cache", {})
    monkeypatch.setattr(bm25, "CACHE_MIN_ROWS", 10)
    settings.MEMORY_SEARCH_CANDIDATES = 50  # the cap: 13 rows
    counted = []
    count = bm25._exact_counts
    monkeypatch.setattr(
        bm25,
        "_exact_counts",
        lambda table, where, terms, *a, **kw: (
            counted.append(len(terms)) or count(table, where, terms, *a, **kw)
        ),
    )
    now = timezone.now()
    common = bulk_messages(
        agent_a, [f"Caroline: chatting about the weekend, part {i}" for i in range(40)], start=now
    )
    rare = bulk_messages(agent_a, ["Melanie: the pottery class was wonderful"], start=now)
    first = find(agent_a, "Caroline pottery", limit=50)
    assert first[0] == rare[0].pk and counted == [2]
    assert find(agent_a, "Caroline pottery", limit=50) == first
    assert counted == [2, 1]  # pottery only
    assert (
        find(agent_a, "Caroline pottery", limit=50, since=now - timedelta(days=1)) == first
    )  # another filter: counted
    assert counted == [2, 1, 2]
    Message.objects.filter(pk__in=[m.pk for m in common[5:]]).delete()
    later = time.monotonic() + bm25.SCOPE_CACHE_SECONDS + 1
    monkeypatch.setattr(bm25.time, "monotonic", lambda: later)
    assert set(find(agent_a, "Caroline pottery", limit=50)) == {rare[0].pk, *(m.pk for m in common[:5])}
    assert counted[-1] == 2  # the scope counted again, and the term with it: 5 rows, rare now


@pytest.mark.parametrize("min_rows, counted", [(1000, 40), (10, 13)])
def test_a_scopes_count_is_read_with_the_term_counts_and_caps_them_as_before(
    agent_a, monkeypatch, settings, min_rows, counted
):
    """A scope whose count is not kept in the process is counted in the term counts' statement (no
    statement of its own), and the cap follows from it in SQL: a scope under CACHE_MIN_ROWS rows is
    counted exactly (40), a larger one up to a quarter of the candidate cap, plus one (13)."""
    from search import bm25, ranking

    monkeypatch.setattr(bm25, "_scope_cache", {})
    monkeypatch.setattr(bm25, "CACHE_MIN_ROWS", min_rows)
    settings.MEMORY_SEARCH_CANDIDATES = 50
    bulk_messages(
        agent_a, [f"Caroline: chatting about the weekend, part {i}" for i in range(40)], start=timezone.now()
    )
    statements, counts = [], []
    fetch, finish = ranking._fetch, bm25._term_stats_finish
    monkeypatch.setattr(ranking, "_fetch", lambda sql, params: statements.append(sql) or fetch(sql, params))
    monkeypatch.setattr(bm25, "_term_stats_finish", lambda *a: counts.append(dict(a[8])) or finish(*a))
    assert len(find(agent_a, "Caroline", limit=50)) == 40
    scope_counts = [sql for sql in statements if "%(ncap)s" in sql]
    assert len(scope_counts) == 1 and "%(df0)s" in scope_counts[0]
    assert counts == [{0: counted}]
