"""ETags of entries and of the project context, and the preconditions a writer sends back with them.

An ETag is opaque to clients. It is derived from the row's id and the instant it last changed
(`updated_at`, to the microsecond), so it is the same for every read of one state and changes with
every change of what the entry shows, as each such write sets `updated_at`: an edit of content,
category, tags, importance or status, and a change of its supersede links alone (`supersedes` and
`superseded_by`: a supersede, held for review or not, the chain joined over an entry deleted, forgotten
or purged, a deleted entry restored into its chain, a rejection or merge in review;
services.chains.entries_links_changed) or of its status by the chain (superseded, reactivated). Counters a
read bumps (access_count, last_accessed_at) are not part of it.

A precondition (`Expected`) is checked by the service that writes, under the row's lock: the write
goes ahead only when the row is still in a state the writer read, else PreconditionFailed (412).
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memoryproject.errors import InvalidInput, PreconditionFailed
from memoryproject.timestamps import shown, utc

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

# RFC 9110: If-Match = "*" / #entity-tag; entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE. A comma may be
# inside the quotes, so the list is read tag by tag rather than split on commas.
_ENTITY_TAG = r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"'
_TAG_LIST = rf"[ \t,]*{_ENTITY_TAG}(?:[ \t]*,[ \t,]*{_ENTITY_TAG})*[ \t,]*"
# What an If-Match header may be, also stated in the OpenAPI document (without a look-ahead, so that
# every JSON Schema validator and test-data generator can use it).
IF_MATCH_PATTERN = rf"^(?:[ \t]*\*[ \t]*|{_TAG_LIST})$"
_IF_MATCH = re.compile(IF_MATCH_PATTERN)
_TAG = re.compile(_ENTITY_TAG)


def _micros(instant: datetime) -> int:
    return (instant - _EPOCH) // _MICROSECOND


def entry_etag(entry) -> str:
    """A VaultEntry's ETag, quoted as in the header."""
    return f'"e{entry.pk}-{_micros(entry.updated_at)}"'


def project_context_etag(project) -> str:
    """The ETag of a project's context (changes when its text does, not with the project's other fields)."""
    return f'"p{project.pk}-{_micros(project.context_changed_at)}"'


def _milliseconds(instant: datetime) -> datetime:
    return instant.replace(microsecond=instant.microsecond // 1000 * 1000)


@dataclass(frozen=True)
class Expected:
    """What a writer expects the row to be: one of `etags` (an If-Match header's; none of them may
    match, then the write is refused whatever the state), or `updated_at` as the API's JSON and the
    MCP tools show it, to the millisecond (two writes within one millisecond are not told apart that
    way; an ETag tells them apart)."""

    etags: frozenset[str] = frozenset()
    updated_at: datetime | None = None

    def matches(self, etag: str, updated_at: datetime | None) -> bool:
        if etag in self.etags:
            return True
        if self.updated_at is None or updated_at is None:
            return False
        return _milliseconds(updated_at.astimezone(UTC)) == _milliseconds(self.updated_at.astimezone(UTC))


def if_match_expected(value: str | None) -> Expected | None:
    """The precondition of an If-Match header: None when there is none or it is `*` (any current state;
    an entry that does not exist is a 404 as without the header). Weak tags never match (If-Match
    compares strongly). A value that is not a list of quoted tags is refused (422), never ignored:
    a client that meant a condition must not have its write go ahead unconditionally."""
    if value is None:
        return None
    if not _IF_MATCH.fullmatch(value):
        raise InvalidInput(
            f"Malformed If-Match header {value[:100]!r}: send `*` or one or more quoted ETags "
            'separated by commas, as the ETag header gave them (e.g. If-Match: "e42-1764168558731000").',
            [
                {
                    "loc": ["header", "If-Match"],
                    "msg": "not a list of quoted entity tags",
                    "type": "value_error",
                }
            ],
        )
    if value.strip(" \t") == "*":
        return None
    return Expected(etags=frozenset(tag for tag in _TAG.findall(value) if not tag.startswith("W/")))


def updated_at_expected(value: datetime | None) -> Expected | None:
    """The precondition of an `expected_updated_at` (MCP): the entry's `updated_at` as a tool showed it.
    Without an offset it is UTC, as every instant a caller sends is (memoryproject.timestamps)."""
    if value is None:
        return None
    # In UTC here: one Python cannot hold in UTC (year 1 at +14:00) matches no state, where comparing
    # it raised OverflowError.
    return Expected(updated_at=utc(value))


def entry_precondition_check(entry, expected: Expected | None) -> None:
    """Refuse a write to `entry` (locked by the caller) that was based on another state of it."""
    if expected is None:
        return
    etag = entry_etag(entry)
    if not expected.matches(etag, entry.updated_at):
        raise PreconditionFailed(
            f"Entry {entry.pk} has changed since it was read: it was last updated at "
            f"{shown(entry.updated_at)} (ETag {etag}). Nothing was changed; read it again and apply "
            "the change to what it holds now.",
            updated_at=entry.updated_at,
            etag=etag,
        )


def project_context_precondition_check(project, expected: Expected | None) -> None:
    """Refuse a write to a project's context (its row locked by the caller) based on another state."""
    if expected is None:
        return
    etag = project_context_etag(project)
    if not expected.matches(etag, project.context_updated_at):
        when = shown(project.context_changed_at)
        raise PreconditionFailed(
            f"The context of project {project.slug!r} has changed since it was read: it was last "
            f"changed at {when} (ETag {etag}). Nothing was changed; read it again and apply the change "
            "to what it holds now.",
            updated_at=project.context_updated_at,
            etag=etag,
        )
