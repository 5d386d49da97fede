"""A cursor whose statements PostgreSQL prepares: the entry write path's hand-written statements.

Django's cursors bind parameters on the client (each value quoted into the SQL text), so PostgreSQL
parses and plans every statement anew, and psycopg never prepares them. The few statements every
entry write runs (the token, the rate limit's counter, the agent, the project's flags, the write
lock, the duplicate candidates, the INSERT) are the same text each time: bound on the server, psycopg
prepares each after its fifth run on a connection (settings' prepare_threshold) and PostgreSQL plans
it once (the generic plan, settings' plan_cache_mode). The cursor is Django's wrapper around it, so
errors come out as Django's (a lost database is a 503 as for any query) and tests see its queries.
"""

from django.db import connections
from django.db.backends.postgresql.base import ServerBindingCursor


def prepared_cursor(using: str = "default"):
    """A Django cursor over a server-binding psycopg cursor on `using`'s connection (use it in `with`).

    Only for statements written by hand whose every parameter has a type PostgreSQL can tell from
    the statement (a column compared or assigned, or an explicit cast), as server binding needs."""
    connection = connections[using]
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection._prepare_cursor(ServerBindingCursor(connection.connection))
