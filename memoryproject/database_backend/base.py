"""Django's PostgreSQL backend, with a connection's health check that costs no round trip when the
connection is idle and sound.

With CONN_HEALTH_CHECKS (settings), Django checks a kept connection before each request's first
query by sending `SELECT 1`: a statement and a round trip on every request, about one in nine of an
entry write's. A connection the server has closed (a restart, pg_terminate_backend, an idle timeout)
has the server's farewell, or the end of the stream, waiting on its socket; a sound idle one has
nothing to read. So the socket is looked at first, and only a connection with something waiting is
sent the `SELECT 1` (which reads it, and fails if the connection is gone).
"""

import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper
from django.db.backends.postgresql.operations import DatabaseOperations as PostgresDatabaseOperations


class DatabaseOperations(PostgresDatabaseOperations):
    def last_executed_query(self, cursor, sql, params):
        """The statement as psycopg sent it, or, for one it ran by its prepared name (memoryproject.prepared:
        psycopg keeps no text for those), the statement as written: what DEBUG's query log and the
        tests' captured queries show, where Django gave None."""
        return super().last_executed_query(cursor, sql, params) or sql


class DatabaseWrapper(PostgresDatabaseWrapper):
    ops_class = DatabaseOperations

    def is_usable(self):
        if self.connection is None or self.connection.closed:
            return False
        try:
            waiting, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        if not waiting:
            return True
        return super().is_usable()
