"""What the LLM and embeddings clients share when they call an operator's server: the answer read
within one deadline, a 429's Retry-After, and the API key kept out of what they report."""

import time


def response_read(response, timeout: float, started: float) -> bytes:
    """The whole body of `response`, or TimeoutError once `timeout` seconds have passed since `started`
    (time.monotonic()). urlopen's timeout bounds each read, not the answer: a server that sends a byte
    now and then would hold the caller for as long as it likes."""
    parts = []
    while True:
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"the answer took more than {timeout} s")
        part = response.read1(65536)
        if not part:
            return b"".join(parts)
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
