"""Embeddings and the semantic arm: computed off the request path, never crossing tenants, re-made
on edits and model changes, and absent without harm where the database has no pgvector."""

import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from django_q.models import Schedule

from memoryproject.embeddings import OpenAICompatibleEmbedder, embedder_get
from search import semantic, tasks
from search.embedding_index import (
    chunks_split,
    embeddings_pending_count,
    embeddings_refresh,
    pgvector_installed,
)
from search.models import Embedding
from search.semantic import semantic_enabled, semantic_search, semantic_status
from vault import services
from vault.models import WorkspaceFile
from vault.services import EntryChanges
from vault.workspace_templates import DEFAULT_WORKSPACE_FILES

pytestmark = pytest.mark.django_db

needs_pgvector = pytest.mark.usefixtures("with_pgvector")
without_pgvector = pytest.mark.usefixtures("no_pgvector")


@pytest.fixture
def with_pgvector(db):
    if not pgvector_installed():
        pytest.skip("this database has no pgvector")


@pytest.fixture
def no_pgvector(db):
    if pgvector_installed():
        pytest.skip("this database has pgvector (the run on PostgreSQL 15 covers this)")


@pytest.fixture(scope="session")
def local_model():
    """The bundled model, loaded once for the whole test session."""
    embedder = embedder_get()
    embedder.embed_query("warm up")
    return embedder


@pytest.fixture(autouse=True)
def fresh_pending_count():
    semantic._pending_cache.clear()


def hide_starting_files():
    """Soft-delete the four starting files every agent gets, so that each test embeds a handful of
    texts (the model runs on the CPU) and counts only its own items."""
    WorkspaceFile.objects.filter(path__in=[path for path, _, _ in DEFAULT_WORKSPACE_FILES]).update(
        deleted_at=timezone.now()
    )


def refresh():
    hide_starting_files()
    return embeddings_refresh()


def ids(hits, kind="entry"):
    return [hit.object_id for hit in hits if hit.kind == kind]


def bare_embeddings(agent, model, n, start, kind="entry"):
    """n embedding rows of `agent` for items `start`.. (no such items: only the vectors are searched),
    their vector set by the test."""
    return [
        Embedding(
            kind=kind,
            object_id=start + i,
            project_id=agent.project_id,
            agent=agent,
            model=model.model_id,
            dimensions=model.dimensions,
            source_hash="x",
        )
        for i in range(n)
    ]


@needs_pgvector
def test_it_finds_a_paraphrase_that_shares_no_word_with_the_query(agent_a, make_entry, local_model):
    puppy = make_entry(agent_a, "I adopted a puppy last spring")
    make_entry(agent_a, "The quarterly revenue report is due on Friday")
    make_entry(agent_a, "Deploys go through the staging cluster first")
    refresh()
    hits = semantic_search(
        project_id=agent_a.project_id, agent_id=agent_a.pk, kinds={"entries"}, query="got a new dog", limit=3
    )
    assert ids(hits)[0] == puppy.pk
    assert hits[0].similarity > hits[1].similarity


@needs_pgvector
def test_embeddings_never_cross_agents_or_projects(agent_a, agent_b, outsider_agent, make_entry, local_model):
    mine = make_entry(agent_a, "Our cat sleeps on the keyboard")
    theirs = make_entry(agent_b, "Our cat sleeps on the keyboard every morning")
    outsider = make_entry(outsider_agent, "Our cat sleeps on the keyboard all day")
    refresh()
    query = {"kinds": {"entries", "messages", "files"}, "query": "a cat on the keyboard", "limit": 10}
    as_agent_a = semantic_search(project_id=agent_a.project_id, agent_id=agent_a.pk, **query)
    assert ids(as_agent_a) == [mine.pk]
    as_project = semantic_search(project_id=agent_a.project_id, agent_id=None, **query)
    assert set(ids(as_project)) == {mine.pk, theirs.pk}
    as_outsider = semantic_search(project_id=outsider_agent.project_id, agent_id=None, **query)
    assert ids(as_outsider) == [outsider.pk]
    # An agent id of another project never widens a project's scope.
    assert semantic_search(project_id=agent_a.project_id, agent_id=outsider_agent.pk, **query) == []
    stored = Embedding.objects.get(kind="entry", object_id=theirs.pk)
    assert (stored.project_id, stored.agent_id) == (agent_b.project_id, agent_b.pk)


@needs_pgvector
def test_messages_and_chunked_files_are_found_once_each(agent_a, make_message, local_model):
    message = make_message(agent_a, "We are flying to Lisbon for the conference in May")
    make_message(agent_a, "tool output", role="tool")
    filler = "\n\n".join(f"Paragraph {i} lists the office supplies we ordered." for i in range(60))
    services.file_write(
        agent=agent_a,
        path="memory/notes.md",
        content=filler + "\n\nThe server room is too hot in summer.\n\n" + filler,
        changed_by="test",
    )
    refresh()
    assert Embedding.objects.filter(kind="message").count() == 1  # tool output is not embedded
    assert Embedding.objects.filter(kind="file").count() > 2
    scope = {"project_id": agent_a.project_id, "agent_id": agent_a.pk, "kinds": {"messages", "files"}}
    hits = semantic_search(query="trip to Portugal", limit=5, **scope)
    assert hits[0].kind == "message" and hits[0].object_id == message.pk
    hits = semantic_search(query="the machines overheat when it is warm", limit=20, **scope)
    notes = WorkspaceFile.objects.get(agent=agent_a, path="memory/notes.md", deleted_at=None)
    assert (hits[0].kind, hits[0].object_id) == ("file", notes.pk)
    found = [(hit.kind, hit.object_id) for hit in hits]
    assert len(found) == len(set(found))  # a file's best chunk stands for the file


@needs_pgvector
def test_an_edit_marks_the_entry_stale_and_the_refresh_reembeds_it(agent_a, make_entry, local_model):
    entry = make_entry(agent_a, "The build uses Maven")
    make_entry(agent_a, "Lunch is at noon")
    refresh()
    assert embeddings_pending_count() == 0
    services.entry_update(
        entry_id=entry.pk, changes=EntryChanges(content="We bake sourdough bread on Sundays"), changed_by="t"
    )
    assert embeddings_pending_count() == 1
    outcome = refresh()
    assert outcome.embedded == 1 and embeddings_pending_count() == 0
    hits = semantic_search(
        project_id=agent_a.project_id, agent_id=agent_a.pk, kinds={"entry"}, query="baking", limit=1
    )
    assert ids(hits) == [entry.pk]


@needs_pgvector
def test_deleted_items_lose_their_embeddings(agent_a, make_entry, local_model):
    entry = make_entry(agent_a, "Temporary note about the printer")
    services.file_write(agent=agent_a, path="memory/x.md", content="printer notes", changed_by="t")
    refresh()
    services.entry_delete(entry_id=entry.pk, deleted_by="t")
    services.file_delete(agent=agent_a, path="memory/x.md", deleted_by="t")
    assert refresh().removed == 2
    assert not Embedding.objects.exists()


@needs_pgvector
def test_a_model_change_reembeds_everything_and_search_uses_only_the_new_model(
    agent_a, make_entry, local_model, settings
):
    make_entry(agent_a, "Invoices are sent on the first of the month")
    refresh()
    old_model = embedder_get().model_id
    settings.MEMORY_EMBEDDINGS_LOCAL_VARIANT = "original"
    new_model = embedder_get().model_id
    assert new_model != old_model
    assert embeddings_pending_count() == 1
    query = {"project_id": agent_a.project_id, "agent_id": agent_a.pk, "kinds": {"entries"}, "limit": 5}
    assert semantic_search(query="billing", **query) == []  # old vectors are not compared
    refresh()
    assert list(Embedding.objects.values_list("model", flat=True)) == [new_model]
    assert len(semantic_search(query="billing", **query)) == 1


@needs_pgvector
def test_healthz_and_stats_report_the_backend_model_and_pending_items(
    api, agent_a, outsider_agent, make_entry, admin_token, outsider_token, local_model
):
    make_entry(agent_a, "one")
    make_entry(agent_a, "two")
    make_entry(outsider_agent, "three")
    hide_starting_files()
    health = Client().get("/healthz").json()["embeddings"]
    assert health == {"backend": "local", "model": local_model.model_id, "pending": 3, "enabled": True}
    assert api.get("/stats", token=admin_token).json()["embeddings"]["pending"] == 2
    assert api.get("/stats", token=outsider_token).json()["embeddings"]["pending"] == 1
    refresh()
    assert api.get("/stats", token=admin_token).json()["embeddings"]["pending"] == 0
    # The whole-database count of the unauthenticated /healthz is reused for 30 s.
    assert Client().get("/healthz").json()["embeddings"]["pending"] == 3
    semantic._pending_cache.clear()
    assert Client().get("/healthz").json()["embeddings"]["pending"] == 0


@needs_pgvector
def test_the_backfill_command_counts_with_dry_run_then_embeds(agent_a, make_entry, local_model):
    make_entry(agent_a, "alpha")
    make_entry(agent_a, "beta")
    hide_starting_files()
    out = StringIO()
    call_command("embed_backfill", "--dry-run", stdout=out)
    assert "2 item(s) would be embedded" in out.getvalue()
    assert not Embedding.objects.exists()
    out = StringIO()
    call_command("embed_backfill", stdout=out)
    assert "2/2 items" in out.getvalue() and "Embedded 2 item(s)" in out.getvalue()
    assert Embedding.objects.count() == 2


def test_the_backfill_command_says_so_when_another_process_is_embedding(monkeypatch):
    """While the background job held the refresh lock, the command did nothing and printed "Embedded 0
    item(s) ... 0 still pending.", as if everything were embedded, and exited 0."""
    from types import SimpleNamespace

    from django.core.management import CommandError
    from django.db import connections

    from search import embedding_index
    from search.management.commands import embed_backfill

    status = {"backend": "local", "enabled": True, "model": "m", "pending": 0}
    monkeypatch.setattr(embed_backfill, "semantic_status", lambda **kwargs: status)
    monkeypatch.setattr(embedding_index, "embedder_get", lambda: SimpleNamespace(model_id="m", dimensions=3))
    monkeypatch.setattr(embedding_index, "vector_storage_ensure", lambda: True)
    other = connections.create_connection("default")  # the background job's connection
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [embedding_index.ADVISORY_LOCK_KEY])
        out = StringIO()
        with pytest.raises(CommandError, match="another process is embedding now"):
            call_command("embed_backfill", stdout=out)
        assert "still pending" not in out.getvalue()
    finally:
        other.close()


@pytest.mark.parametrize("size", ["0", "-1", "2049"])
def test_the_backfill_command_refuses_a_batch_size_out_of_range(agent_a, make_entry, size):
    """--batch-size -1 embedded nothing and exited 0 ("90 still pending"); 0 quietly meant the default."""
    from django.core.management import CommandError

    make_entry(agent_a, "alpha")
    out = StringIO()
    with pytest.raises(
        CommandError,
        match=rf"^--batch-size must be between 1 and 2048 \(as MEMORY_EMBEDDINGS_BATCH\), got {size}$",
    ) as failure:
        call_command("embed_backfill", "--batch-size", size, stdout=out, stderr=StringIO())
    assert failure.value.returncode == 1 and "Embedded" not in out.getvalue()


def test_the_refresh_job_is_scheduled_and_runs(agent_a, make_entry):
    call_command("setup_schedules", stdout=StringIO())
    schedule = Schedule.objects.get(name="search: embed new and edited items")
    assert schedule.func == "search.tasks.embeddings_refresh_scheduled"
    assert schedule.minutes == settings.MEMORY_EMBEDDINGS_INTERVAL_MINUTES
    make_entry(agent_a, "gamma")
    hide_starting_files()
    result = tasks.embeddings_refresh_scheduled()
    assert result["embedded"] == (1 if pgvector_installed() else 0)


def _lexical_search_works(api, token_a, make_entry, agent_a):
    make_entry(agent_a, "Kafka partitions are keyed by tenant")
    response = api.get("/search", token=token_a, q="kafka", agent="agent-a")
    assert response.status_code == 200
    assert [result["kind"] for result in response.json()["results"]] == ["entry"]


@without_pgvector
def test_without_pgvector_search_works_and_says_semantic_is_off(api, token_a, agent_a, make_entry):
    _lexical_search_works(api, token_a, make_entry, agent_a)
    assert not semantic_enabled()
    health = Client().get("/healthz").json()
    assert health["status"] == "ok"
    assert health["embeddings"]["enabled"] is False and "pgvector" in health["embeddings"]["detail"]
    assert refresh().embedded == 0
    err = StringIO()
    call_command("embed_backfill", stdout=StringIO(), stderr=err)
    assert "pgvector is not installed" in err.getvalue()
    assert (
        semantic_search(project_id=agent_a.project_id, agent_id=None, kinds={"entries"}, query="x", limit=5)
        == []
    )


def test_with_pgvector_reported_missing_everything_but_semantic_search_works(
    api, token_a, agent_a, make_entry, monkeypatch
):
    from django.db import connection

    monkeypatch.setitem(semantic._pgvector_by_database, connection.settings_dict["NAME"], False)
    _lexical_search_works(api, token_a, make_entry, agent_a)
    status = semantic_status()
    assert status["enabled"] is False and status["detail"] == semantic.NO_PGVECTOR
    assert (
        semantic_search(project_id=agent_a.project_id, agent_id=None, kinds={"entries"}, query="x", limit=5)
        == []
    )


def test_with_embeddings_off_search_works_and_nothing_is_embedded(
    api, token_a, agent_a, make_entry, settings
):
    settings.MEMORY_EMBEDDINGS = "off"
    _lexical_search_works(api, token_a, make_entry, agent_a)
    assert not semantic_enabled()
    health = Client().get("/healthz").json()["embeddings"]
    assert health["backend"] == "off" and health["enabled"] is False and health["pending"] == 0
    assert refresh().embedded == 0 and not Embedding.objects.exists()


OFFLINE_SCRIPT = """
import os, socket
def refuse(*args, **kwargs):
    raise OSError("network access attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from memoryproject.embeddings import LocalEmbedder
embedder = LocalEmbedder("enpt")
vector = embedder.embed_query("offline query")
print(len(vector), embedder.model_id)
"""


def test_the_local_model_loads_and_embeds_with_the_network_cut_off():
    command = [sys.executable, "-c", OFFLINE_SCRIPT]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-rn", *command]  # no network namespace interface at all, on top of the patch
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "NO_PROXY": "*"}
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=settings.BASE_DIR, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "384"


def test_chunks_break_at_paragraphs_and_cover_the_text():
    text = "\n\n".join(f"paragraph {i} " + "word " * 30 for i in range(10))
    chunks = chunks_split(text, 400, 100)
    assert all(len(chunk) <= 400 for chunk in chunks)
    assert all(chunk.startswith("paragraph") for chunk in chunks)
    assert " ".join(chunks).split() == text.split()
    assert len(chunks_split(text, 400, 2)) == 2


class FakeEmbeddingsServer(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeEmbeddingsServer.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), **body}
        )
        data = [
            {"index": i, "embedding": [3.0, 0.0, 0.0, 4.0] if text.endswith("a") else [0.0, 2.0, 0.0, 0.0]}
            for i, text in enumerate(body["input"])
        ]
        payload = json.dumps({"data": list(reversed(data))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_the_openai_compatible_client_sends_prefixes_and_key_and_checks_dimensions(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddingsServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings.MEMORY_EMBEDDINGS_QUERY_PREFIX = "query: "
        settings.MEMORY_EMBEDDINGS_PASSAGE_PREFIX = "passage: "
        url = f"http://127.0.0.1:{server.server_port}/v1"
        client = OpenAICompatibleEmbedder(url=url, model="e5", dimensions=4, api_key="k")
        # Answered out of order and not normalised: put back in order, L2-normalised.
        assert client.embed_passages(["a", "bbb"]) == [[0.6, 0.0, 0.0, 0.8], [0.0, 1.0, 0.0, 0.0]]
        assert client.embed_query("x") == [0.0, 1.0, 0.0, 0.0]
        sent = FakeEmbeddingsServer.requests
        assert sent[0]["path"] == "/v1/embeddings" and sent[0]["auth"] == "Bearer k"
        assert sent[0]["input"] == ["passage: a", "passage: bbb"] and sent[1]["input"] == ["query: x"]
        assert "dimensions" not in sent[0]
        from memoryproject.embeddings import EmbeddingError

        with pytest.raises(EmbeddingError, match="answered 4 dimensions"):
            OpenAICompatibleEmbedder(url=url, model="e5", dimensions=3).embed_query("x")
    finally:
        server.shutdown()


@needs_pgvector
def test_a_run_out_of_time_leaves_the_rest_pending_for_the_next(agent_a, make_entry, local_model):
    make_entry(agent_a, "first")
    make_entry(agent_a, "second")
    hide_starting_files()
    outcome = embeddings_refresh(max_seconds=0)
    assert (outcome.embedded, outcome.pending) == (0, 2)
    assert embeddings_refresh(batch_size=1).embedded == 2
    assert embeddings_pending_count() == 0


@needs_pgvector
def test_an_unreachable_embedding_server_leaves_semantic_search_empty_not_failing(agent_a, settings):
    settings.MEMORY_EMBEDDINGS = "openai"
    settings.MEMORY_EMBEDDINGS_URL = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    settings.MEMORY_EMBEDDINGS_MODEL = "absent"
    settings.MEMORY_EMBEDDINGS_MAX_RETRIES = 0
    hits = semantic_search(
        project_id=agent_a.project_id, agent_id=agent_a.pk, kinds={"entries"}, query="anything", limit=5
    )
    assert hits == []


def test_a_query_is_embedded_on_the_configured_threads_and_the_thread_is_restored(local_model, settings):
    """A search query is embedded while PostgreSQL runs the lexical arm: the model must leave it a
    core (MEMORY_EMBEDDINGS_QUERY_THREADS), and only for that call, in that thread."""
    model = local_model._loaded()
    lib = model._lib
    before = lib.omp_get_max_threads()
    seen = []
    original = model.query

    def recording(text):
        seen.append(lib.omp_get_max_threads())
        return original(text)

    settings.MEMORY_EMBEDDINGS_QUERY_THREADS = 1
    model.query = recording
    try:
        vector = embedder_get().embed_query("which cache did we choose")
    finally:
        del model.query
    assert seen == [1]
    assert lib.omp_get_max_threads() == before  # passages embedded later in this thread use every core
    assert len(vector) == local_model.dimensions


def test_by_default_a_query_is_embedded_on_the_thread_count_measured_fastest(local_model, settings):
    """MEMORY_EMBEDDINGS_QUERY_THREADS=0: each candidate count is tried in turn and timed, each time
    a token (memoryproject/query_threads.py); a configured count is used as it is, untimed."""
    from memoryproject.query_threads import ThreadsChooser

    model = local_model._loaded()
    lib = model._lib
    seen = []
    original = model.query

    def recording(text):
        seen.append(lib.omp_get_max_threads())
        return original(text)

    chooser = ThreadsChooser((1, 2))
    local_model.threads_chooser, kept = chooser, local_model.threads_chooser
    model.query = recording
    try:
        settings.MEMORY_EMBEDDINGS_QUERY_THREADS = 0
        for _ in range(4):
            embedder_get().embed_query("which cache did we choose")
        assert seen == [1, 2, 1, 2]
        assert all(ms_a_token is not None and ms_a_token > 0 for ms_a_token in chooser.state().values())
        settings.MEMORY_EMBEDDINGS_QUERY_THREADS = 2
        before = chooser.state()
        embedder_get().embed_query("which cache did we choose")
        assert seen[-1] == 2 and chooser.state() == before
        # A count picked beforehand (search.semantic.query_vector_begin) is the one used, and timed.
        settings.MEMORY_EMBEDDINGS_QUERY_THREADS = 0
        picked = local_model.query_threads_pick()
        embedder_get().embed_query("which cache did we choose", picked)
        assert seen[-1] == picked and chooser.state() != before
        # A count the caller fixed beside other work (search.semantic.query_vector_start) is not timed.
        before = chooser.state()
        embedder_get().embed_query("which cache did we choose", 1, timed=False)
        assert seen[-1] == 1 and chooser.state() == before
    finally:
        del model.query
        local_model.threads_chooser = kept


def test_a_query_vector_does_not_depend_on_the_thread_count(local_model):
    """Why the thread count may be chosen by time alone: each output of the engine is computed by one
    thread, so one and two threads give the same bits (and the same ranking)."""
    from memoryproject.embeddings import _omp_threads

    model = local_model._loaded()
    text = "quais decisões tomamos sobre o cache de consultas na semana passada?"
    with _omp_threads(model, 1):
        one = model.query(text).tolist()
    with _omp_threads(model, 2):
        two = model.query(text).tolist()
    assert one == two


@needs_pgvector
def test_a_large_scope_is_counted_once_a_minute_and_a_small_one_every_time(agent_a, agent_b, local_model):
    """The scope's size only chooses between the exact scan and the HNSW index: a large scope's
    count is reused for a minute (one statement less per hybrid search), a small one's is not."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    semantic._scope_rows_cache.clear()
    Embedding.objects.bulk_create(bare_embeddings(agent_a, local_model, semantic.SCOPE_CACHE_MIN_ROWS, 10**9))
    Embedding.objects.bulk_create(bare_embeddings(agent_b, local_model, 3, 2 * 10**9))
    vector = tuple(local_model.embed_query("cache decision"))
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE search_embedding SET vector = %s::vector WHERE agent_id IN (%s, %s)",
            ["[" + ",".join(map(str, vector)) + "]", agent_a.pk, agent_b.pk],
        )

    def counts(agent):
        with CaptureQueriesContext(connection) as queries:
            for _ in range(2):
                semantic_search(
                    project_id=agent.project_id,
                    agent_id=agent.pk,
                    kinds={"entries"},
                    query="cache decision",
                    limit=5,
                    vector=vector,
                )
        return sum("SELECT count(*) FROM (SELECT 1 FROM search_embedding" in q["sql"] for q in queries)

    assert counts(agent_a) == 1
    assert counts(agent_b) == 2
    semantic._scope_rows_cache.clear()


@needs_pgvector
def test_an_agents_exact_scan_can_read_its_vectors_from_the_scope_index_alone(
    agent_a, make_entry, local_model
):
    """The exact scan of one agent needs no table page: every column it reads is in the scope index
    (an index-only scan), so a new column in the query that the index lacks fails here."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from search.embedding_index import vector_indexes_ensure

    make_entry(agent_a, "We cache sessions in Redis.")
    refresh()
    vector_indexes_ensure(local_model.dimensions)
    with CaptureQueriesContext(connection) as queries:
        semantic_search(
            project_id=agent_a.project_id, agent_id=agent_a.pk, kinds={"entries"}, query="cache", limit=5
        )
    scan = next(q["sql"] for q in queries if "min(distance)" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN " + scan)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"Index Only Scan using search_embedding_scope_{local_model.dimensions}" in plan, plan


@needs_pgvector
def test_vector_indexes_are_made_only_for_the_dimensions_they_can_hold():
    from django.db import connection

    from search.embedding_index import vector_indexes_ensure

    def exists(name):
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
            return cursor.fetchone()[0]

    vector_indexes_ensure(768)  # too wide for a b-tree entry, fine for HNSW
    vector_indexes_ensure(3072)  # too wide for both: exact scans from the table
    assert exists("search_embedding_hnsw_768") and not exists("search_embedding_scope_768")
    assert not exists("search_embedding_hnsw_3072") and not exists("search_embedding_scope_3072")
    vector_indexes_ensure(128)
    assert exists("search_embedding_hnsw_128") and exists("search_embedding_scope_128")


@needs_pgvector
def test_an_index_left_invalid_by_an_interrupted_build_is_built_again():
    """CREATE INDEX CONCURRENTLY interrupted (the job stopped, the server restarted) leaves an
    invalid index that the planner ignores: the next run must build it again, not take it for built."""
    from django.db import ProgrammingError, connection, transaction

    from search.embedding_index import vector_indexes_ensure

    vector_indexes_ensure(96)
    name = "search_embedding_scope_96"

    def valid():
        with connection.cursor() as cursor:
            cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
            return cursor.fetchone()[0]

    assert valid() is True
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", [name]
            )
    except ProgrammingError:
        pytest.skip("this database role may not mark an index invalid")
    assert valid() is False
    vector_indexes_ensure(96)
    assert valid() is True


@needs_pgvector
def test_an_agent_above_the_exact_scan_size_walks_an_hnsw_index_of_its_own(
    agent_a, agent_b, make_entry, local_model, monkeypatch
):
    """Above MEMORY_SEMANTIC_EXACT_MAX_ROWS an agent's semantic search walks a graph; the shared graph
    made its filtered walk visit every other tenant's vectors. Such an agent gets a partial HNSW index
    (the planner takes it: the statement names the agent), the others do not, and it goes when the
    agent's vectors do."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from search.embedding_index import agent_index_name, agent_vector_indexes_ensure

    monkeypatch.setattr(settings, "MEMORY_SEMANTIC_EXACT_MAX_ROWS", 4)
    monkeypatch.setattr(semantic, "EXACT_SCAN_MAX_ROWS", 4)
    for text in [
        "Redis caches sessions",
        "Kafka carries orders",
        "Postgres keeps invoices",
        "Nginx fronts the API",
        "S3 holds the backups",
        "Grafana shows latency",
    ]:
        make_entry(agent_a, text)
    make_entry(agent_b, "Redis caches sessions for the billing service")
    refresh()
    dimensions = local_model.dimensions
    with connection.cursor() as cursor:
        # The test's transaction still holds the new rows' deferred foreign-key checks, and an index
        # cannot be built over pending trigger events (the job runs outside any transaction).
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    agent_vector_indexes_ensure(dimensions, local_model.model_id)

    def exists(name):
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
            return cursor.fetchone()[0]

    own, other = agent_index_name(dimensions, agent_a.pk), agent_index_name(dimensions, agent_b.pk)
    assert exists(own) and not exists(other)
    with CaptureQueriesContext(connection) as queries:
        hits = semantic_search(
            project_id=agent_a.project_id,
            agent_id=agent_a.pk,
            kinds={"entries"},
            query="session cache",
            limit=3,
        )
    assert hits and {hit.object_id for hit in hits} <= set(agent_a.entries.values_list("pk", flat=True))
    scan = next(q["sql"] for q in queries.captured_queries if "min(distance)" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + scan)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"Index Scan using {own} " in plan, plan
    Embedding.objects.filter(agent_id=agent_a.pk).delete()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    agent_vector_indexes_ensure(dimensions, local_model.model_id)
    assert not exists(own)


def test_the_embedding_job_looks_for_large_agents_after_a_change_or_once_an_hour(monkeypatch):
    from search import embedding_index
    from search.embedding_index import RefreshOutcome, agent_indexes_due

    monkeypatch.setattr(embedding_index, "_agent_indexes_checked", 1000.0)
    assert agent_indexes_due(RefreshOutcome(embedded=3), 1001.0)
    assert agent_indexes_due(RefreshOutcome(removed=1), 1001.0)
    assert not agent_indexes_due(RefreshOutcome(), 1001.0)
    assert agent_indexes_due(RefreshOutcome(), 1000.0 + embedding_index.AGENT_INDEXES_CHECK_SECONDS + 1)
    monkeypatch.setattr(embedding_index, "_agent_indexes_checked", float("-inf"))
    assert agent_indexes_due(RefreshOutcome(), 0.0)  # a process's first run: upgraded with large agents


def test_the_backfill_progress_tells_the_time_left_from_the_recent_rate():
    """Items get slower kind by kind (a day's note's long chunks after short messages): the time left
    follows the rate of the last seconds, not the average since the start (which said "9 s left" for
    minutes)."""
    from search.management.commands.embed_backfill import Command

    out = StringIO()
    command = Command(stdout=out)
    for second in range(0, 61, 5):  # 100 items/s for a minute
        command._progress(second * 100, 10_000, now=1000.0 + second)
    for second in range(5, 31, 5):  # then 10 items/s
        command._progress(6000 + second * 10, 10_000, now=1060.0 + second)
    last = out.getvalue().rsplit("\r", 1)[-1]
    assert "6300/10000 items, 10.0 items/s, 370 s left" in last


def test_a_query_is_cut_to_its_first_tokens_at_a_space():
    from memoryproject.embeddings import query_clip

    def words(text):  # one token a word, as a stand-in for the model's tokenizer
        return len(text.split())

    text = "one two three four five six"
    assert query_clip(text, 10, words) == text
    assert query_clip(text, 0, words) == text  # no cap
    assert query_clip(text, 4, words) == "one two three four"
    assert query_clip("x" * 50, 10, len) == "x" * 10  # no space to cut at: characters
    assert query_clip("ab " + "y" * 40, 10, len) == "ab"


def test_a_long_query_costs_the_local_model_at_most_its_token_cap(local_model, settings):
    import random
    import string

    model = local_model._loaded()
    seen = []
    original = model.query

    def recording(text):
        seen.append(text)
        return original(text)

    rng = random.Random(7)
    noise = " ".join("".join(rng.choice(string.ascii_letters) for _ in range(30)) for _ in range(32))
    question = "which cache did we choose for the checkout sessions"
    settings.MEMORY_EMBEDDINGS_QUERY_MAX_TOKENS = 128
    model.query = recording
    try:
        assert model.token_count(noise, is_query=True) > 500
        embedder_get().embed_query(noise)
        embedder_get().embed_query(question)
    finally:
        del model.query
    clipped, asked = seen
    assert model.token_count(clipped, is_query=True) <= 128 and noise.startswith(clipped)
    assert len(clipped) > 100  # as much as fits, not a word or two
    assert asked == question


@needs_pgvector
@pytest.mark.parametrize("exact_max", [0, 400], ids=["every page", "some pages"])
def test_a_large_scopes_similarity_is_taken_over_all_its_kinds_and_history(
    agent_a, local_model, monkeypatch, exact_max
):
    """A scope walked through the HNSW index scales a hit by the query's similarity to a sample of the
    scope (ScopeSimilarity). It was the first chunks the scan met: with 400 entries stored before 400
    messages, only entries, though the search was of both kinds. The sample's pages are all of the
    table when the scope may be as small as one chunk, about half of it when the scope holds more
    than 400 (the exact-scan limit here)."""
    from django.db import connection

    monkeypatch.setattr(semantic, "EXACT_SCAN_MAX_ROWS", exact_max)  # walk the index above this size
    monkeypatch.setattr(semantic, "STATS_SAMPLE_ROWS", 100)
    monkeypatch.setattr(semantic, "_sample_cache", {}, raising=False)

    Embedding.objects.bulk_create(bare_embeddings(agent_a, local_model, 400, 10**9, kind="entry"))
    Embedding.objects.bulk_create(bare_embeddings(agent_a, local_model, 400, 2 * 10**9, kind="message"))
    query = tuple(local_model.embed_query("the invoice rounding bug in the billing service"))
    near = local_model.embed_query("billing rounds invoice totals wrongly")
    far = local_model.embed_query("we hiked up the mountain on Saturday morning")
    with connection.cursor() as cursor:
        for kind, vector in (("entry", far), ("message", near)):
            cursor.execute(
                "UPDATE search_embedding SET vector = %s::vector WHERE agent_id = %s AND kind = %s",
                ["[" + ",".join(map(str, vector)) + "]", agent_a.pk, kind],
            )

    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True)) / (
            sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
        )

    hits = semantic_search(
        project_id=agent_a.project_id,
        agent_id=agent_a.pk,
        kinds={"entries", "messages"},
        query="invoice rounding",
        limit=5,
        vector=query,
    )
    both = (cosine(query, near) + cosine(query, far)) / 2
    assert 50 <= hits.scope.count <= 200
    # about half of each kind: the mean lies between the two similarities, near their middle
    assert abs(hits.scope.mean - both) < 0.25 * (cosine(query, near) - cosine(query, far))
    assert hits.scope.sd > 0.25 * (cosine(query, near) - cosine(query, far))


@needs_pgvector
def test_an_edited_file_keeps_the_vectors_of_its_unchanged_chunks(
    agent_a, local_model, monkeypatch, settings
):
    """A day's note grows all day and is re-embedded after each change: only its new or changed chunks
    go through the model (it re-embedded every chunk, up to 64 of 1,500 characters, on each run)."""
    settings.MEMORY_EMBEDDINGS_CHUNK_CHARS = 400
    texts = []
    embed = local_model.embed_passages
    monkeypatch.setattr(local_model, "embed_passages", lambda batch: texts.extend(batch) or embed(batch))
    paragraphs = [
        f"## 09:{i:02d}\nUser asked about invoice batch {i}; the export ran and was checked." * 3
        for i in range(8)
    ]
    services.file_write(
        agent=agent_a, path="memory/2026-11-26.md", content="\n\n".join(paragraphs), changed_by="t"
    )
    first = refresh()
    note = WorkspaceFile.objects.get(agent=agent_a, path="memory/2026-11-26.md", deleted_at=None)

    def vectors():
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT chunk, vector::text FROM search_embedding WHERE kind = 'file' AND object_id = %s",
                [note.pk],
            )
            return dict(cursor.fetchall())

    before = vectors()
    assert first.chunks == len(before) == len(texts) >= 6 and first.reused == 0

    texts.clear()
    appended = "## 17:45\nThe warehouse robots jammed on aisle seven and were reset by hand."
    services.file_write(
        agent=agent_a,
        path="memory/2026-11-26.md",
        content="\n\n".join([*paragraphs, appended]),
        changed_by="t",
    )
    second = refresh()
    after = vectors()
    assert (
        second.embedded == 1 and second.chunks == len(texts) <= 2 and second.reused == len(after) - len(texts)
    )
    unchanged = [chunk for chunk in before if chunk < len(before) - 1]
    assert all(after[chunk] == before[chunk] for chunk in unchanged)
    hits = semantic_search(
        project_id=agent_a.project_id,
        agent_id=agent_a.pk,
        kinds={"files"},
        query="robots stuck in the warehouse",
        limit=1,
    )
    assert hits and hits[0].object_id == note.pk


@needs_pgvector
def test_a_walk_that_comes_back_short_is_answered_by_the_exact_scan(
    agent_a, local_model, monkeypatch, caplog
):
    """An HNSW walk may bring back fewer items than asked from a scope that holds more: pgvector's
    iterative scan stops after hnsw.max_scan_tuples rows, and a graph holding many copies of the same
    vectors can leave a new copy with no edge leading to it (tests/search/test_fusion.py's scan-settings
    test found none of its three entries, now and then, once the suite had stored their texts
    thousands of times; docs/benchmarks.md). Which rows a graph leaves out is not predictable, so here
    the walk's statement finds one row: the exact scan answers with all three, nearest first, and a
    walk that found as many as asked is not followed by a scan."""
    import logging

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(semantic, "EXACT_SCAN_MAX_ROWS", 0)  # walk the index at any size
    texts = ("invoices are rounded per line", "we hiked up the mountain", "the cat sleeps on the sofa")
    own = bare_embeddings(agent_a, local_model, 3, 2 * 10**9)
    Embedding.objects.bulk_create(own)
    with connection.cursor() as cursor:
        for row, text in zip(own, texts, strict=True):
            cursor.execute(
                "UPDATE search_embedding SET vector = %s::vector WHERE agent_id = %s AND object_id = %s",
                ["[" + ",".join(map(str, local_model.embed_query(text))) + "]", agent_a.pk, row.object_id],
            )
    # The walk's statement, with a distance the index cannot serve: what it finds does not hang on the
    # graph, which the suite's earlier tests leave holding thousands of rows (this test's walk found
    # none of the three in runs of the whole suite).
    walk = """
        SELECT kind, object_id, ({distance} + 0) AS distance FROM search_embedding WHERE {where}
        ORDER BY 3, object_id DESC LIMIT %(found)s
    """

    def search(limit, found):
        monkeypatch.setattr(semantic, "_NEAREST_SQL", walk.replace("%(found)s", str(found)))
        with CaptureQueriesContext(connection) as queries:
            hits = semantic_search(
                project_id=agent_a.project_id,
                agent_id=agent_a.pk,
                kinds={"entries"},
                query="invoice rounding",
                limit=limit,
                vector=tuple(local_model.embed_query("how are invoice totals rounded")),
            )
        return hits, [q["sql"] for q in queries.captured_queries]

    with caplog.at_level(logging.DEBUG, logger="search.semantic"):
        hits, statements = search(3, found=1)
    assert sorted(ids(hits)) == sorted(row.object_id for row in own)
    assert ids(hits)[0] == own[0].object_id  # the invoice text is the nearest
    assert hits.scope.count == 3  # the exact scan's statistics, over every row of the scope
    assert "the HNSW walk found 1 of 3 items asked; the scope is scanned exactly" in caplog.text
    assert any("+ 0) AS distance" in sql for sql in statements)  # the walk ran first
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="search.semantic"):
        hits, statements = search(1, found=1)
    assert ids(hits) == [own[0].object_id] and "scanned exactly" not in caplog.text
    assert not any("WITH scored AS MATERIALIZED" in sql for sql in statements)
