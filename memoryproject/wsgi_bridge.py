"""Django's WSGI application in a thread pool under the ASGI server, with one hand-off per request.

a2wsgi runs the WSGI application in a thread and hands every piece of the exchange back to the event
loop and waits for it: each chunk of the request body the application reads, the response's start,
each chunk of its body and the final empty one. Each hand-off is a coroutine scheduled from the
thread, a wake-up of the loop and a wait for its result: four or five round trips between the thread
and the loop for a plain JSON answer (three for a GET, four for a POST), each a wake-up of the other
thread that a busy machine may be slow to schedule. Over HTTP, `GET /api/v1/nope` (no database) went
from 1.5-2.4 to 0.9-1.0 ms of server CPU and 8.6-21 to 1.9-2.9 ms a request, three alternated pairs
on a loaded machine; requests that query the database moved less than the noise.

Here, for the common case, there is one: the loop reads a request body of up to PREFETCH_BYTES before
the thread starts (as a2wsgi would when Django reads it, only sooner), and a response that is not
streaming (Django's HttpResponse: its whole body already in memory) comes back from the thread as the
result of the call, to be sent by the loop. Anything else takes a2wsgi's path unchanged: a larger or
chunked body is read as the application asks for it, a streaming response (files, exports) is sent
chunk by chunk.
"""

import contextvars
import functools

from a2wsgi.wsgi import Body, WSGIMiddleware, WSGIResponder, build_environ

# A request body up to this size is read by the event loop before Django runs (an entry or a batch of
# messages is a few KB); a larger one is streamed to Django as it reads it.
PREFETCH_BYTES = 256 * 1024


def _prefetch_length(scope) -> int | None:
    """The body's declared length; None when it is not declared, or the client waits for the server's
    100 Continue before sending it (asked for only when the application reads the body, as before)."""
    length = None
    for name, value in scope.get("headers", ()):
        if name == b"expect":
            return None
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return None
    return length


async def _body_prefetch(body: Body, receive, scope) -> None:
    """Read a declared body of at most PREFETCH_BYTES into `body`'s buffer, as Body.read would."""
    length = _prefetch_length(scope)
    if length is None or not 0 < length <= PREFETCH_BYTES:
        return
    while body._has_more and len(body.buffer) < length:
        message = await receive()
        body._has_more = message.get("more_body", False)
        body.buffer.extend(message.get("body", b""))


class _Responder(WSGIResponder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._start = None  # the response's start, held until its body is known
        self._start_sent = False

    async def __call__(self, scope, receive, send) -> None:
        body = Body(self.loop, receive)
        await _body_prefetch(body, receive, scope)
        environ = build_environ(scope, body)
        sender = None
        try:
            sender = self.loop.create_task(self.sender(send))
            context = contextvars.copy_context()
            func = functools.partial(context.run, self.wsgi)
            messages = await self.loop.run_in_executor(self.executor, func, environ, self.start_response)
            await self.send_queue.put(None)
            await sender
            for message in messages:
                await send(message)
            if self.exc_info is not None:
                raise self.exc_info[0].with_traceback(self.exc_info[1], self.exc_info[2])
        finally:
            if sender and not sender.done():
                sender.cancel()

    def start_response(self, status, response_headers, exc_info=None):
        self.exc_info = exc_info
        if not self.response_started:  # as a2wsgi: a second call does not replace the first
            self.response_started = True
            status_code = int(status.split(" ", 1)[0])
            headers = [
                (name.strip().encode("latin1").lower(), value.strip().encode("latin1"))
                for name, value in response_headers
            ]
            self._start = {"type": "http.response.start", "status": status_code, "headers": headers}
        return self._write

    def _start_flush(self) -> None:
        if self._start is not None and not self._start_sent:
            self._start_sent = True
            self.send(self._start)

    def _write(self, chunk: bytes) -> None:
        self._start_flush()
        self.send({"type": "http.response.body", "body": chunk, "more_body": True})

    def wsgi(self, environ, start_response) -> list:
        """Run the application in this thread; the messages left for the loop to send."""
        iterable = self.app(environ, start_response)
        try:
            if (
                getattr(iterable, "streaming", None) is False
                and self._start is not None
                and not self._start_sent
            ):
                # Django's HttpResponse: its content is in memory; one body message, sent by the loop.
                return [self._start, {"type": "http.response.body", "body": b"".join(iterable)}]
            for chunk in iterable:
                self._write(chunk)
            self._start_flush()
            self.send({"type": "http.response.body", "body": b""})
            return []
        finally:
            getattr(iterable, "close", lambda: None)()


class DjangoWSGIBridge(WSGIMiddleware):
    """a2wsgi's WSGIMiddleware (same thread pool, same lifespan and websocket answers) with the
    single-hand-off responder above for HTTP."""

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            return await _Responder(self.app, self.executor, self.send_queue_size)(scope, receive, send)
        return await super().__call__(scope, receive, send)
