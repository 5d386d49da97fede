"""A local server speaking the OpenAI chat-completions protocol, for testing the LLM client offline."""

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def completion(content: str, finish_reason: str = "stop") -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        ],
    }


# A reply given as a callable is cut as a model cuts its answer at the request's max_tokens: at this many
# bytes a token (the project's token_estimate), finish_reason "length".
BYTES_PER_TOKEN = 4


def reply_write(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict) -> None:
    """Answer a fake server's request; a client that gave up meanwhile (a timeout test) is no error."""
    try:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


class FakeLLM:
    def __init__(self):
        self.replies: list[tuple] = []  # (status, text, delay[, headers])
        self.requests: list[dict] = []
        self.received = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": json.loads(body or b"{}")}
                )
                fake.received.set()
                status, text, delay, *more = fake.replies.pop(0) if len(fake.replies) > 1 else fake.replies[0]
                if callable(text):
                    text = text(fake.requests[-1]["json"])
                if delay:
                    time.sleep(delay)
                headers = {"Content-Type": "application/json", **(more[0] if more else {})}
                reply_write(self, status, text.encode(), headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def reply(self, content: str, *, status: int = 200, delay: float = 0.0) -> "FakeLLM":
        self.replies.append((status, json.dumps(completion(content)), delay))
        return self

    def reply_json(self, value: dict, *, fenced: bool = False, delay: float = 0.0) -> "FakeLLM":
        text = json.dumps(value)
        return self.reply(f"Here it is:\n```json\n{text}\n```" if fenced else text, delay=delay)

    def reply_json_within_budget(self, value: dict) -> "FakeLLM":
        """Answer `value` as a model limited to the request's max_tokens would: whole when it fits,
        else cut at the budget with finish_reason "length"."""
        answer = json.dumps(value, ensure_ascii=False)
        return self.reply_within_budget(lambda request: answer)

    def reply_within_budget(self, answer: Callable[[dict], str]) -> "FakeLLM":
        """Answer what `answer` makes of the request, as a model limited to the request's max_tokens
        would: whole when it fits, else cut at the budget with finish_reason "length"."""

        def reply(request: dict) -> str:
            budget = request["max_tokens"] * BYTES_PER_TOKEN
            text = answer(request)
            data = text.encode()
            if len(data) <= budget:
                return json.dumps(completion(text))
            return json.dumps(completion(data[:budget].decode(errors="ignore"), finish_reason="length"))

        self.replies.append((200, reply, 0.0))
        return self

    def reply_raw(self, body: str, *, status: int = 200, delay: float = 0.0, headers=None) -> "FakeLLM":
        self.replies.append((status, body, delay, headers or {}))
        return self

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class TricklingServer:
    """An HTTP server that answers 200 at once, then sends its body a byte every `interval` seconds:
    each read gets something before a socket timeout, so only a deadline on the whole answer ends it."""

    def __init__(self, body: bytes, interval: float):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.body, self.interval = body, interval
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}/v1"

    def _serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.socket.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            try:
                conn.recv(65536)
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(self.body)}\r\n\r\n"
                conn.sendall(head.encode())
                for byte in self.body:
                    if self.stopped.wait(self.interval):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                pass

    def close(self):
        self.stopped.set()
        self.socket.close()


@pytest.fixture
def fake_llm(settings):
    fake = FakeLLM()
    settings.LLM_BASE_URL = fake.base_url
    settings.LLM_MODEL = "test-model"
    settings.LLM_API_KEY = "sk-test"
    settings.LLM_TIMEOUT_SECONDS = 5
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_RETRY_BACKOFF_SECONDS = 0
    yield fake
    fake.close()
