"""The database cache used when there is no Redis: Django's, culled by expiry rather than by size, with
atomic integer counters.

Django's database cache counts the whole table on every write and deletes expired keys only once
that count passes MAX_ENTRIES, then drops a third of the live keys, in key order. Rate-limit counters
make one key per token and time window, never read again once the window has passed: with a small
MAX_ENTRIES a busy server drops live counters (and their limits stop holding); with a large one the
table fills with dead windows and every request pays a count over all of them. This one deletes
expired keys at most once every CULL_SECONDS per process, and never deletes a live key.

Counting is what rate limiting asks of the cache on every API request (django-ratelimit: `add` the
window's key, then `incr` it). Django's `incr` is a read followed by a write, so two web processes
counting the same token at once both write the same number and one request goes uncounted; it also
resets the key's expiry. Here an integer is stored as readable text (`#int:<n>`, never the start of
Django's base64 pickles), `add` is one INSERT .. ON CONFLICT that also takes over an expired key, and
`incr` is one UPDATE that adds in place and keeps the expiry: two statements per request instead of
seven, and no lost counts.

A window's key, once it exists, lives until its window is over (its expiry is the window's end plus
django-ratelimit's margin), so each process remembers the counters it has seen and their expiry, and
`add` of one still live answers False without asking the database: one statement per request. Should
one be gone all the same (deleted by hand, the table cleared elsewhere), `incr` finds nothing,
forgets it, and the next `add` stores it again.
"""

import base64
import pickle
import threading
import time
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import connections, models, router
from django.utils.timezone import now as tz_now

from memoryproject.prepared import prepared_cursor

CULL_SECONDS = 30.0
INT_PREFIX = "#int:"
LIVE_KEYS_MAX = 10_000  # counters a process remembers (one per token and window)


def _is_int(value) -> bool:
    return type(value) is int  # not bool: True must come back as True


class DatabaseCache(DjangoDatabaseCache):
    def __init__(self, table, params):
        super().__init__(table, params)
        # Every write asks _cull (Django calls it when the count passes _max_entries); it decides by
        # the time since its last cull instead.
        self._max_entries = -1
        self._culled_at = float("-inf")
        # Integer counters this process knows to exist, with their expiry (see the module's docstring).
        self._live: dict[str, datetime] = {}
        self._live_lock = threading.Lock()

    def _live_until(self, key: str, expires: datetime | None) -> None:
        with self._live_lock:
            if expires is None:
                self._live.pop(key, None)
                return
            if len(self._live) >= LIVE_KEYS_MAX:
                now = tz_now()
                self._live = {k: e for k, e in self._live.items() if e > now}
                if len(self._live) >= LIVE_KEYS_MAX:
                    self._live.clear()
            self._live[key] = expires

    def _cull(self, db, cursor, now, num):
        if time.monotonic() - self._culled_at < CULL_SECONDS:
            return
        self._culled_at = time.monotonic()
        connection = connections[db]
        cursor.execute(
            f"DELETE FROM {connection.ops.quote_name(self._table)} WHERE expires < %s",
            [connection.ops.adapt_datetimefield_value(now)],
        )

    def _expires(self, timeout) -> datetime:
        timeout = self.get_backend_timeout(timeout)
        expires = datetime.max if timeout is None else datetime.fromtimestamp(timeout, tz=UTC)
        if not settings.USE_TZ:
            expires = expires.replace(tzinfo=None)
        return expires.replace(microsecond=0)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        if not _is_int(value):
            return super().add(key, value, timeout, version=version)
        key = self.make_key(key, version=version)
        now = tz_now()
        known = self._live.get(key)
        if known is not None and known >= now:
            return False
        self.validate_key(key)  # a live counter's key was checked when it was stored
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        table = connection.ops.quote_name(self._table)
        with connection.cursor() as cursor:
            self._cull(db, cursor, now, 0)
            # Stored (True and its expiry), or already there and live (False and that key's expiry).
            cursor.execute(
                f"WITH stored AS (INSERT INTO {table} (cache_key, value, expires) VALUES (%s, %s, %s) "
                f"ON CONFLICT (cache_key) DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires "
                f"WHERE {table}.expires < %s RETURNING expires) "
                f"SELECT true, expires FROM stored UNION ALL "
                f"SELECT false, expires FROM {table} WHERE cache_key = %s AND expires >= %s "
                f"AND NOT EXISTS (SELECT 1 FROM stored)",
                [key, f"{INT_PREFIX}{value}", self._expires(timeout), now, key, now],
            )
            row = cursor.fetchone()
        if row is None:
            # Stored by a transaction that committed after this statement began: live, expiry unknown.
            return False
        stored, expires = row
        self._live_until(key, expires)
        return stored

    def incr(self, key, delta=1, version=None):
        made = self.make_key(key, version=version)
        if made not in self._live:  # a live counter's key was checked when it was stored
            self.validate_key(made)
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        table = connection.ops.quote_name(self._table)
        start = len(INT_PREFIX) + 1
        # Prepared: every API request counts itself here.
        with prepared_cursor(db) as cursor:
            cursor.execute(
                f"UPDATE {table} SET value = %s || (substr(value, {start})::bigint + %s)::text "
                f"WHERE cache_key = %s AND expires >= %s AND starts_with(value, %s) "
                f"RETURNING substr(value, {start})::bigint",
                [INT_PREFIX, delta, made, tz_now(), INT_PREFIX],
            )
            row = cursor.fetchone()
        if row is not None:
            return row[0]
        # Missing (ValueError, as Django's), expired, or a value stored by `set` (pickled).
        self._live_until(made, None)
        return super().incr(key, delta, version=version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._live_until(self.make_and_validate_key(key, version=version), None)
        return super().set(key, value, timeout, version=version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        self._live_until(self.make_and_validate_key(key, version=version), None)
        return super().touch(key, timeout, version=version)

    def delete(self, key, version=None):
        self._live_until(self.make_and_validate_key(key, version=version), None)
        return super().delete(key, version=version)

    def delete_many(self, keys, version=None):
        for key in keys:
            self._live_until(self.make_and_validate_key(key, version=version), None)
        return super().delete_many(keys, version=version)

    def clear(self):
        with self._live_lock:
            self._live.clear()
        return super().clear()

    def get_many(self, keys, version=None):
        """Django's get_many, reading `#int:` counters as well as pickled values."""
        if not keys:
            return {}
        key_map = {self.make_and_validate_key(key, version=version): key for key in keys}
        db = router.db_for_read(self.cache_model_class)
        connection = connections[db]
        quote_name = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT cache_key, value, expires FROM {quote_name(self._table)} "
                f"WHERE cache_key IN ({', '.join(['%s'] * len(key_map))})",
                list(key_map),
            )
            rows = cursor.fetchall()
        result = {}
        expired_keys = []
        expression = models.Expression(output_field=models.DateTimeField())
        converters = connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)
        for key, value, expires in rows:
            for converter in converters:
                expires = converter(expires, expression, connection)
            if expires < tz_now():
                expired_keys.append(key)
                continue
            value = connection.ops.process_clob(value)
            if value.startswith(INT_PREFIX):
                result[key_map.get(key)] = int(value[len(INT_PREFIX) :])
            else:
                result[key_map.get(key)] = pickle.loads(base64.b64decode(value.encode()))
        self._base_delete_many(expired_keys)
        return result
