"""Side work that must not fail the work around it: one failing source of a context, one corrupt session
in a maintenance run, one failing step after an append. Used by every app."""

import logging
from collections.abc import Callable
from contextlib import nullcontext
from typing import TypeVar

from django.db import connection, transaction

logger = logging.getLogger(__name__)
T = TypeVar("T")


def failure_detail(exc: Exception) -> str:
    """How a failure is reported to a caller: its type and message, cut to 300 characters."""
    return f"{type(exc).__name__}: {exc}"[:300]


def guarded(
    label: str,
    work: Callable[[], T],
    *,
    failed: Callable[[Exception], None],
    default: T | None = None,
    savepoint: bool = True,
) -> T | None:
    """Run `work`; when it raises, log it, tell `failed` and return `default` instead.

    With `savepoint` the work runs in its own (sub)transaction, so what it wrote before failing is rolled
    back and a failed statement does not poison an enclosing transaction."""
    try:
        with transaction.atomic() if savepoint else nullcontext():
            return work()
    except Exception as exc:  # noqa: BLE001 - the point: any failure of optional work is contained
        logger.exception("%s failed; continuing without it", label)
        failed(exc)
        return default


def connection_recover() -> None:
    """After a failure outside any transaction, close the connection if the failure left it unusable
    (the database restarted, the connection dropped), so that the next query opens a new one. Outside
    a request nothing else does (a transaction whose rollback fails closes it, not a statement outside
    one): the nightly consolidation went on with the next agent on the dead connection, and every
    one failed ("the connection is closed")."""
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()
