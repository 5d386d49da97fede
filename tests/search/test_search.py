from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from search.query import query_compile
from search.selectors import SearchFilters, SearchScope, entries_best_by_category, search_run
from search.snippets import snippet_build
from search.typos import edit_distance_one
from vault import services
from vault.text import TAG_FILTER_MAX

pytestmark = pytest.mark.django_db


def ids(response):
    assert response.status_code == 200, response.json()
    return [r["id"] for r in response.json()["results"]]


def find(agent, q, **filters):
    filters.setdefault("kinds", ("entries",))  # agents start with workspace files that match common words
    outcome = search_run(
        q=q, scope=SearchScope(agent.project_id, [agent.pk]), filters=SearchFilters(**filters)
    )
    return [r["id"] for r in outcome.results]


# --- tenancy ------------------------------------------------------------------------------------


def test_it_needs_a_token(api, project):
    assert api.get("/search", q="postgres").status_code == 401


def test_agent_token_sees_only_its_own_agent(api, entry_a, entry_b, token_a, token_b):
    assert ids(api.get("/search", token=token_a, q="PostgreSQL OR cache")) == [entry_a.pk]
    assert ids(api.get("/search", token=token_b, q="PostgreSQL OR cache")) == [entry_b.pk]


def test_agent_token_cannot_name_another_agent(api, entry_b, token_a):
    response = api.get("/search", token=token_a, q="cache", agent="agent-b")
    assert response.status_code == 404


def test_project_token_sees_every_agent_and_can_filter_by_agent(api, entry_a, entry_b, admin_token):
    assert set(ids(api.get("/search", token=admin_token, q="PostgreSQL OR cache"))) == {
        entry_a.pk,
        entry_b.pk,
    }
    assert ids(api.get("/search", token=admin_token, q="PostgreSQL OR cache", agent="agent-b")) == [
        entry_b.pk
    ]


def test_outsider_sees_nothing_of_another_project(api, entry_a, outsider_token):
    assert ids(api.get("/search", token=outsider_token, q="PostgreSQL")) == []
    assert api.get("/search", token=outsider_token, q="PostgreSQL", agent="agent-a").status_code == 200


def test_read_token_may_search(api, entry_a, read_token_a):
    assert ids(api.get("/search", token=read_token_a, q="postgres")) == [entry_a.pk]


# --- input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        {"q": ""},
        {"q": "   "},
        {"q": "-onlyexcluded"},
        {"q": "x" * 1001},
        {"q": "db", "kinds": "entries,bogus"},
        {"q": "db", "limit": 101},
        {"q": "db", "limit": 0},
        {"q": "db", "category": "nope"},
        {"q": "db", "status": "weird"},
        {"q": "db", "since": "not-a-date"},
        {"q": "db", "since": "2030-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"},
    ],
)
def test_it_rejects_bad_input_with_a_4xx(api, token_a, query):
    response = api.get("/search", token=token_a, **query)
    assert 400 <= response.status_code < 500, response.content
    assert response.json()["detail"]


def test_it_survives_tsquery_syntax_in_the_query(api, token_a, entry_a):
    for q in ["a & b | !c", "'quoted' :* <-> (", "postgres'sql", "\\ backslash", "OR", '"unclosed phrase']:
        response = api.get("/search", token=token_a, q=q)
        assert response.status_code in (200, 422), (q, response.content)


# --- query semantics ----------------------------------------------------------------------------


def test_stemming_matches_other_word_forms(agent_a, make_entry):
    entry = make_entry(agent_a, "The deployments were failing because of migrations")
    assert find(agent_a, "deploy migration") == [entry.pk]


def test_prefix_matches_the_start_of_a_word(agent_a, make_entry):
    entry = make_entry(agent_a, "Playwright runs the WebKit suite nightly")
    assert find(agent_a, "Playwr") == [entry.pk]


def test_a_one_letter_typo_still_matches(agent_a, make_entry):
    entry = make_entry(agent_a, "Karpenter provisions spot instances for the workers")
    other = make_entry(agent_a, "Nothing about nodes here")
    for typo in ["Karpentr", "Karpentre", "Karpemter", "Karpeenter"]:
        assert find(agent_a, typo) == [entry.pk], typo
    assert other.pk not in find(agent_a, "Karpentr")


def test_typo_tolerance_does_not_apply_to_short_words(agent_a, make_entry):
    make_entry(agent_a, "the cache")
    entry = make_entry(agent_a, "the layers")
    assert find(agent_a, "layerz") == [entry.pk]  # six letters, one edit: matched
    assert find(agent_a, "cahe") == []  # four letters: too short for typo matching
    assert find(agent_a, "cxchx") == []  # two edits away


def test_phrase_requires_the_words_in_order(agent_a, make_entry):
    together = make_entry(agent_a, "we use a connection pool for the ledger")
    apart = make_entry(agent_a, "the pool of workers handles each connection")
    assert find(agent_a, '"connection pool"') == [together.pk]
    assert find(agent_a, '"connection pool" kubernetes') == [together.pk]  # other words only rank
    assert set(find(agent_a, "connection pool")) == {together.pk, apart.pk}


def test_a_quoted_title_with_punctuation_matches_as_the_text_was_split(agent_a, make_entry):
    book = make_entry(agent_a, "I just finished 11/22/63 by Stephen King, loved it")
    make_entry(agent_a, "The meeting moved from 11 to 22 past 63")
    assert find(agent_a, 'what did she think of "11/22/63"?') == [book.pk]
    assert find(agent_a, '"state-of-the-art" parser') == []


def test_a_quoted_phrase_that_matches_nothing_is_searched_as_words_and_says_so(
    api, token_a, agent_a, make_entry
):
    entry = make_entry(agent_a, "We watched The Lord of the Rings: The Two Towers last night")
    make_entry(agent_a, "Nothing about films in this one")
    response = api.get("/search", token=token_a, q='did they like "Two Towers movie"?', kinds="entries")
    body = response.json()
    assert ids(response) == [entry.pk]
    assert body["relaxed_phrases"] == ["Two Towers movie"]
    assert "Towers" in body["terms"] and "Two Towers movie" not in body["terms"]
    # A phrase that does match stays required, and nothing is relaxed.
    response = api.get("/search", token=token_a, q='"Two Towers" night', kinds="entries")
    assert ids(response) == [entry.pk] and response.json()["relaxed_phrases"] == []
    assert find(agent_a, '"Two Towers" OR "Towers Two"') == [entry.pk]


def test_a_relaxed_phrase_keeps_exclusions_and_other_agents_out(agent_a, agent_b, make_entry):
    make_entry(agent_a, "Towers of Hanoi puzzle solved in Rust")
    wanted = make_entry(agent_a, "Towers of Hanoi puzzle solved in Go")
    make_entry(agent_b, "Towers of Hanoi puzzle solved in Go, by agent b")
    assert find(agent_a, '"Hanoi Towers puzzle" -rust') == [wanted.pk]


def test_context_finds_a_decision_named_by_a_phrase_written_differently(agent_a, make_entry):
    decision = make_entry(agent_a, "Decided: the billing service keeps its own PostgreSQL schema")
    make_entry(agent_a, "Decided: logs go to Loki")
    command = 'what about the "billing-service schema"?'
    best = entries_best_by_category(
        agent_a, compiled=query_compile(command), limits={"decisions": 3}, q=command
    )
    assert [row["id"] for row in best["decisions"]] == [decision.pk]


def test_exclusion_removes_matching_entries(agent_a, make_entry):
    redis = make_entry(agent_a, "cache sessions in Redis")
    memcached = make_entry(agent_a, "cache pages in Memcached")
    assert find(agent_a, "cache -redis") == [memcached.pk]
    assert find(agent_a, 'cache -"in redis"') == [memcached.pk]
    assert set(find(agent_a, "cache")) == {redis.pk, memcached.pk}


@pytest.mark.parametrize(
    ("stored", "q"),
    [
        ("Run pytest -k test_refund --maxfail=1 to reproduce", "--maxfail=1"),
        ("Run pytest -k test_refund --maxfail=1 to reproduce", "pytest -k test_refund"),
        ("Use rm -rf build/ before packaging", "rm -rf build"),
        ("Use git push --force-with-lease, never -f", "--force-with-lease"),
        ("Offsets can be -1 when the stream is empty", "offsets -1"),
    ],
)
def test_a_pasted_command_line_is_searched_not_excluded(agent_a, make_entry, stored, q):
    """A command's options ("--maxfail=1", "-k", "-rf") and negative numbers are words to find: read as
    exclusions, they excluded the very memory that holds the command ("--maxfail=1" alone was refused
    as having nothing to search for). "-word" of three letters or more still excludes."""
    wanted = make_entry(agent_a, stored)
    make_entry(agent_a, "Lunch is at noon on Fridays")
    assert find(agent_a, q) == [wanted.pk]
    compiled = query_compile(q)
    assert not compiled.excluded, q
    assert query_compile("cache -redis").excluded and query_compile("build -npm").excluded


@pytest.mark.parametrize("q", ["123", "pay 123", "ticket 123", "PAY-123"])
def test_a_ticket_key_is_found_by_its_number(agent_a, make_entry, q):
    """PostgreSQL's parser reads the "-123" of "PAY-123" as a signed number: a number asked also
    matches itself with a minus, so the ticket is found by its number, not only by its whole key."""
    wanted = make_entry(agent_a, "Ticket PAY-123 covers the refund rounding bug")
    make_entry(agent_a, "Ticket PAY-124 covers the invoice layout")
    assert find(agent_a, q)[0] == wanted.pk


@pytest.mark.parametrize("q", ["PAY123", "pay123", "refund PAY123"])
def test_a_ticket_key_typed_without_its_dash_finds_the_ticket(agent_a, make_entry, q):
    """A ticket key typed "PAY123" is cut as "PAY 123", and the stored "PAY-123" holds "pay" then "-123":
    the cut is also searched with the number signed."""
    wanted = make_entry(agent_a, "Ticket PAY-123 covers the refund rounding bug")
    make_entry(agent_a, "Ticket PAY-124 covers the invoice layout")
    make_entry(agent_a, "The pay run uses 123 workers")
    assert find(agent_a, q)[0] == wanted.pk


@pytest.mark.parametrize(
    ("stored", "q"),
    [
        ("The enterprise plan costs $1,200 a month", "1200"),
        ("The enterprise plan costs $1,200 a month", "$1200 plan"),
        ("O plano empresarial custa R$ 2.500 por mês", "2500"),
        ("The migration moved 1,250,000 rows in an hour", "1250000 rows"),
        ("The migration moved 1250000 rows in an hour", "1,250,000"),
        ("The enterprise plan costs $1,200 a month", "1,200 a month"),
    ],
)
def test_a_number_is_found_however_its_thousands_are_written(agent_a, make_entry, stored, q):
    """PostgreSQL's parser reads "1,200" as the numbers 1 and 200, and "2.500" as one decimal: a number
    of four digits or more asked without separators also matches itself in groups of three, with
    commas and with dots."""
    wanted = make_entry(agent_a, stored)
    make_entry(agent_a, "The starter plan costs $200 a month and 1 seat")
    make_entry(agent_a, "Rows are copied in batches of 500")
    assert find(agent_a, q)[0] == wanted.pk
    assert not query_compile("0123").terms[0].tsquery.count("0,123")  # a leading zero is an id, not an amount


@pytest.mark.parametrize(
    ("q", "text", "marked"),
    [
        ("1200", "The enterprise plan costs $1,200 a month", "$**1,200**"),
        ("2500", "O plano custa R$ 2.500 por mês", "R$ **2.500**"),
        ("ip v6", "The staging cluster has IPv6 disabled", "**IPv6**"),
    ],
)
def test_a_numbers_other_forms_and_a_joined_word_are_highlighted_as_written(
    agent_a, make_entry, q, text, marked
):
    make_entry(agent_a, text)  # the vocabulary then knows the joined word
    assert marked in snippet_build(text, query_compile(q).patterns)


@pytest.mark.parametrize(
    ("stored", "q"),
    [
        ("The staging cluster has IPv6 disabled on the load balancer", "ip v6"),
        ("The staging cluster has IPv6 disabled on the load balancer", "staging ip v6 cluster"),
        ("Sessions reconnect through the websocket gateway", "web socket gateway"),
        ("Nightly dumps of the database go to cold storage", "data base dumps"),
    ],
)
def test_two_words_typed_apart_find_the_one_word_they_make(agent_a, make_entry, stored, q):
    """Each of two adjacent words also matches the word they make together, so "ip v6" finds IPv6."""
    wanted = make_entry(agent_a, stored)
    make_entry(agent_a, "The IP allow list has v4 addresses only, the socket pool holds 10 base slots")
    make_entry(agent_a, "Lunch is at noon on Fridays")
    assert find(agent_a, q)[0] == wanted.pk


def test_words_are_not_joined_with_a_stopword_nor_across_or(agent_a, make_entry):
    demo = make_entry(agent_a, "The live demo of the importer is on Friday")
    alive = make_entry(agent_a, "The importer is alive again after the restart")
    assert find(agent_a, "a live demo")[0] == demo.pk
    assert alive.pk not in find(agent_a, "a live demo")
    # An OR group is not joined with its neighbour, and compiles.
    assert "ipv6" not in query_compile("ip OR v4 v6").match
    assert "ipv6" in query_compile("ip v6").match
    # A joined word the vocabulary could hold but does not (no stored text has it) is left out.
    assert "livedemo" not in query_compile("live demo").match
    make_entry(agent_a, "The livedemo account is reset nightly")
    assert "livedemo" in query_compile("live demo").match


def test_or_matches_either_side(agent_a, make_entry):
    kafka = make_entry(agent_a, "Kafka carries the events")
    rabbit = make_entry(agent_a, "RabbitMQ carries the jobs")
    make_entry(agent_a, "Celery runs the tasks")
    assert set(find(agent_a, "kafka OR rabbitmq")) == {kafka.pk, rabbit.pk}


def test_a_question_finds_the_entry_that_answers_it(agent_a, make_entry):
    answer = make_entry(
        agent_a, "We decided to use PostgreSQL for the payments ledger because of ACID transactions."
    )
    make_entry(agent_a, "Payments UI uses React")
    backups = make_entry(agent_a, "The database backups run nightly", category="lessons")
    assert find(agent_a, "what did we decide about the database for payments?")[0] == answer.pk
    # The answer shares only "use" and "payments" with this question, as the shorter React entry
    # does (BM25 puts that one first); it must still beat the entry matching one word of three.
    found = find(agent_a, "what database do we use for payments?")
    assert found.index(answer.pk) < found.index(backups.pk)


def test_more_matched_terms_rank_higher(agent_a, make_entry):
    one = make_entry(agent_a, "Redis is fast", importance=1.0)
    two = make_entry(agent_a, "Redis sessions were dropped", importance=0.0)
    assert find(agent_a, "why did we drop redis for sessions") == [two.pk, one.pk]


def test_portuguese_query_finds_portuguese_entry(agent_a, make_entry):
    entry = make_entry(agent_a, "Decidimos usar filas para processar os pagamentos pendentes")
    make_entry(agent_a, "We use queues for emails")
    assert find(agent_a, "o que decidimos sobre os pagamentos?") == [entry.pk]
    assert entry.pk in find(agent_a, "pagamento pendente")


def test_stopword_only_query_still_searches(agent_a, make_entry):
    entry = make_entry(agent_a, "this is the one")
    assert find(agent_a, "the one", kinds=("entries",)) == [entry.pk]


def test_compiled_query_drops_stopwords_and_keeps_syntax(db):
    compiled = query_compile('what did we decide about "connection pool" -redis')
    labels = [t.label for t in compiled.terms]
    assert labels == ["decide", "connection pool"]
    assert compiled.terms[1].required
    assert "!" in compiled.match


def test_edit_distance_one():
    assert edit_distance_one("karpenter", "karpentr")
    assert edit_distance_one("karpenter", "karpetner")
    assert edit_distance_one("karpenter", "karpenmer")
    assert edit_distance_one("karpenter", "karpennter")
    assert not edit_distance_one("karpenter", "karpenter")
    assert not edit_distance_one("karpenter", "krapentre")


# --- vocabulary ---------------------------------------------------------------------------------


def test_vocabulary_follows_edits_messages_and_files(agent_a, make_entry, make_message):
    from search.models import VocabularyDeletion, VocabularyWord

    entry = make_entry(agent_a, "plain words")
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="zephyrine"), changed_by="t"
    )
    make_message(agent_a, "quixotical")
    services.file_write(agent=agent_a, path="notes.md", content="flibbertigibbet", changed_by="t")
    services.file_append(agent=agent_a, path="notes.md", text=" snollygoster", changed_by="t")
    for word in ["zephyrine", "quixotical", "flibbertigibbet", "snollygoster"]:
        assert VocabularyWord.objects.filter(word=word).exists(), word
    assert VocabularyDeletion.objects.filter(key="zephyine", word="zephyrine").exists()
    assert find(agent_a, "zephirine", kinds=("entries",)) == [entry.pk]


def test_a_batch_of_messages_adds_every_new_word_with_one_statement_trigger(api, agent_a, token_a):
    """Messages reach the vocabulary through a statement-level trigger (search 0006): each word of each
    message of a batch, once, with its deletion keys; an edit still goes through the row trigger."""
    from django.db import connection

    from search.models import VocabularyDeletion, VocabularyWord
    from sessions_app.models import Message

    texts = ["the gallimaufry arrived", "a second gallimaufry", "then a borborygmus", "Ünterwäsche ñandú"]
    response = api.post(
        "/agents/agent-a/messages",
        {"session": "vocab", "messages": [{"role": "user", "text": t} for t in texts]},
        token=token_a,
    )
    assert response.status_code == 200, response.content
    for word in ["gallimaufry", "borborygmus", "ünterwäsche", "ñandú", "arrived", "second"]:
        assert VocabularyWord.objects.filter(word=word).exists(), word
    assert VocabularyDeletion.objects.filter(key="borborygus", word="borborygmus").exists()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgtype & 1 FROM pg_trigger WHERE tgname = 'search_vocabulary_ins'"
            " AND tgrelid = 'sessions_app_message'::regclass"
        )
        assert cursor.fetchone() == (0,)  # TRIGGER_TYPE_ROW unset: once per statement
    message = Message.objects.get(text="then a borborygmus")
    message.text = "then a collywobbles"
    message.save(update_fields=["text"])
    assert VocabularyWord.objects.filter(word="collywobbles").exists()


def test_a_file_write_whose_words_are_known_skips_the_vocabulary_and_only_that_write(agent_a):
    """vault's WORDS_KNOWN_SETTING holds for one write (search 0007): the next write in the same
    transaction parses its words again."""
    from django.db import transaction

    from search.models import VocabularyWord
    from vault.models import WorkspaceFile

    with transaction.atomic():
        services.file_append_many(
            agent=agent_a, path="notes.md", parts=[("kerfufflement ", "")], changed_by="t", words_known=True
        )
        services.file_append(agent=agent_a, path="notes.md", text="widdershins ", changed_by="t")
    assert WorkspaceFile.objects.get(agent=agent_a, path="notes.md").content == "kerfufflement widdershins "
    assert not VocabularyWord.objects.filter(word="kerfufflement").exists()
    assert VocabularyWord.objects.filter(word="widdershins").exists()


def test_the_days_note_of_a_message_batch_adds_no_word_the_messages_did_not(api, agent_a, token_a):
    """The day's note logs the batch's exchanges without parsing them for the vocabulary again: every
    word of the note but its own labels is there, from the messages' INSERT."""
    from django.db import connection

    from search.models import VocabularyWord
    from search.sql import WORD_FILTER

    texts = ["where is the gallimaufry kept?", "In the snickersnee cupboard, next to the flummadiddle."]
    response = api.post(
        "/agents/agent-a/messages",
        {
            "session": "note-vocab",
            "messages": [{"role": r, "text": t} for r, t in zip(["user", "assistant"], texts, strict=True)],
        },
        token=token_a,
    )
    assert response.status_code == 200, response.content
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT lexeme FROM vault_workspacefile, unnest(to_tsvector('simple', content))"
            f" WHERE agent_id = %s AND path LIKE 'memory/%%' AND {WORD_FILTER}",
            [agent_a.pk],
        )
        note_words = {row[0] for row in cursor.fetchall()}
    assert {"gallimaufry", "snickersnee", "flummadiddle"} <= note_words
    known = set(VocabularyWord.objects.filter(word__in=note_words).values_list("word", flat=True))
    assert note_words - known <= {"user", "agent"}


# --- filters ------------------------------------------------------------------------------------


def test_category_filter(agent_a, make_entry):
    decision = make_entry(agent_a, "Use Kafka", category="decisions")
    lesson = make_entry(agent_a, "Kafka needs tuning", category="lessons")
    assert find(agent_a, "kafka", category="decisions") == [decision.pk]
    assert find(agent_a, "kafka", category="lessons") == [lesson.pk]


def test_tags_any_and_all(api, agent_a, token_a, make_entry):
    both = make_entry(agent_a, "Kafka one", tags=["infra", "queue"])
    infra = make_entry(agent_a, "Kafka two", tags=["infra"])
    make_entry(agent_a, "Kafka three", tags=["other"])
    assert set(ids(api.get("/search", token=token_a, q="kafka", tag=["infra", "queue"]))) == {
        both.pk,
        infra.pk,
    }
    assert ids(api.get("/search", token=token_a, q="kafka", tag=["infra", "queue"], tags_mode="all")) == [
        both.pk
    ]


def test_search_tags_are_bounded_and_checked_as_an_entrys_tags_are(api, agent_a, token_a, make_entry):
    """`tag` took any number of tags of any length (900 tags of 10 KB cost the database a second, and a
    tag no entry can carry was searched for all the same). At most TAG_FILTER_MAX now, each 1-64
    characters by tags_normalise's rule, '#' and case ignored as on a write."""
    infra = make_entry(agent_a, "Kafka one", tags=["infra"])

    too_many = api.get("/search", token=token_a, q="kafka", tag=[f"t{i}" for i in range(TAG_FILTER_MAX + 1)])
    assert too_many.status_code == 422, too_many.content
    assert too_many.json()["detail"].startswith(
        f"Invalid input: tag: List should have at most {TAG_FILTER_MAX}"
    )

    too_long = api.get("/search", token=token_a, q="kafka", tag=["a" * 10_000] * TAG_FILTER_MAX)
    assert too_long.status_code == 422, too_long.content
    assert too_long.json()["detail"].startswith("Invalid tag 'aaaa")
    assert len(too_long.json()["detail"]) < 300
    assert too_long.json()["errors"][0]["loc"] == ["tag"]

    for bad in ("c++", "#" + "a" * 64, "a\u00a0b"):
        response = api.get("/search", token=token_a, q="kafka", tag=["infra", bad])
        assert response.status_code == 422 and "Invalid tag" in response.json()["detail"], bad

    assert ids(api.get("/search", token=token_a, q="kafka", tag=[" #INFRA ", " "])) == [infra.pk]
    assert ids(api.get("/search", token=token_a, q="kafka", tag=["a" * 64])) == []


def test_time_range(agent_a, make_entry):
    now = timezone.now()
    old = make_entry(agent_a, "Kafka old", created_at=now - timedelta(days=30))
    new = make_entry(agent_a, "Kafka new", created_at=now - timedelta(days=1))
    assert find(agent_a, "kafka", since=now - timedelta(days=7)) == [new.pk]
    assert find(agent_a, "kafka", until=now - timedelta(days=7)) == [old.pk]


def test_archived_entries_only_when_asked(agent_a, make_entry):
    active = make_entry(agent_a, "Kafka active")
    archived = make_entry(agent_a, "Kafka archived", status="archived")
    assert find(agent_a, "kafka") == [active.pk]
    assert find(agent_a, "kafka", status="archived") == [archived.pk]
    assert set(find(agent_a, "kafka", status="all")) == {active.pk, archived.pk}


def test_kinds_limit_and_offset(api, agent_a, token_a, make_entry, make_message):
    entry = make_entry(agent_a, "Kafka entry")
    message = make_message(agent_a, "we talked about Kafka today")
    internal = make_message(agent_a, "Kafka internal note", internal=True)
    file, _ = services.file_write(
        agent=agent_a, path="memory/2026-01-01.md", content="Kafka in notes", changed_by="t"
    )
    response = api.get("/search", token=token_a, q="kafka")
    results = response.json()["results"]
    assert {(r["kind"], r["id"]) for r in results} == {
        ("entry", entry.pk),
        ("message", message.pk),
        ("file", file.pk),
    }
    assert internal.pk not in [r["id"] for r in results if r["kind"] == "message"]
    by_kind = {r["kind"]: r for r in results}
    assert by_kind["message"]["session"] == "chat-1" and by_kind["message"]["role"] == "user"
    assert by_kind["file"]["path"] == "memory/2026-01-01.md"
    only = api.get("/search", token=token_a, q="kafka", kinds="messages,files").json()["results"]
    assert {r["kind"] for r in only} == {"message", "file"}
    first = ids(api.get("/search", token=token_a, q="kafka", limit=1))
    second = ids(api.get("/search", token=token_a, q="kafka", limit=1, offset=1))
    assert len(first) == len(second) == 1 and first != second


def test_default_limit_is_ten(api, agent_a, token_a, make_entry):
    for i in range(12):
        make_entry(agent_a, f"Kafka note {i}")
    assert len(ids(api.get("/search", token=token_a, q="kafka"))) == 10


# --- ranking ------------------------------------------------------------------------------------


def test_recent_entries_rank_higher_when_text_ties(agent_a, make_entry):
    now = timezone.now()
    old = make_entry(agent_a, "Kafka retention is seven days", created_at=now - timedelta(days=200))
    new = make_entry(agent_a, "Kafka retention is seven days", created_at=now - timedelta(days=1))
    assert find(agent_a, "kafka retention") == [new.pk, old.pk]


def test_important_entries_rank_higher_when_text_ties(agent_a, make_entry):
    now = timezone.now()
    low = make_entry(agent_a, "Kafka retention is seven days", importance=0.1, created_at=now)
    high = make_entry(agent_a, "Kafka retention is seven days", importance=0.9, created_at=now)
    assert find(agent_a, "kafka retention") == [high.pk, low.pk]


def test_accessed_entries_rank_higher_when_text_ties(agent_a, make_entry):
    now = timezone.now()
    first = make_entry(agent_a, "Kafka retention is seven days", created_at=now)
    second = make_entry(agent_a, "Kafka retention is seven days", created_at=now)
    assert find(agent_a, "kafka retention")[0] == second.pk  # ties broken by newest id
    services.entries_mark_accessed([first.pk])
    assert find(agent_a, "kafka retention")[0] == first.pk


def test_decisions_decay_slower_than_handoffs(agent_a, make_entry):
    now = timezone.now()
    decision = make_entry(
        agent_a, "Kafka retention", category="decisions", created_at=now - timedelta(days=20)
    )
    handoff = make_entry(agent_a, "Kafka retention", category="handoffs", created_at=now - timedelta(days=20))
    assert find(agent_a, "kafka retention") == [decision.pk, handoff.pk]


# --- snippets -----------------------------------------------------------------------------------


def test_snippet_contains_the_match(api, agent_a, token_a, make_entry):
    filler = "Lorem words about nothing in particular. " * 10
    make_entry(agent_a, filler + "We chose Kafka for the event bus. " + filler)
    result = api.get("/search", token=token_a, q="kafka").json()["results"][0]
    assert "**Kafka**" in result["snippet"]
    assert len(result["snippet"]) <= 140


def test_snippet_marks_stemmed_and_typo_matches(db):
    assert "**deployments**" in snippet_build("The deployments failed", ["deploy"])
    assert snippet_build("short text", []) == "short text"


def test_a_snippet_of_a_long_text_searches_its_window_not_the_rest(db, monkeypatch):
    """A result's snippet marks the matches inside its window of about 120 characters; after the last
    match in a long text (a file, a long message), the rest of the text was searched for one more,
    as long as a search of the whole text (1 MB, seven words: 79.1 against 13.2 ms). The marks are the
    same. Each search the snippet runs is recorded with how far into the text it went."""
    import re

    from vault import search_text

    searched_to: list[int] = []

    class Recorded:
        def __init__(self, regex):
            self.regex = regex

        def finditer(self, text, pos=0, endpos=None):
            """Yields the matches, recording how far the search went: to the last match taken, or to
            its end (`endpos`) when the caller asked for one more match than there were."""
            endpos = len(text) if endpos is None else min(endpos, len(text))
            for match in self.regex.finditer(text, pos, endpos):
                searched_to.append(match.end())
                yield match
            searched_to.append(endpos)

    original_init = search_text.WordMatcher.__init__

    def recorded_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self._regex = Recorded(self._regex)

    monkeypatch.setattr(search_text.WordMatcher, "__init__", recorded_init)
    text = (
        "We chose Kafka for the event bus and the **kafkas** too. " + "lorem ipsum dolor sit amet " * 40_000
    )
    patterns = [re.escape(w) for w in ("kafka", "event", "broker", "topic", "retention", "deploy", "ledger")]
    snippet = snippet_build(text, patterns)
    assert snippet.startswith("We chose **Kafka** for the **event** bus and the ****kafkas**** too.")
    assert searched_to, "the snippet marked its matches without the matcher"
    assert max(searched_to) < 1_000, f"searched {max(searched_to):,} characters of a {len(text):,} one"


@pytest.mark.parametrize("status", ["active", "all"])
def test_pruning_by_text_score_never_changes_the_ranking(agent_a, make_entry, monkeypatch, status):
    """Rows whose text score cannot reach the page skip the other factors (selectors._prune_ratio):
    the page must be exactly the one computed without pruning, whatever ages, importances,
    accesses and statuses say."""
    import random

    from search import selectors
    from vault.models import VaultEntry

    rng = random.Random(7)
    now = timezone.now()
    words = ["ledger", "kafka", "postgres", "queue", "billing"]
    made = []
    for i in range(60):
        picked = [w for w in rng.sample(words, rng.randint(1, 3)) for _ in range(rng.randint(1, 3))]
        text = " ".join(picked) + f" note {i}"
        entry = make_entry(
            agent_a,
            text,
            category=rng.choice(["decisions", "lessons"]),
            importance=round(rng.random(), 2),
            created_at=now - timedelta(days=rng.randint(0, 400)),
        )
        made.append(entry)
    for entry in rng.sample(made, 15):
        VaultEntry.objects.filter(pk=entry.pk).update(
            access_count=rng.randint(1, 30), last_accessed_at=now - timedelta(hours=rng.randint(0, 500))
        )
    for entry in rng.sample(made, 10):
        VaultEntry.objects.filter(pk=entry.pk).update(status="archived")

    def page(limit):
        return [
            (r["id"], r["score"])
            for r in search_run(
                q="ledger kafka",
                scope=SearchScope(agent_a.project_id, [agent_a.pk]),
                filters=SearchFilters(kinds=("entries",), limit=limit, status=status),
            ).results
        ]

    assert selectors._prune_ratio(SearchFilters(status=status)) > 0
    # The clock stands still: scores decay with age, and a later "now" could move a rounded score.
    with time_machine.travel(now, tick=False):
        pruned = {limit: page(limit) for limit in (1, 3, 10, 40)}
        monkeypatch.setattr(selectors, "_prune_ratio", lambda filters: 0.0)
        for limit, results in pruned.items():
            assert results == page(limit), limit
    assert len(pruned[10]) == 10


def test_prefixes_expand_through_the_vocabulary_not_gin_partial_match(agent_a, make_entry):
    """A `:*` item makes GIN read every posting list it covers, which the scope cannot cut: prefixes
    become the English stems of the vocabulary's completions instead."""
    entry = make_entry(agent_a, "Playwright drives the deployment checks")
    compiled = query_compile("playwr deploym")
    assert ":*" not in compiled.match and ":*" not in compiled.match_all
    assert "'playwright'" in compiled.match and "'deploy'" in compiled.match
    assert find(agent_a, "playwr deploym") == [entry.pk]


def test_a_ranking_query_error_comes_out_as_a_django_database_error(agent_a, make_entry, monkeypatch):
    from django.db import DatabaseError, transaction

    from search import selectors

    make_entry(agent_a, "ledger")
    broken = selectors._text_score_sql

    def bad_sql(alias, compiled, params):
        return broken(alias, compiled, params) + " + 'not a number'::float8"

    monkeypatch.setattr(selectors, "_text_score_sql", bad_sql)
    with pytest.raises(DatabaseError), transaction.atomic():
        find(agent_a, "ledger")
    monkeypatch.setattr(selectors, "_text_score_sql", broken)
    assert len(find(agent_a, "ledger")) == 1  # the connection is usable afterwards


def test_ranking_queries_are_prepared_once_and_reused(agent_a, make_entry):
    """Planning the ranking query cost more than running it (2-5 ms): it is a prepared statement
    with a generic plan. Django turns psycopg's preparing off by default; settings turn it on."""
    from django.db import connection

    make_entry(agent_a, "ledger replication lag")
    for _ in range(3):
        find(agent_a, "ledger replication")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%FROM vault_vaultentry%search_vector @@%"],
        )
        plans = cursor.fetchall()
    assert plans and max(generic for generic, _ in plans) >= 3
    assert all(custom == 0 for _, custom in plans)


# (A q over 1,000 characters never gets this far: the API's parameter schema refuses it first.)
@pytest.mark.parametrize("q", [" ".join(f"word{i}" for i in range(40)), "a\x00b"])
def test_a_query_refused_costs_no_embedding(api, token_a, monkeypatch, q):
    from search import fusion

    started = []
    monkeypatch.setattr(fusion, "semantic_rows_start", lambda *args, **kwargs: started.append(args))
    monkeypatch.setattr(fusion, "resolve_mode", lambda mode: "hybrid")
    response = api.get("/search", q=q, token=token_a)
    assert response.status_code == 422, response.content
    assert response.json()["detail"]
    assert started == []


@pytest.mark.parametrize(
    ("stored", "other", "q"),
    [
        ("We upgraded the workers to Python 3.11", "We upgraded the workers to Ruby 3.11", "py3.11"),
        ("We upgraded the workers to Python 3.11", "We upgraded the workers to Ruby 3.11", "py 3.11 upgrade"),
        ("The Kubernetes autoscaler is capped at 40 nodes", "The Nomad autoscaler is capped at 40 nodes", "k8s autoscaler"),
        ("Staging runs on k8s with two node pools", "Staging runs on Nomad with two node pools", "kubernetes node pools"),
        ("The payments repository moved to GitLab", "The payments team moved to GitLab", "payments repo"),
        ("Open a pull request for every schema change", "Open a ticket for every schema change", "PR schema change"),
        ("O banco de dados de faturamento fica em São Paulo", "O time de faturamento fica em São Paulo", "bd faturamento"),
        ("The invoices db is restored every Sunday", "The invoices cache is restored every Sunday", "invoices database restored"),
    ],
)  # fmt: skip
def test_an_abbreviation_and_the_word_it_stands_for_find_each_other(agent_a, make_entry, stored, other, q):
    """ "py3.11" finds "Python 3.11", "k8s" finds Kubernetes and back: a query word also matches what it
    abbreviates, or the abbreviation of it (search/abbreviations.py). `other` holds the query's other
    words: only the abbreviation tells the two apart."""
    wanted = make_entry(agent_a, stored)
    make_entry(agent_a, other)
    assert find(agent_a, q)[0] == wanted.pk


def test_a_file_extension_is_not_matched_by_the_language_it_abbreviates(agent_a, make_entry):
    """ "python" does not match every path ending in .py: "py" is an abbreviation of Python only one way."""
    make_entry(agent_a, "The retry loop lives in workers/queue_runner.py")
    assert find(agent_a, "python") == []
    assert query_compile("python").match == "'python'"
    assert "'python'" in query_compile("py").match


@pytest.mark.parametrize(
    ("q", "text", "marked"),
    [
        ("k8s", "The Kubernetes cluster is capped at 40 nodes", "**Kubernetes**"),
        ("py3.11", "We upgraded to Python 3.11 last week", "**Python**"),
    ],
)
def test_an_abbreviations_written_out_form_is_highlighted(agent_a, make_entry, q, text, marked):
    make_entry(agent_a, text)
    assert marked in snippet_build(text, query_compile(q).patterns)


def test_a_pages_snippets_share_one_matcher_of_the_query(api, agent_a, token_a, make_entry, monkeypatch):
    """The ten snippets of a page mark the same query's words: its matcher (an alternation sorted and
    compiled, each pattern checked) is made once, not once a result."""
    from search import snippets

    made = []
    make = snippets.WordMatcher
    monkeypatch.setattr(
        snippets, "WordMatcher", lambda patterns, **kw: made.append(patterns) or make(patterns, **kw)
    )
    for i in range(10):
        make_entry(agent_a, f"We chose Kafka for the event bus, part {i}.")
    results = api.get("/search", token=token_a, q="kafka event").json()["results"]
    assert len(results) == 10 and all("**Kafka**" in r["snippet"] for r in results)
    assert len(made) <= 1


def test_a_long_querys_ranking_statement_is_converted_by_psycopg_once(agent_a, make_entry, monkeypatch):
    """psycopg keeps its conversion of a statement's placeholders only for statements of at most 4,096
    characters: the ranking statement of a question of several words is sent without its indentation,
    so a second search of the same shape is not converted again."""
    from psycopg import _queries

    converted = []
    convert = _queries._query2pg_nocache
    monkeypatch.setattr(_queries, "_query2pg_nocache", lambda *a: converted.append(a) or convert(*a))
    words = "kafka event bus decision payments service east region rollout canary migration schema"
    make_entry(agent_a, words)
    q = words  # twelve words: 4,373 characters with the indentation, 3,994 without
    scope, filters = (
        SearchScope(agent_a.project_id, [agent_a.pk]),
        SearchFilters(kinds=("entries",), mode="lexical"),
    )
    assert search_run(q=q, scope=scope, filters=filters).results
    converted.clear()
    assert search_run(q=q, scope=scope, filters=filters).results
    assert converted == []
