"""Instants given by callers, as the server stores and compares them: in UTC, within what every time zone
can show, and (for what is stored) never later than the server's clock.

A timestamp without an offset is UTC, as every instant the server gives back is (`...Z`): read in
TIME_ZONE instead (Django's default for a naive value), it moved by the zone's offset, and a client that
sent 10:00 read back 13:00Z under America/Sao_Paulo."""

from datetime import UTC, datetime
from typing import Annotated

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone
from pydantic import AfterValidator

from memoryproject.errors import InvalidInput

# A day inside Python's range at both ends: every time zone's local date and time of an instant between
# them exists (the day a daily note is filed under, a page's local time). Python cannot hold 0001-01-01
# 00:00Z in America/New_York, nor 9999-12-31 23:00Z in Asia/Tokyo.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, tzinfo=UTC)
EARLIEST_TEXT = "0001-01-02T00:00:00Z"


def utc(value: datetime | None) -> datetime | None:
    """The same instant in UTC (None unchanged); a naive datetime is taken as UTC.

    Python reads UTC offsets up to 23:59; PostgreSQL refuses those past 15:59 ("time zone displacement
    out of range"), so a timestamp or filter sent with one was answered 400 by the database. An instant
    whose UTC time Python cannot hold (0001-01-01T00:00+14:00 is in year 0; 9999-12-31T23:00-12:00 in
    year 10000) comes back as the earliest or latest datetime Python has, in UTC (it raised
    OverflowError: a 500)."""
    if value is None:
        return None
    if value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return (datetime.min if value.year < 5000 else datetime.max).replace(tzinfo=UTC)


def bound(value: datetime | None) -> datetime | None:
    """A filter's instant (`since`, `until`) in UTC, brought within EARLIEST..LATEST: nothing stored lies
    outside, so the filter selects the same (`since=0001-01-01T00:00:00Z`: everything)."""
    value = utc(value)
    return None if value is None else min(max(value, EARLIEST), LATEST)


def earliest_check(value: datetime | None) -> datetime | None:
    """A caller's instant to store, in UTC; ValueError (a 422 naming the field, in a schema) before
    EARLIEST. A later one is kept as sent here: `stored` clamps it to the clock when it is stored."""
    value = utc(value)
    if value is not None and value < EARLIEST:
        raise ValueError(f"must be at or after {EARLIEST_TEXT}")
    return value


def stored(value: datetime, *, now: datetime | None = None) -> datetime:
    """A caller's instant as it is stored: UTC, and no later than the server's clock (`now`). A date to
    come is stored as the time it was received: kept as sent, it ranked as the newest memory in search,
    sorted after everything written since, filed its exchange in the daily note of a day not come yet,
    and (an imported session's last activity) kept its session from ever being archived. ValueError
    before EARLIEST."""
    value = earliest_check(value)
    return min(value, now or timezone.now())


def time_range_check(since: datetime | None, until: datetime | None) -> None:
    """InvalidInput unless `since` comes before `until`: every time filter (search, forget) is the
    half-open range since <= created_at < until, so equal bounds would select nothing."""
    if since and until and since >= until:
        raise InvalidInput("since must be earlier than until", [{"loc": ["since"], "msg": "after until"}])


_FORMAT = "ISO 8601 with an offset or Z (none: UTC; a date alone: its midnight UTC)"
SINCE = f"Only what was created at or after this instant: {_FORMAT}"
UNTIL = f"Only what was created before this instant: {_FORMAT}"

# A timestamp a caller gives to be stored (a message's `timestamp`), and a filter's bound.
Instant = Annotated[datetime, AfterValidator(earliest_check)]
InstantBound = Annotated[datetime, AfterValidator(bound)]


def shown(value: datetime) -> str:
    """An instant as the API's JSON and the MCP tools show it: UTC, to the millisecond, Z."""
    return DjangoJSONEncoder().default(value.astimezone(UTC))
