"""What the LLM and embeddings clients share when they call an operator's server: the answer read
within one deadline, a 429's Retry-After, and the API key kept out of what they report."""

import http.client
import time

# No answer of either is near this (an LLM's at most LLM_REWRITE_MAX_TOKENS, a batch of vectors a few
# MB); a server sending more is broken or is not the server meant, and would fill the worker's memory.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class AnswerTooLarge(Exception):
    """The server sent more than MAX_ANSWER_BYTES (not retried: it would again)."""


def response_read(response, timeout: float, started: float) -> bytes:
    """The whole body of `response`, or TimeoutError once `timeout` seconds have passed since `started`
    (time.monotonic()), or AnswerTooLarge past MAX_ANSWER_BYTES. urlopen's timeout bounds each read,
    not the answer: a server that sends a byte now and then would hold the caller for as long as it
    likes."""
    parts = []
    size = 0
    while True:
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"the answer took more than {timeout} s")
        part = response.read1(65536)
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > MAX_ANSWER_BYTES:
            raise AnswerTooLarge(f"the answer is more than {MAX_ANSWER_BYTES} bytes")
        parts.append(part)


def retry_after_seconds(value: str | None, *, most: float) -> float:
    """A Retry-After header's seconds, at most `most` (0 when absent, a date, or not a number)."""
    try:
        return min(max(0.0, float(value)), most) if value else 0.0
    except ValueError:
        return 0.0


def secret_hidden(text: str, secret: str, name: str) -> str:
    """`text` (a server's reply, an error) with `secret` replaced by `name`: a proxy that echoes the
    request would otherwise put the key in a log line, a job's result or a page."""
    return text.replace(secret, f"[{name}]") if secret else text


def error_body(exc) -> str:
    """The start of an HTTP error's body, to say what the server said; "" when it cannot be read (the
    proxy cut it): reporting an error must not raise another."""
    try:
        return exc.read()[:300].decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        return ""
