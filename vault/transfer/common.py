"""What an import reads and reports: the parsed items, the report, date and id helpers shared by the
layouts' parsers."""

import email.utils
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memoryproject.errors import InvalidInput
from memoryproject.timestamps import stored, utc
from vault import services
from vault.models import (
    EntryStatus,
    Project,
)
from vault.transfer.export import WORKSPACE_DIR
from vault.workspace_templates import DEFAULT_WORKSPACE_FILES

BATCH_SIZE = 1000
# pg_advisory_xact_lock namespace (first key; the second is the project id): one import per project at once.
IMPORT_LOCK_CLASS = 0x696D70  # "imp"
IMPORT_ATTEMPTS = 3  # runs of an import that clashed with a concurrent writer, before it gives up
PROGRESS_EVERY = 1000
LEGACY_ID_MAX = 64
MARKER_RE = re.compile(r"^<!--\s*id:(?P<id>\S+?)(?P<attrs>(?:\s+[a-z_]+:\S+?)*)\s*-->[ \t]*$", re.MULTILINE)
ATTR_RE = re.compile(r"([a-z_]+):(\S+)")
SECTION_RE = re.compile(r"^##[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
HEADER_TAG_RE = re.compile(r"#([\w][\w.-]*)")
DAILY_NOTE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:-[1-9]\d*)?\.md$")  # a day's note or its part
SESSION_FILE_FORMAT = 1
MEMORY_VAULT_SKIP_DIRS = {"conversations", "memory", "memories", "sessions", "shared", WORKSPACE_DIR}
# Workspace files with their (enabled, sort order); other upper-case files are free files.
WORKSPACE_KNOWN = {path: (True, order) for path, _, order in DEFAULT_WORKSPACE_FILES} | {
    "SESSION-STATE.md": (True, 4)
}
IMPORTANCE_BY_LEVEL = {"critical": 0.9, "high": 0.8, "medium": 0.6, "moderate": 0.6, "low": 0.4, "info": 0.3}
ROLE_MAP = {
    "user": "user",
    "human": "user",
    "agent": "assistant",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "system": "system",
    "tool": "tool",
}


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", errors="surrogatepass")).hexdigest()


def then(detail: str, action: str) -> str:
    """A service's error detail followed by what the import did about it, as two sentences: details end
    with a full stop or without one ("...NUL (\\u0000) characters File skipped" ran them together)."""
    detail = detail.rstrip()
    return f"{detail}{'' if detail.endswith(('.', '!', '?')) else '.'} {action}"


def legacy_id_fit(value: str) -> str:
    """Source ids are kept as they are when they fit the column, else replaced by a stable hash."""
    value = value.strip()
    return value if len(value) <= LEGACY_ID_MAX else "h:" + _hash(value)[:40]


# A leap second (23:59:60 UTC, or the same instant in another zone: always at minute 59), which Python's
# datetime cannot hold: read as the next second (the one every POSIX clock shows).
LEAP_SECOND_RE = re.compile(r"(?<=:59:)60(?=$|[.,+\-Z ])")
DATE_CLAMPED = "dates to come stored as the import time"
DATE_EARLY = "dates before 0001-01-02 refused (another date used)"
DATE_UNREADABLE = "unreadable dates (another date used)"
DATE_NOTE_NAME = "daily notes named by no date (imported as plain files, which consolidation never reads)"
DATE_EXAMPLES = 3
# A local time followed by a zone's name: `2026-03-01 10:00 Europe/Lisbon` (an IANA name, read with
# zoneinfo) or `2026-03-01 10:00 PST` (one of RFC 2822's names, RFC2822_ZONES).
ZONE_NAME_RE = re.compile(
    r"^(?P<local>\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)\s+(?P<zone>[A-Za-z][\w+\-/]*)$"
)
# The zone abbreviations RFC 2822 (section 4.3) defines, in hours east of UTC: the only ones read, since
# the others are ambiguous (IST is India's, Ireland's or Israel's).
RFC2822_ZONES = {"UT": 0, "UTC": 0, "GMT": 0, "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7}
RFC2822_ZONES |= {"MDT": -6, "PST": -8, "PDT": -7}
# An RFC 2822 date (`Sun, 01 Mar 2026 10:00:00 +0000`, as mail and HTTP write them), read by email.utils.
RFC2822_RE = re.compile(r"^(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{2,4}\s+\d{1,2}:\d{2}")
# The least epoch number read as a date (1973-03-03T09:46:40Z): a smaller one is a year, a count or a
# placeholder 0 far more often than a time in 1970-1973.
EPOCH_SECONDS_MIN = 100_000_000


@dataclass
class DateLog:
    """The dates an import read and did not keep as written, by kind (DATE_*), each with a few examples
    (the file and the value): a date to come is stored as the import time, and one before 0001-01-02 or
    unreadable (2026-02-30, 01/02/2026: day or month first?) is replaced by another (the id's, the file's).
    An operator migrating memory must hear of each. The same value in the same file counts once (a file's
    date is read again by the sessions writer)."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    where: str = ""  # the file being read
    seen: set = field(default_factory=set)

    def note(self, kind: str, value) -> None:
        key = (kind, self.where, str(value))
        if key in self.seen:
            return
        self.seen.add(key)
        self.counts[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < DATE_EXAMPLES:
            shown.append(f"{self.where or '(no file)'}: {value!r}")

    def lines(self) -> list[str]:
        if not self.counts:
            return []
        lines = ["Dates:"]
        for kind in (DATE_CLAMPED, DATE_EARLY, DATE_UNREADABLE, DATE_NOTE_NAME):
            if self.counts[kind]:
                lines.append(f"  {kind}: {self.counts[kind]}, e.g.")
                lines.extend(f"    - {example}" for example in self.examples[kind])
        return lines


# The log of the import running in this context (`dates_logged`); None outside an import.
_DATE_LOG: ContextVar[DateLog | None] = ContextVar("import_date_log", default=None)


@contextmanager
def dates_logged(log: DateLog | None):
    """Within: every date `date_parse` reads is checked into `log`."""
    token = _DATE_LOG.set(log)
    try:
        yield log
    finally:
        _DATE_LOG.reset(token)


def dates_where(where) -> None:
    """The file the dates read next come from, for the running import's DateLog examples."""
    if (log := _DATE_LOG.get()) is not None:
        log.where = str(where)


def _date_note(kind: str, value) -> None:
    if (log := _DATE_LOG.get()) is not None:
        log.note(kind, value)


def daily_note_name_check(relative: str) -> None:
    """A workspace file named as a day's note whose name is no date (`memory/2026-13-45.md`) is kept as
    a plain file, which consolidation never reads: told to the running import as an unreadable date."""
    folder, _, name = relative.partition("/")
    if folder != "memory" or not DAILY_NOTE_RE.match(name):
        return
    try:
        date.fromisoformat(name[:10])
    except ValueError:
        _date_note(DATE_NOTE_NAME, relative)


def _instant_store(parsed: datetime, value) -> datetime | None:
    """`parsed` as stored (memoryproject.timestamps.stored), the running import told of a clamp; None
    (told too) before EARLIEST."""
    now = timezone.now()
    try:
        result = stored(parsed, now=now)
    except ValueError:
        _date_note(DATE_EARLY, value)
        return None
    if utc(parsed) > now:
        _date_note(DATE_CLAMPED, value)
    return result


def date_parse(value, *, logged: bool = True) -> datetime | None:
    """ISO 8601 (with or without seconds, zone, 'Z'; a leap second as the next second), a date alone, a
    local time with a zone's name or an RFC 2822 date (`_named_zone_parse`), or epoch
    milliseconds/seconds (from EPOCH_SECONDS_MIN), as the instant is stored
    (memoryproject.timestamps.stored): in UTC, a date to come as now. Dates without a zone are UTC, as the
    seed wrote them (`toISOString`). None for what is none of these, or before 0001-01-02 (an offset
    PostgreSQL refuses, or a year it stores but Python cannot read back). Within an import
    (`dates_logged`) a date clamped, refused or unreadable is logged; not with `logged` off (a value tried
    as a date that need not be one, as an entry's id)."""
    if not logged:
        with dates_logged(None):
            return date_parse(value)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        if seconds < EPOCH_SECONDS_MIN:  # a year (2026 was 1970-01-01T00:33:46Z), a count, a placeholder 0
            _date_note(DATE_UNREADABLE, value)
            return None
        try:
            parsed = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            _date_note(DATE_UNREADABLE, value)
            return None
        return _instant_store(parsed, value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if text.isdigit() and len(text) in (10, 13):
        return date_parse(int(text))
    named = _named_zone_parse(text)
    if named is not None:
        return _instant_store(named, value)
    text = text.replace("Z", "+00:00").replace(" ", "T", 1)
    leap = LEAP_SECOND_RE.search(text) is not None
    try:
        parsed = datetime.fromisoformat(LEAP_SECOND_RE.sub("59", text, count=1))
    except ValueError:
        _date_note(DATE_UNREADABLE, value)
        return None
    return _instant_store(parsed + timedelta(seconds=1) if leap else parsed, value)


def _named_zone_parse(text: str) -> datetime | None:
    """A date whose zone is named (`2026-03-01 10:00 Europe/Lisbon`, `... PST`) or an RFC 2822 date
    (`Sun, 01 Mar 2026 10:00:00 +0000`), as an aware datetime (`-0000`: UTC); None for any other text, and
    for a zone that is neither an offset, an IANA name nor one of RFC 2822's names."""
    if RFC2822_RE.match(text):
        zone = text.rsplit(None, 1)[-1]
        if not (re.fullmatch(r"[+-]\d{4}", zone) or zone.upper() in RFC2822_ZONES):
            return None  # email.utils would read a zone it does not know as UTC
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    match = ZONE_NAME_RE.match(text)
    if match is None:
        return None
    try:
        local = datetime.fromisoformat(match["local"].replace(" ", "T").replace(",", "."))
    except ValueError:
        return None
    zone = match["zone"]
    if zone.upper() in RFC2822_ZONES:
        return local.replace(tzinfo=timezone.get_fixed_timezone(RFC2822_ZONES[zone.upper()] * 60))
    try:
        return local.replace(tzinfo=ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _mtime(path: Path) -> datetime:
    """A file's modification time as stored; one to come (a clock set wrong) is logged as the file's."""
    modified = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    log = _DATE_LOG.get()
    where = log.where if log is not None else ""
    dates_where(path)
    try:
        return _instant_store(modified, f"modified {modified.isoformat()}") or stored(modified)
    finally:
        dates_where(where)


def _source_path(path: Path, report: "ImportReport") -> Path | None:
    """Where a source file really is, if that is inside the folder being imported (`report.source_root`);
    None, reported, when it is not: a symbolic link (the file's own or a folder's on its way) that leads
    out of the folder would let an untrusted folder pull any file the server can read into memory. A
    link that stays inside the folder is followed: it shows nothing the folder does not hold."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        report.problem(path, f"cannot be read ({getattr(exc, 'strerror', None) or exc}); skipped")
        return None
    if report.source_root is not None and not real.is_relative_to(report.source_root):
        report.problem(path, "is a symbolic link to outside the folder being imported; skipped")
        return None
    return real


def _over_source_limit(path: Path, real: Path, report: "ImportReport") -> bool:
    """Whether a source file is over MEMORY_IMPORT_MAX_SOURCE_BYTES (reported with its size, not read):
    every file is read whole, so a multi-gigabyte one would exhaust the server's memory."""
    limit = settings.MEMORY_IMPORT_MAX_SOURCE_BYTES
    try:
        size = real.stat().st_size
    except OSError:
        return False  # the read says why it cannot be read
    if size > limit:
        report.problem(
            path,
            f"is {size} bytes; the limit is {limit} bytes (MEMORY_IMPORT_MAX_SOURCE_BYTES). File skipped",
        )
    return size > limit


def _read_text(path: Path, report: "ImportReport", *, exact: bool = False) -> str | None:
    """A source file's text, read as a text file: CRLF and CR become "\n" and a UTF-8 byte order mark at
    its start (Notepad and other Windows tools write one) is not part of it. With `exact` (a file our
    export wrote, holding stored text as it is) the bytes are decoded as they are: line endings and a
    leading U+FEFF kept. A link out of the folder being imported is not read (`_source_path`)."""
    dates_where(path)
    real = _source_path(path, report)
    if real is None or _over_source_limit(path, real, report):
        return None
    try:
        if exact:
            return real.read_bytes().decode("utf-8")
        return real.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        report.problem(path, "not UTF-8 text; skipped")
    except OSError as exc:
        report.problem(path, f"cannot be read ({exc.strerror}); skipped")
    return None


def _read_json(path: Path, report: "ImportReport"):
    text = _read_text(path, report)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        report.problem(path, f"corrupt JSON ({exc.msg} at line {exc.lineno}); skipped")
        return None


# --- What an import found and did ----------------------------------------------------------------


@dataclass
class ParsedMessage:
    client_id: str
    role: str  # user | assistant | tool | system
    text: str
    internal: bool = False
    created_at: datetime | None = None
    parent_client_id: str | None = None


@dataclass
class ParsedConversation:
    """A conversation read from a seed's files, validated, waiting to become a session with messages."""

    source: str
    agent: str  # target agent slug (after --agent-map)
    external_id: str  # the session / chat id in the source system
    messages: list[ParsedMessage]
    saved_at: datetime | None = None
    model_id: str = ""
    metadata: dict = field(default_factory=dict)
    kind: str = "conversation"
    source_agent: str = ""  # the agent's id in the source, before --agent-map ("": the same as `agent`)


@dataclass
class ParsedCheckpoint:
    """A checkpoint file (last messages, chat id, model id), waiting to become a sessions Checkpoint."""

    source: str
    agent: str
    saved_at: datetime
    messages: list[ParsedMessage]
    chat_id: str = ""
    model_id: str = ""
    expired: bool = False
    kind: str = "checkpoint"
    source_agent: str = ""  # the agent's id in the source, before --agent-map ("": the same as `agent`)


@dataclass
class ParsedSessionFile:
    """A session file of our export (`{agent}/sessions/*.json`), read as JSON, for the sessions writer."""

    source: str
    agent: str
    data: dict
    saved_at: datetime
    kind: str = "session"
    source_agent: str = ""  # the agent's id in the source, before --agent-map ("": the same as `agent`)
    key: str = ""  # its id in the export (the file's name): entries' `source_session` names it


@dataclass
class EntryItem:
    category: str
    content: str
    created_at: datetime
    legacy_id: str
    tags: list[str] = field(default_factory=list)
    importance: float | None = None
    status: str = EntryStatus.ACTIVE
    verbatim: bool = False  # the content as it is, whitespace at its ends included (our export's entries)
    supersedes: str | None = None  # the source id of the entry this one supersedes (our export's entries)
    # What our export's `.entries.json` says of it (vault.transfer.entry_meta); the defaults otherwise.
    author: str = ""
    source: str = ""
    updated_at: datetime | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None
    confidence: float | None = None
    provenance: tuple[str, str, list[str]] | None = None  # (agent folder, session key, message keys)
    folder: str = ""  # the agent's folder in our export, whose `sessions/` its `session-{id}` tags name


@dataclass
class ImportReport:
    dry_run: bool = False
    counts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    progress: Callable[[str], None] | None = None
    source_root: Path | None = None  # the folder being imported, resolved: no file outside it is read
    dates: DateLog = field(default_factory=DateLog)  # dates not kept as written (date_parse, dates_logged)

    def say(self, message: str) -> None:
        if self.progress:
            self.progress(message)

    def problem(self, where, message: str) -> None:
        self.problems.append(f"{where}: {message}")
        self.counts["problems"] += 1
        self.say(f"  ! {where}: {message}")

    def strict_failed(self) -> bool:
        """Whether --strict refuses this import: a problem was reported, or a date was not kept as written
        (one to come stored as the import time, one too early or unreadable replaced): doubtful input."""
        return bool(self.problems or sum(self.dates.counts.values()))

    def strict_failure(self) -> str:
        """Why an import run with --strict fails: it reported problems or dates it did not keep (what
        could be imported was)."""
        done = "nothing was written (dry run)" if self.dry_run else "the rest was imported"
        dates = sum(self.dates.counts.values())
        what = f"{len(self.problems)} problem(s) reported"
        if dates:
            what += f", {dates} date(s) not kept as written"
        return (
            f"--strict: {what} (listed above); {done}. Fix the source and run the import again: what is "
            "already imported is skipped."
        )

    def summary(self) -> str:
        head = "Dry run: nothing was written. Would have:" if self.dry_run else "Import summary:"
        lines = [head]
        for key in sorted(self.counts):
            lines.append(f"  {key}: {self.counts[key]}")
        lines.extend(self.dates.lines())
        if self.problems:
            lines.append(f"Problems ({len(self.problems)}):")
            lines.extend(f"  - {problem}" for problem in self.problems)
        return "\n".join(lines)


class _DryRunRollback(Exception):
    pass


def _import_lock(project: Project, report: ImportReport) -> None:
    """Wait for any other import into `project` to commit (held to the end of this transaction)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [IMPORT_LOCK_CLASS, project.pk])
        if cursor.fetchone()[0]:
            return
        report.say(f"waiting for another import into project {project.slug} to finish...")
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [IMPORT_LOCK_CLASS, project.pk])


def _concurrent_clash(exc: Exception) -> str | None:
    """What a database error says when it is a clash with a concurrent writer (a unique or foreign key
    violation, a deadlock, a serialization failure); None for any other error."""
    state = getattr(exc.__cause__, "sqlstate", None) or ""
    if not (state.startswith("23") or state in {"40001", "40P01"}):
        return None
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def agent_map_parse(text: str | None) -> dict[str, str]:
    """`old=new,old2=new2` -> {"old": "new", ...}; malformed pairs are an InvalidInput."""

    mapping = {}
    for pair in filter(None, (part.strip() for part in (text or "").split(","))):
        old, sep, new = pair.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise InvalidInput(f"--agent-map: {pair!r} is not old=new")
        mapping[old.strip()] = services.slug_check(new.strip(), field="agent")
    return mapping
