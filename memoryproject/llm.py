"""Optional LLM client: OpenAI-compatible chat completions over plain HTTP.

Configured by LLM_BASE_URL (e.g. http://localhost:11434/v1), LLM_API_KEY and LLM_MODEL. Every failure
(network, timeout, HTTP error after retries, a reply without text, text that is not the JSON asked for)
is raised as the one LLMError, so callers have a single thing to catch before falling back to heuristics.
Prompt templates live in prompts/*.md and are filled with string.Template ($name placeholders), because
the prompts themselves contain JSON braces.

A call made while a request waits for it (`llm_deadline`, around the endpoints and pages that ask the
model: compaction, consolidation) ends by LLM_REQUEST_SECONDS, its retries included, so that the request
answers (the caller's heuristics instead) before a proxy gives up on it; a background task's calls
(`llm_job_deadline`) keep their retries and end a tenth of Q_TIMEOUT before the task would be killed,
so that the task falls back to its heuristics and records its work instead of losing it.
"""

import contextlib
import http.client
import json
import logging
import re
import socket
import time
import urllib.error
import urllib.request
from contextvars import ContextVar
from string import Template

from django.conf import settings

from memoryproject.outbound import (
    AnswerTooLarge,
    error_body,
    response_read,
    retry_after_seconds,
    secret_hidden,
)
from vault.text import text_bytes, token_estimate

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class LLMError(Exception):
    """The LLM could not give a usable answer."""


class LLMAnswerCut(LLMError):
    """The model stopped at max_tokens (finish_reason "length"): its answer is incomplete."""


class LLMPromptTooLong(LLMError):
    """The prompt is over LLM_MAX_INPUT_TOKENS: it was not sent."""


# When the calls made now must have ended (time.monotonic()), or None: no bound but each call's own;
# and what set it, for the error that says why a call was given up.
_deadline: ContextVar[float | None] = ContextVar("llm_deadline", default=None)
_deadline_what: ContextVar[str] = ContextVar("llm_deadline_what", default="")


@contextlib.contextmanager
def llm_deadline(seconds: float | None = None, *, what: str = ""):
    """Every LLM call made inside ends within `seconds` (LLM_REQUEST_SECONDS by default) from now, its
    retries and their waits included: an attempt's timeout is what is left, and no attempt starts that
    could not get LLM_TIMEOUT_MIN_SECONDS. An outer deadline that ends sooner stays."""
    seconds = settings.LLM_REQUEST_SECONDS if seconds is None else seconds
    what = what or f"the request's LLM_REQUEST_SECONDS ({settings.LLM_REQUEST_SECONDS:g} s)"
    ends = time.monotonic() + seconds
    outer = _deadline.get()
    inner = outer is None or ends < outer
    token = _deadline.set(ends if inner else outer)
    what_token = _deadline_what.set(what if inner else _deadline_what.get())
    try:
        yield
    finally:
        _deadline_what.reset(what_token)
        _deadline.reset(token)


def job_seconds() -> float:
    """How long a background task's model calls may take in all: Q_TIMEOUT less a tenth of it (at
    least 5 s), left for the task to fall back to its heuristics and record its work."""
    timeout = settings.Q_CLUSTER["timeout"]
    return timeout - max(5.0, timeout / 10)


def llm_job_deadline():
    """llm_deadline for a background task (its retries kept): its model calls end before Q_TIMEOUT
    kills its worker, which lost the work it was doing and, run after run, starved what came after.
    Under Q_SYNC a task runs inside the request that queued it (a session's close): LLM_REQUEST_SECONDS."""
    if settings.Q_CLUSTER.get("sync"):
        return llm_deadline()
    timeout = settings.Q_CLUSTER["timeout"]
    return llm_deadline(job_seconds(), what=f"the background task's Q_TIMEOUT ({timeout} s)")


def llm_time_left() -> float | None:
    """Seconds left before the current deadline (llm_deadline), or None when there is none."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


# An attempt is not started with less time than this left before the deadline.
LLM_TIMEOUT_MIN_SECONDS = 1.0


def _time_left() -> float:
    """The timeout of the next attempt: LLM_TIMEOUT_SECONDS, or less when a deadline is nearer."""
    deadline = _deadline.get()
    if deadline is None:
        return settings.LLM_TIMEOUT_SECONDS
    return min(settings.LLM_TIMEOUT_SECONDS, deadline - time.monotonic())


def llm_configured() -> bool:
    return bool(settings.LLM_BASE_URL and settings.LLM_MODEL)


def prompt_render(name: str, **values: str) -> str:
    """Fill prompts/<name>.md; a missing placeholder value is an error, not a silent '$name'."""
    path = settings.MEMORY_PROMPTS_DIR / f"{name}.md"
    try:
        template = Template(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LLMError(f"prompt template {path} is missing") from None
    try:
        return template.substitute(values)
    except KeyError as exc:
        raise LLMError(f"prompt template {name} needs a value for {exc}") from None


def _post(url: str, body: bytes, headers: dict, timeout: float) -> dict:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as response:
        raw = response_read(response, timeout, started)
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise LLMError(
            _key_hidden(f"the LLM server answered with something that is not JSON: {raw[:200]!r}")
        ) from None


def _key_hidden(text: str) -> str:
    return secret_hidden(text, settings.LLM_API_KEY, "LLM_API_KEY")


def llm_chat(messages: list[dict], *, max_tokens: int | None = None, temperature: float = 0.2) -> str:
    """Send a chat and return the assistant's text. Retries timeouts, connection errors, 429 and 5xx.
    An answer the model stopped at max_tokens is LLMAnswerCut: a summary cut mid-sentence is not one."""
    reply = _completion(messages, max_tokens=max_tokens, temperature=temperature)
    return _reply_whole(reply, max_tokens)


def prompt_tokens(messages: list[dict]) -> int:
    """The size of a prompt as LLM_MAX_INPUT_TOKENS counts it: every message's text by token_estimate."""
    return sum(token_estimate(message.get("content") or "") for message in messages)


def prompt_room(messages: list[dict]) -> int:
    """UTF-8 bytes that can still be added to the last message of `messages` (where a prompt's
    transcript or notes go) within LLM_MAX_INPUT_TOKENS; negative when the prompt is over already."""
    rest = settings.LLM_MAX_INPUT_TOKENS - prompt_tokens(messages[:-1])
    return rest * 4 - text_bytes(messages[-1].get("content") or "")


def newest_within(blocks: list[str], room: int, *, separator: str = "\n\n") -> int:
    """How many of the last `blocks` (oldest first), joined by `separator`, take at most `room` bytes:
    a prompt keeps the newest of what it is given and leaves out what is older."""
    used = count = 0
    for block in reversed(blocks):
        used += text_bytes(block) + (text_bytes(separator) if count else 0)
        if used > room:
            break
        count += 1
    return count


def _completion(messages: list[dict], *, max_tokens: int | None, temperature: float) -> dict:
    """The chat-completions reply to `messages`, after the retries llm_chat describes. A prompt over
    LLM_MAX_INPUT_TOKENS is not sent (LLMPromptTooLong): past its context a model refuses it or
    silently loses its start, and the callers keep to the budget before they get here."""
    if not llm_configured():
        raise LLMError("no LLM is configured (set LLM_BASE_URL and LLM_MODEL)")
    size = prompt_tokens(messages)
    if size > settings.LLM_MAX_INPUT_TOKENS:
        raise LLMPromptTooLong(
            f"the prompt takes about {size} tokens, more than LLM_MAX_INPUT_TOKENS "
            f"({settings.LLM_MAX_INPUT_TOKENS}); the model was not asked"
        )
    payload = {
        "model": settings.LLM_MODEL,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens or settings.LLM_MAX_TOKENS,
    }
    body = json.dumps(payload).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if settings.LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.LLM_API_KEY}"
    url = f"{settings.LLM_BASE_URL}/chat/completions"
    attempts = settings.LLM_MAX_RETRIES + 1
    last_problem = ""
    wait = 0.0
    for attempt in range(attempts):
        pause = max(wait, settings.LLM_RETRY_BACKOFF_SECONDS * (2 ** (attempt - 1))) if attempt else 0.0
        if _deadline.get() is not None and _time_left() - pause < LLM_TIMEOUT_MIN_SECONDS:
            raise LLMError(
                f"the LLM call was given up after {attempt} attempt(s): no time left within "
                f"{_deadline_what.get()}" + (f"; {last_problem}" if last_problem else "")
            )
        time.sleep(pause)
        wait = 0.0
        timeout = _time_left()
        try:
            reply = _post(url, body, headers, timeout)
        except urllib.error.HTTPError as exc:
            last_problem = _key_hidden(f"HTTP {exc.code}: {error_body(exc)}")
            if exc.code not in RETRYABLE_STATUS:
                raise LLMError(f"the LLM server refused the request ({last_problem})") from None
            # A 429's (or 503's) Retry-After is waited, up to the call's timeout.
            wait = retry_after_seconds(exc.headers.get("Retry-After"), most=settings.LLM_TIMEOUT_SECONDS)
        except AnswerTooLarge as exc:
            raise LLMError(f"the LLM server's answer is too large: {exc}") from None
        except TimeoutError:
            last_problem = f"no answer within {timeout:g} s"
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError | socket.timeout):
                last_problem = f"no answer within {timeout:g} s"
            else:
                last_problem = _key_hidden(f"cannot reach {settings.LLM_BASE_URL}: {exc.reason}")
        except (OSError, http.client.HTTPException) as exc:  # ssl.SSLError too, not a ConnectionError
            last_problem = _key_hidden(f"connection failed: {exc!r}")
        else:
            return reply
        logger.warning("LLM call attempt %d/%d failed: %s", attempt + 1, attempts, last_problem)
    raise LLMError(f"the LLM call failed after {attempts} attempt(s): {last_problem}")


def _reply_text(reply: dict) -> str:
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMError(
            _key_hidden(f"the LLM reply has no choices[0].message.content: {str(reply)[:200]}")
        ) from None
    if not isinstance(content, str) or not content.strip():
        raise LLMError("the LLM reply is empty")
    return content


def _reply_whole(reply: dict, max_tokens: int | None) -> str:
    """The reply's text, unless the model stopped at max_tokens (finish_reason "length")."""
    text = _reply_text(reply)
    try:
        finish_reason = reply["choices"][0].get("finish_reason")
    except (AttributeError, TypeError):
        finish_reason = None
    if finish_reason == "length":
        budget = max_tokens or settings.LLM_MAX_TOKENS
        raise LLMAnswerCut(f"the LLM's answer was cut at max_tokens ({budget}), so it is incomplete")
    return text


def json_from_text(text: str) -> dict:
    """The JSON object in a reply: bare, wrapped in ``` or ```json fences, or surrounded by prose."""
    candidates = [match.group(1) for match in _FENCE_RE.finditer(text)]
    candidates.append(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate.strip())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise LLMError(_key_hidden(f"the LLM reply is not a JSON object: {text[:200]!r}"))


def llm_json(messages: list[dict], *, max_tokens: int | None = None, temperature: float = 0.2) -> dict:
    """Chat, then parse the reply as a JSON object (markdown fences accepted). An answer the model
    stopped at max_tokens is LLMAnswerCut even when some JSON object can be read out of it: what it
    was still to write is missing, so none of it is trusted."""
    reply = _completion(messages, max_tokens=max_tokens, temperature=temperature)
    return json_from_text(_reply_whole(reply, max_tokens))


def prompt_messages(name: str, **values: str) -> list[dict]:
    """The chat for prompt `name`: prompts/<name>-system.md as the system message and
    prompts/<name>-user.md, filled with `values`, as the user message."""
    return [
        {"role": "system", "content": prompt_render(f"{name}-system")},
        {"role": "user", "content": prompt_render(f"{name}-user", **values)},
    ]
