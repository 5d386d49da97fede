"""Security defaults: the secret key kept in the data folder, and the per-token API rate limit."""

import functools
import logging
import os
import secrets
import time
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from redis.exceptions import RedisError

from memoryproject.errors import DomainError

logger = logging.getLogger(__name__)

SECRET_KEY_FILE = "secret_key"

# Keys published in this repository's history or in Django's docs and templates: anyone can sign a
# session cookie with them.
KNOWN_PUBLIC_KEYS = frozenset(
    {
        "insecure-dev-key-set-SECRET_KEY-in-production-0123456789abcdef",
        "changeme",
        "change-me",
        "secret",
        "dev",
    }
)


def secret_key_is_public(key: str) -> bool:
    return key in KNOWN_PUBLIC_KEYS or key.startswith("django-insecure-") or len(key) < 32


def secret_key_load(*, configured: str, data_dir: Path, debug: bool) -> str:
    """SECRET_KEY from the environment, else the one generated on first start and kept in the data folder
    (mode 600). A known-public or short key is refused unless DEBUG is on."""
    if configured:
        if secret_key_is_public(configured) and not debug:
            raise ImproperlyConfigured(
                "SECRET_KEY is a publicly known or short key; set a random one of 50 characters or "
                "more, or unset it to use the key generated in the data folder."
            )
        return configured
    path = data_dir / SECRET_KEY_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _key_file_error(path, exc) from exc
    key = secrets.token_urlsafe(50)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        # O_EXCL: when several processes start together, the first writer's key wins for all of them.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise _key_file_error(path, exc) from exc
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    return key


def _key_file_error(path: Path, exc: OSError) -> ImproperlyConfigured:
    return ImproperlyConfigured(
        f"MEMORY_DATA_DIR {str(path.parent)!r} cannot hold the secret key: {path} cannot be used ({exc}). "
        "Fix the folder, or set SECRET_KEY."
    )


class RateLimited(DomainError):
    status_code = 429

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.retry_after = max(1, retry_after)


# While Redis is unreachable every request would say so: once in this many seconds per process.
RATE_LIMIT_WARNING_SECONDS = 60.0
_rate_limit_warned_at = float("-inf")


def _rate_limit_skipped_warn(exc: Exception) -> None:
    global _rate_limit_warned_at
    now = time.monotonic()
    if now - _rate_limit_warned_at >= RATE_LIMIT_WARNING_SECONDS:
        _rate_limit_warned_at = now
        logger.warning("API rate limit not counted: the cache (Redis) cannot be reached: %s", exc)


@functools.cache
def _rate_split(rate: str) -> tuple[int, int]:
    """MEMORY_API_RATE_LIMIT as django-ratelimit's (count, seconds), parsed by its own parser once per
    value rather than twice a request; the counter's cache key is the same as for the text."""
    from django_ratelimit.core import _split_rate

    return _split_rate(rate)


def api_rate_check(principal) -> None:
    """Count a request of this token against its limit (MEMORY_API_RATE_LIMIT, shared by every web process
    through the cache); raise RateLimited when the token is over it. The REST API and MCP over HTTP
    count on the same counter: a token has one allowance, whichever way it calls."""
    from django.conf import settings
    from django_ratelimit import ALL
    from django_ratelimit.core import get_usage

    rate = settings.MEMORY_API_RATE_LIMIT
    if not rate:
        return
    try:
        usage = get_usage(
            None,  # counted whatever the method; the key is the token's, not the request's
            group="api-token",
            key=lambda group, request: str(principal.token_id),
            rate=_rate_split(rate),
            method=ALL,
            increment=True,
        )
    except RedisError as exc:
        # Redis (REDIS_URL) is down or not answering: memory stays available, uncounted, until it is
        # back. The database cache raises the database's errors, which answer 503 as every request does.
        _rate_limit_skipped_warn(exc)
        return
    if usage and usage["should_limit"]:
        raise RateLimited(
            f"Rate limit exceeded: this token may make {rate} requests (MEMORY_API_RATE_LIMIT).",
            retry_after=usage["time_left"],
        )
