"""The text that search parses: identifiers, paths, hosts and addresses cut into their words.

PostgreSQL's text-search parser keeps a file path, a dotted name, a host or an e-mail address as one
token: "src/worker/queue_runner.py", "django.db.utils.IntegrityError", "alice@example.com" are each a
single lexeme, so a search for "queue_runner.py", "IntegrityError" or "alice" did not find the memory
that holds them. Agents' memories are full of them (the file a bug was in, the exception to catch, who
to ask). So every text is parsed after `/`, `\\`, `@` and `:` become spaces, and so does a `.` between
two letters, digits or underscores (not a full stop before a space): "src worker queue_runner py",
"django db utils IntegrityError", "alice example com". A query is parsed the same way
(search/query.py), so "queue_runner.py" is the phrase queue <-> runner <-> py and finds the path
wherever it sits in a longer one.

One rule, written twice and tested to agree: `memory_search_text(text)`, an IMMUTABLE SQL function that
the stored search vectors' generated columns and triggers call, and `search_text` below for queries.
The rule's classes are ASCII on purpose: PostgreSQL's `[[:alnum:]]` depends on the database's locale,
Python's `\\w` does not, and identifiers and paths are ASCII.
"""

import re

FUNCTION_NAME = "memory_search_text"

_PATTERN = r"[/\\@:]|(?<=[A-Za-z0-9_])\.(?=[A-Za-z0-9_])"
_SEPARATORS = re.compile(_PATTERN)

# standard_conforming_strings is on (PostgreSQL's default since 9.1): backslashes in '...' are literal.
FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {FUNCTION_NAME}(txt text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT regexp_replace(txt, '{_PATTERN}', ' ', 'g') $$;
"""


def search_text(text: str) -> str:
    """`text` with the separators inside identifiers, paths, hosts and addresses made spaces, as
    `memory_search_text` does in the database."""
    return _SEPARATORS.sub(" ", text)
