"""The openai embeddings backend against a misbehaving server: every bad reply is an EmbeddingError
saying what is wrong (never a vector that would be stored or searched wrongly), and a server that is
slow or down costs a search at most MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS, once, not every search."""

import io
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from memoryproject import outbound
from memoryproject.embeddings import EmbeddingError, OpenAICompatibleEmbedder
from search import semantic
from search.embedding_index import (
    embeddings_pending_count,
    embeddings_refresh,
    passages_embed,
    pgvector_installed,
)
from search.models import Embedding
from tests.fake_llm import TricklingServer, reply_write
from tests.search.test_embeddings import hide_starting_files

KEY = "sk-embeddings-secret-0123456789"


class FakeEmbeddings:
    """An OpenAI-compatible /embeddings server whose replies the test sets: `reply(inputs)` returns
    (status, body, headers) for each request."""

    def __init__(self):
        self.requests: list[dict] = []
        self.delay = 0.0
        self.reply = lambda inputs: (
            200,
            {"data": [vector_row(i, [1.0, 0.0]) for i in range(len(inputs))]},
            {},
        )
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"auth": self.headers.get("Authorization"), **body})
                if fake.delay:
                    time.sleep(fake.delay)
                status, payload, headers = fake.reply(body["input"])
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                reply_write(self, status, data, headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def client(self, dimensions=2):
        return OpenAICompatibleEmbedder(url=self.url, model="m", dimensions=dimensions, api_key=KEY)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def vector_row(index, vector):
    return {"object": "embedding", "index": index, "embedding": vector}


@pytest.fixture
def fake(settings):
    settings.MEMORY_EMBEDDINGS_MAX_RETRIES = 2
    settings.MEMORY_EMBEDDINGS_TIMEOUT_SECONDS = 5
    server = FakeEmbeddings()
    yield server
    server.close()


@pytest.mark.parametrize(
    "data, complaint",
    [
        ([1, 2], "data"),  # rows that are not objects
        ([{"index": 0, "embedding": "12"}, {"index": 1, "embedding": [0.0, 1.0]}], "data"),
        ([{"index": 0, "embedding": [True, False]}, {"index": 1, "embedding": [0.0, 1.0]}], "data"),
        ([{"index": 0, "embedding": [float("nan"), 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}], "finite"),
        ([{"index": 0, "embedding": [float("inf"), 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}], "finite"),
        ([{"index": 0, "embedding": [0.0, 0.0]}, {"index": 1, "embedding": [0.0, 1.0]}], "zero"),
        ([{"index": 0, "embedding": [1.0, 0.0]}, {"index": 0, "embedding": [0.0, 1.0]}], "index"),
        ([{"index": 0, "embedding": [1.0, 0.0]}, {"index": 2, "embedding": [0.0, 1.0]}], "index"),
        ([{"index": 1, "embedding": [1.0, 0.0]}, {"embedding": [0.0, 1.0]}], "index"),
        ([{"index": 0, "embedding": [1.0, 0.0]}], "got 1"),
        (
            [{"index": 0, "embedding": [1.0, 0.0, 0.0]}, {"index": 1, "embedding": [0.0, 1.0, 0.0]}],
            "dimensions",
        ),
    ],
)
def test_it_refuses_a_reply_it_cannot_trust(fake, data, complaint):
    fake.reply = lambda inputs: (200, json.dumps({"data": data}), {})  # json.dumps writes NaN, Infinity
    with pytest.raises(EmbeddingError, match=complaint):
        fake.client().embed_passages(["a", "b"])


def test_it_puts_rows_back_in_the_order_of_their_index(fake):
    fake.reply = lambda inputs: (200, {"data": [vector_row(1, [0.0, 2.0]), vector_row(0, [3.0, 0.0])]}, {})
    assert fake.client().embed_passages(["a", "b"]) == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize(
    "status, body, headers",
    [
        (200, "<html><body>Welcome to nginx</body></html>", {"Content-Type": "text/html"}),
        (200, {"error": "model not loaded"}, {}),
        (200, {"data": "none"}, {}),
        (500, "upstream failed", {}),
        (429, "slow down", {"Retry-After": "1"}),
    ],
)
def test_every_other_failure_is_an_embedding_error_that_names_it(fake, status, body, headers):
    fake.reply = lambda inputs: (status, body, headers)
    with pytest.raises(EmbeddingError):
        fake.client().embed_passages(["a"])


def test_a_429_waits_as_long_as_retry_after_asks_within_the_timeout(fake, settings):
    answers = iter([(429, "slow down", {"Retry-After": "2"})])
    fake.reply = lambda inputs: next(answers, (200, {"data": [vector_row(0, [1.0, 0.0])]}, {}))
    started = time.monotonic()
    assert fake.client().embed_passages(["a"]) == [[1.0, 0.0]]
    assert 2 <= time.monotonic() - started < 4
    assert len(fake.requests) == 2


def test_the_api_key_is_never_in_an_error(fake):
    # A proxy that echoes what it was sent (some debugging ones do) puts the key in its error body.
    fake.reply = lambda inputs: (401, f"bad key: Bearer {KEY}", {})
    with pytest.raises(EmbeddingError) as failure:
        fake.client().embed_passages(["a"])
    assert KEY not in str(failure.value) and "HTTP 401" in str(failure.value)


def test_a_slow_server_costs_a_query_one_short_wait_and_then_nothing_for_a_while(fake, settings, request):
    settings.MEMORY_EMBEDDINGS = "openai"
    settings.MEMORY_EMBEDDINGS_URL = fake.url
    settings.MEMORY_EMBEDDINGS_MODEL = "m"
    settings.MEMORY_EMBEDDINGS_DIMENSIONS = 2
    settings.MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS = 0.5
    fake.delay = 3
    semantic.query_cache_clear()
    request.addfinalizer(semantic.query_cache_clear)  # the pause would outlive the test
    started = time.monotonic()
    assert semantic.query_vector("where is the queue configured") is None
    assert time.monotonic() - started < 1.5  # one try at the query timeout, no retries
    started = time.monotonic()
    assert semantic.query_vector("another question") is None  # not asked again at once
    assert time.monotonic() - started < 0.1
    assert len(fake.requests) == 1


def test_a_query_whose_answer_trickles_in_is_given_up_at_the_query_timeout(settings, request):
    body = json.dumps({"data": [vector_row(0, [1.0, 0.0])]}).encode()
    server = TricklingServer(body, interval=0.05)  # the whole answer would take over 2 s
    request.addfinalizer(server.close)
    settings.MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS = 0.5
    client = OpenAICompatibleEmbedder(url=server.base_url, model="m", dimensions=2)
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="no answer within 0.5"):
        client.embed_query("where is the queue configured")
    assert time.monotonic() - started < 1.5


def refusing(word: str, status: int = 413):
    """Vectors for every input, or `status` when an input holds `word` (TEI answers 413 to a text
    longer than its model's 512 tokens)."""

    def reply(inputs):
        if any(word in text for text in inputs):
            return status, {"error": "Input validation error: inputs must have less than 512 tokens"}, {}
        return 200, {"data": [vector_row(i, [1.0, float(i)]) for i in range(len(inputs))]}, {}

    return reply


def test_a_text_the_server_refuses_is_left_out_and_the_rest_of_its_batch_embedded(fake):
    fake.reply = refusing("POISON")
    vectors, errors = passages_embed(fake.client(), ["first", "POISON " * 600, "third"])
    assert vectors[0] is not None and vectors[1] is None and vectors[2] is not None
    assert len(errors) == 1 and "HTTP 413" in errors[0]
    assert [len(request["input"]) for request in fake.requests] == [3, 1, 1, 1]


@pytest.mark.parametrize("reply", [refusing("", status=401), refusing("", status=404), refusing("")])
def test_a_server_that_refuses_everything_stops_the_run(fake, reply):
    # A wrong key or model (401, 404), or every text refused alone: no use sending text after text.
    fake.reply = reply
    with pytest.raises(EmbeddingError):
        passages_embed(fake.client(), ["first", "second"])
    assert len(fake.requests) <= 3


def test_a_server_that_is_down_stops_the_run_without_trying_each_text(fake, settings):
    settings.MEMORY_EMBEDDINGS_MAX_RETRIES = 0
    fake.reply = lambda inputs: (503, "unavailable", {})
    with pytest.raises(EmbeddingError, match="after 1 attempt"):
        passages_embed(fake.client(), ["first", "second"])
    assert len(fake.requests) == 1


@pytest.mark.django_db
def test_an_item_the_server_refuses_does_not_keep_the_job_from_older_items(
    fake, settings, agent_a, make_entry
):
    if not pgvector_installed():
        pytest.skip("this database has no pgvector (the run on the embedded PostgreSQL covers this)")
    settings.MEMORY_EMBEDDINGS = "openai"
    settings.MEMORY_EMBEDDINGS_URL = fake.url
    settings.MEMORY_EMBEDDINGS_MODEL = "m"
    settings.MEMORY_EMBEDDINGS_DIMENSIONS = 2
    older = make_entry(agent_a, "the queue runs on PostgreSQL")
    make_entry(agent_a, "POISON " * 100)  # newest first: its batch came first and failed every run
    fake.reply = refusing("POISON")
    hide_starting_files()
    outcome = embeddings_refresh(batch_size=8)
    assert (outcome.embedded, outcome.failed) == (1, 1) and "HTTP 413" in outcome.errors[0]
    assert list(Embedding.objects.values_list("object_id", flat=True)) == [older.pk]
    assert embeddings_pending_count() == 1  # the refused one waits, and is tried again next run


@pytest.mark.django_db
def test_healthz_says_while_searches_are_lexical_because_the_server_failed(
    fake, settings, monkeypatch, request
):
    settings.MEMORY_EMBEDDINGS = "openai"
    settings.MEMORY_EMBEDDINGS_URL = fake.url
    settings.MEMORY_EMBEDDINGS_MODEL = "m"
    settings.MEMORY_EMBEDDINGS_DIMENSIONS = 2
    settings.MEMORY_EMBEDDINGS_API_KEY = KEY
    monkeypatch.setattr(semantic, "_pgvector_ready", lambda: True)  # the query path alone is exercised
    monkeypatch.setattr(semantic, "embeddings_pending_count", lambda **kwargs: 0)
    request.addfinalizer(semantic.query_cache_clear)
    client = Client()
    assert "query_error" not in client.get("/api/v1/healthz").json()["embeddings"]
    fake.reply = lambda inputs: (401, f"invalid key Bearer {KEY}", {})
    assert semantic.query_vector("where is the queue configured") is None
    body = client.get("/api/v1/healthz").content.decode()
    assert KEY not in body
    assert "HTTP 401" in json.loads(body)["embeddings"]["query_error"]


def test_a_tls_error_mid_answer_is_an_embedding_error(fake, monkeypatch):
    """ssl.SSLError is an OSError but not a ConnectionError: it escaped the client, and a search whose
    query met it answered 500."""

    def broken(*args, **kwargs):
        raise ssl.SSLError("decryption failed or bad record mac")

    monkeypatch.setattr(urllib.request, "urlopen", broken)
    with pytest.raises(EmbeddingError):
        fake.client().embed_query("x")


def test_an_endless_answer_is_given_up_before_it_fills_the_memory(fake, monkeypatch):
    monkeypatch.setattr(outbound, "MAX_ANSWER_BYTES", 1024 * 1024, raising=False)
    fake.reply = lambda inputs: (200, "[" + "0.5," * (2 * 1024 * 1024), {})
    with pytest.raises(EmbeddingError, match="too large"):
        fake.client().embed_passages(["a"])
    assert len(fake.requests) == 1


def test_an_error_whose_body_is_cut_is_an_embedding_error(fake, monkeypatch):
    class CutBody(io.BytesIO):
        def read(self, *args):
            raise ConnectionResetError("connection reset by peer")

    def cut(*args, **kwargs):
        raise urllib.error.HTTPError("http://x/v1", 502, "Bad Gateway", {}, CutBody())

    monkeypatch.setattr(urllib.request, "urlopen", cut)
    with pytest.raises(EmbeddingError, match="HTTP 502"):
        fake.client().embed_passages(["a"])
