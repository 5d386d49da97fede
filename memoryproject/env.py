"""Typed readers for settings that come from the environment.

Each reader fails at start-up with a message naming the variable, so a typo in a deployment is
found when the server starts rather than when the value is first used.
"""

import os
from datetime import datetime

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str = "", *, keep_empty: bool = False) -> str:
    """The variable's value; `default` when it is unset, or empty unless `keep_empty` (for a setting
    whose empty value means something of its own, such as "no limit")."""
    value = _raw(name)
    if value is None or (value == "" and not keep_empty):
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no, on/off), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    _check_range(name, number, minimum, maximum)
    return number


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name} must be a finite number, got {value!r}")
    _check_range(name, number, minimum, maximum)
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_cron(name: str, default: str) -> str:
    """A five-field cron expression, checked as the job cluster will use it (croniter, which django-q2
    computes each next run with): a field out of range, or a date that never comes (30 February), would
    otherwise be stored by setup_schedules and fail only when the cluster next reads the schedule."""
    from croniter import croniter

    value = env_str(name, default)
    if len(value.split()) != 5:
        raise ImproperlyConfigured(f"{name} must be a five-field cron expression, got {value!r}")
    try:
        croniter(value, datetime.now()).get_next(datetime)
    except (ValueError, KeyError) as exc:  # croniter's errors are ValueErrors; a bad name is a KeyError
        raise ImproperlyConfigured(f"{name} is not a valid cron expression ({exc}), got {value!r}") from None
    return value


def _check_range(name, number, minimum, maximum) -> None:
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}")
