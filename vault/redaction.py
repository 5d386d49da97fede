"""Redaction of secrets before anything is stored (auto-redaction).

Every write of memory content (entries, workspace files, and after the sessions merge, messages) passes
its text through `redact_for_project`, so agents cannot persist an email address, an API key or a
password by accident. Patterns are chosen by name in MEMORY_REDACTION_PATTERNS, plus one optional
MEMORY_REDACTION_EXTRA_REGEX; each project can switch redaction off (Project.redaction_enabled).
"""

import re
from functools import lru_cache

from django.conf import settings

from vault.models import Project

REPLACEMENT = "[REDACTED]"

# Each pattern either replaces the whole match, or (when it has a group named "secret") only that group,
# so "password: hunter2" becomes "password: [REDACTED]" and the reader still knows what was there.
BUILTIN_PATTERNS: dict[str, tuple[str, ...]] = {
    "email": (r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",),
    "api_key": (
        # Well-known key formats: OpenAI/Anthropic/Stripe style, GitHub, Slack, AWS, Google, our own tokens.
        r"\b(?:sk|pk|rk)[-_](?:[A-Za-z0-9]+[-_])*[A-Za-z0-9]{16,}",
        r"\bgh[pousr]_[A-Za-z0-9]{20,}\b",
        r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
        r"\bAKIA[0-9A-Z]{16}\b",
        r"\bAIza[0-9A-Za-z_-]{35}\b",
        r"\bmem_[A-Za-z0-9_-]{20,}",
        # The generic rule (32+ alphanumerics), narrowed to strings mixing upper case, lower case
        # and digits, so that hex commit hashes and long words are left alone.
        r"\b(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{32,}\b",
    ),
    "password": (
        r"(?i)\b(?:password|passwd|pwd|passphrase|senha)\b(?:\s+(?:is|was|=)\s+|\s*[:=]\s*)"
        r"[\"']?(?P<secret>[^\s\"',;]+)",
        r"(?i)\b(?:secret|api[_-]?key|access[_-]?token|client[_-]?secret)\b\s*[:=]\s*"
        r"[\"']?(?P<secret>[^\s\"',;]+)",
    ),
    "bearer": (r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",),
    "private_key": (r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",),
}


@lru_cache(maxsize=8)
def _compiled(names: tuple[str, ...], extra: str) -> tuple[re.Pattern, ...]:
    sources = [source for name in names for source in BUILTIN_PATTERNS[name]]
    if extra:
        sources.append(extra)
    return tuple(re.compile(source, re.DOTALL) for source in sources)


def redaction_patterns() -> tuple[re.Pattern, ...]:
    return _compiled(tuple(settings.MEMORY_REDACTION_PATTERNS), settings.MEMORY_REDACTION_EXTRA_REGEX)


def _replace(match: re.Match) -> str:
    if "secret" in match.re.groupindex and match.group("secret"):
        start, end = match.span("secret")
        whole_start = match.start()
        text = match.group(0)
        return text[: start - whole_start] + REPLACEMENT + text[end - whole_start :]
    return REPLACEMENT


def redact(text: str) -> str:
    """The text with every configured pattern replaced by [REDACTED]."""
    if not isinstance(text, str) or not text:
        return text
    for pattern in redaction_patterns():
        text = pattern.sub(_replace, text)
    return text


def project_redaction_enabled(project_id: int) -> bool:
    """Whether writes to this project are redacted (on unless the project switched it off)."""

    enabled = Project.objects.filter(pk=project_id).values_list("redaction_enabled", flat=True).first()
    return enabled is not False


def redact_for_project(text: str, project_id: int) -> str:
    """Redact unless the project has switched redaction off."""
    if not isinstance(text, str) or not text:
        return text
    return redact(text) if project_redaction_enabled(project_id) else text
