"""Where a hybrid search's query is embedded: on the request's thread, before the arms start, when the
local model would use several threads for it; else on the query-embed thread beside the lexical arm."""

import threading

import pytest

from search import semantic


class RemoteEmbedder:
    """A backend without local threads to pick (an OpenAI-compatible server)."""

    model_id = "fake-model"

    def __init__(self, threads: int | None = None):
        self.threads, self.picks, self.calls, self.timed = threads, 0, [], []

    def embed_query(self, text: str, threads: int | None = None, *, timed: bool = True) -> list[float]:
        self.calls.append((threading.current_thread().name, threads))
        self.timed.append(timed)
        return [1.0, 0.0, 0.0]


class LocalEmbedder(RemoteEmbedder):
    def query_threads_pick(self) -> int:
        self.picks += 1
        return self.threads


@pytest.fixture
def embedder(request, monkeypatch):
    fake = LocalEmbedder(request.param) if request.param else RemoteEmbedder()
    monkeypatch.setattr(semantic, "embedder_get", lambda: fake)
    semantic.query_cache_clear()
    yield fake
    semantic.query_cache_clear()


@pytest.mark.parametrize("embedder", [2], indirect=True)
def test_a_query_on_several_threads_is_embedded_first_on_the_callers_thread(embedder):
    embedding = semantic.query_vector_begin("which cache did we choose")
    assert embedding.done()  # before any arm starts
    assert embedding.result() == (1.0, 0.0, 0.0)
    assert embedder.calls == [(threading.current_thread().name, 2)] and embedder.picks == 1


@pytest.mark.parametrize("embedder", [1], indirect=True)
def test_a_query_on_one_thread_is_embedded_beside_the_lexical_arm(embedder):
    assert semantic.query_vector_begin("which cache did we choose").result() == (1.0, 0.0, 0.0)
    ((thread, threads),) = embedder.calls
    assert thread.startswith("query-embed") and threads == 1 and embedder.picks == 1


@pytest.mark.parametrize("embedder", [None], indirect=True)
def test_a_remote_backends_query_is_embedded_beside_the_lexical_arm(embedder):
    assert semantic.query_vector_begin("which cache did we choose").result() == (1.0, 0.0, 0.0)
    ((thread, threads),) = embedder.calls
    assert thread.startswith("query-embed") and threads is None


@pytest.mark.parametrize("embedder", [2], indirect=True)
def test_a_cached_query_picks_no_threads_and_is_not_embedded_again(embedder):
    semantic.query_vector_begin("which cache did we choose").result()
    again = semantic.query_vector_begin("which cache did we choose")
    assert again.result() == (1.0, 0.0, 0.0)
    assert len(embedder.calls) == 1 and embedder.picks == 1


@pytest.mark.parametrize("embedder", [2], indirect=True)
def test_a_context_command_is_embedded_on_one_untimed_thread_beside_the_sections(embedder):
    """context_build reads its other sections while the command is embedded (query_vector_start): two
    threads beside that work wait for each other at every barrier, and a time taken beside other work
    would teach the thread chooser a wrong cost. Before, the chooser's count (2 here) was used and timed."""
    assert semantic.query_vector_start("which cache did we choose").result() == (1.0, 0.0, 0.0)
    ((thread, threads),) = embedder.calls
    assert thread.startswith("query-embed") and threads == 1
    assert embedder.timed == [False] and embedder.picks == 0


@pytest.mark.parametrize("embedder", [None], indirect=True)
def test_a_remote_backends_context_command_is_embedded_as_before(embedder):
    assert semantic.query_vector_start("which cache did we choose").result() == (1.0, 0.0, 0.0)
    assert embedder.calls[0][1] is None and embedder.timed == [True]
