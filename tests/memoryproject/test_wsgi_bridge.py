"""memoryproject.wsgi_bridge: Django under the ASGI server with one hand-off between the event loop and
the thread per request, and the same messages on the wire as a2wsgi's WSGIMiddleware sends."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import a2wsgi.wsgi
import pytest
from a2wsgi import WSGIMiddleware
from django.http import HttpResponse, StreamingHttpResponse

from memoryproject import wsgi_bridge
from memoryproject.wsgi_bridge import PREFETCH_BYTES, DjangoWSGIBridge


def _run(coroutine_function) -> None:
    """asyncio.run on a thread of its own: the browser tests' Playwright keeps an event loop running on
    the main one for the rest of the session (asyncio.run there fails)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coroutine_function()).result()


def _scope(method="GET", path="/", body_length=None):
    headers = [(b"host", b"127.0.0.1:8000")]
    if body_length is not None:
        headers.append((b"content-length", str(body_length).encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
    }


def _exchange(app, scope, chunks=(b"",)):
    """The messages `app` sends for a request whose body arrives in `chunks`, and the number of times
    a thread handed something to the event loop and waited for it (a2wsgi's run_coroutine_threadsafe)."""
    sent, handoffs = [], []
    real = a2wsgi.wsgi.asyncio.run_coroutine_threadsafe

    def counted(coroutine, loop):
        handoffs.append(1)
        return real(coroutine, loop)

    async def run():
        pending = list(chunks)

        async def receive():
            if not pending:
                return {"type": "http.disconnect"}
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

        async def send(message):
            sent.append(message)

        await app(scope, receive, send)

    a2wsgi.wsgi.asyncio.run_coroutine_threadsafe = counted
    try:
        _run(run)
    finally:
        a2wsgi.wsgi.asyncio.run_coroutine_threadsafe = real
    return sent, len(handoffs)


def _echo(environ, start_response):
    """Answers the request body it read, as a Django HttpResponse (not streaming)."""
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    response = HttpResponse(body, content_type="application/octet-stream")
    start_response("200 OK", [(k, v) for k, v in response.items()])
    return response


def _streaming(environ, start_response):
    response = StreamingHttpResponse(iter([b"one,", b"two,", b"three"]), content_type="text/csv")
    start_response("200 OK", [(k, v) for k, v in response.items()])
    return response


def _plain_list(environ, start_response):
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-Thing", "1")])
    return [b"a", b"b"]


def _both(app, scope, chunks=(b"",)):
    return _exchange(WSGIMiddleware(app, workers=2), scope, chunks), _exchange(
        DjangoWSGIBridge(app, workers=2), scope, chunks
    )


@pytest.mark.parametrize("app", [_streaming, _plain_list], ids=["streaming", "plain-list"])
def test_responses_that_are_not_django_buffered_go_out_as_a2wsgi_sends_them(app):
    (theirs, _), (ours, _) = _both(app, _scope())
    assert ours == theirs
    assert ours[-1] == {"type": "http.response.body", "body": b""}


def test_a_buffered_response_is_one_body_message_with_the_same_bytes():
    body = b'{"entry": 1}'
    (theirs, _), (ours, handoffs) = _both(_echo, _scope("POST", body_length=len(body)), [body])
    assert ours[0] == theirs[0]  # status and headers
    assert (
        b"".join(m.get("body", b"") for m in ours[1:])
        == b"".join(m.get("body", b"") for m in theirs[1:])
        == body
    )
    assert ours[1:] == [{"type": "http.response.body", "body": body}]  # no more_body: the last
    assert handoffs == 0


def test_a_body_in_several_chunks_is_read_whole_before_the_thread_starts():
    chunks = [b"x" * 1000, b"y" * 1000, b"z" * 10]
    total = b"".join(chunks)
    sent, handoffs = _exchange(
        DjangoWSGIBridge(_echo, workers=2), _scope("POST", body_length=len(total)), chunks
    )
    assert b"".join(m.get("body", b"") for m in sent[1:]) == total
    assert handoffs == 0


def test_a_body_larger_than_the_prefetch_is_streamed_to_the_application_whole():
    chunks = [b"a" * (PREFETCH_BYTES // 2)] * 3
    total = b"".join(chunks)
    sent, handoffs = _exchange(
        DjangoWSGIBridge(_echo, workers=2), _scope("POST", body_length=len(total)), chunks
    )
    assert sent[0]["status"] == 200
    assert b"".join(m.get("body", b"") for m in sent[1:]) == total
    assert handoffs == 3  # read as the application asked for it, as a2wsgi does


def test_a_chunked_body_without_a_length_is_streamed():
    chunks = [b"abc", b"def"]
    environ_seen = {}

    def app(environ, start_response):
        environ_seen["body"] = environ["wsgi.input"].read()
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ_seen["body"]]

    sent, _ = _exchange(DjangoWSGIBridge(app, workers=2), _scope("POST"), chunks)
    assert environ_seen["body"] == b"abcdef"
    assert b"".join(m.get("body", b"") for m in sent[1:]) == b"abcdef"


def test_django_answers_an_api_request_with_no_handoff_back_to_the_loop(settings):
    """The server's own application (memoryproject.asgi): a JSON answer from Django is sent with no
    round trip from the thread to the loop (a2wsgi made three: the start, the body, the end)."""
    from memoryproject.asgi import application

    sent, handoffs = _exchange(application, _scope("GET", "/api/v1/no-such-thing"))
    assert sent[0]["status"] == 404
    assert dict(sent[0]["headers"])[b"content-type"].startswith(b"application/json")
    assert sent[1:] == [{"type": "http.response.body", "body": sent[1]["body"]}]
    assert b'"detail"' in sent[1]["body"]
    assert handoffs == 0


def test_the_prefetch_limit_is_far_above_an_entry_and_below_the_request_limit(settings):
    assert 64 * 1024 <= wsgi_bridge.PREFETCH_BYTES <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_a_client_waiting_for_100_continue_is_not_asked_for_its_body_before_the_application():
    reads = []

    def app(environ, start_response):  # refuses without reading, as an unknown token's 401
        start_response("401 Unauthorized", [("Content-Type", "application/json")])
        return [b"{}"]

    async def run():
        scope = _scope("POST", body_length=10)
        scope["headers"].append((b"expect", b"100-continue"))

        async def receive():
            reads.append(1)
            return {"type": "http.request", "body": b"0123456789", "more_body": False}

        async def send(message):
            pass

        await DjangoWSGIBridge(app, workers=1)(scope, receive, send)

    _run(run)
    assert reads == []
