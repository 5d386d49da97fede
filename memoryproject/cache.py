"""The database cache used when there is no Redis: Django's, culled by expiry rather than by size.

Django's database cache counts the whole table on every write and deletes expired keys only once
that count passes MAX_ENTRIES, then drops a third of the live keys, in key order. Rate-limit counters
make one key per token and time window, never read again once the window has passed: with a small
MAX_ENTRIES a busy server drops live counters (and their limits stop holding); with a large one the
table fills with dead windows and every request pays a count over all of them. This one deletes
expired keys at most once every CULL_SECONDS per process, and never deletes a live key.
"""

import time

from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import connections

CULL_SECONDS = 30.0


class DatabaseCache(DjangoDatabaseCache):
    def __init__(self, table, params):
        super().__init__(table, params)
        # Every write asks _cull (Django calls it when the count passes _max_entries); it decides by
        # the time since its last cull instead.
        self._max_entries = -1
        self._culled_at = float("-inf")

    def _cull(self, db, cursor, now, num):
        if time.monotonic() - self._culled_at < CULL_SECONDS:
            return
        self._culled_at = time.monotonic()
        connection = connections[db]
        cursor.execute(
            f"DELETE FROM {connection.ops.quote_name(self._table)} WHERE expires < %s",
            [connection.ops.adapt_datetimefield_value(now)],
        )
