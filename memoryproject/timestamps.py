"""Instants given by callers, as PostgreSQL can store and compare them."""

from datetime import UTC, datetime

from django.core.serializers.json import DjangoJSONEncoder


def utc(value: datetime | None) -> datetime | None:
    """An aware datetime as the same instant in UTC; a naive one, or None, unchanged.

    Python reads UTC offsets up to 23:59; PostgreSQL refuses those past 15:59 ("time zone displacement
    out of range"), so a timestamp or filter sent with one was answered 400 by the database."""
    if value is None or value.utcoffset() is None:
        return value
    return value.astimezone(UTC)


def shown(value: datetime) -> str:
    """An instant as the API's JSON and the MCP tools show it: UTC, to the millisecond, Z."""
    return DjangoJSONEncoder().default(value.astimezone(UTC))
