"""The booleans the REST API's bodies and query strings and the MCP tools take: true or false, nothing else.

pydantic's lax mode reads 1, 0, 1.0 and the strings "true", "yes", "on", "t", "y", "1" (and their
opposites, in any case) as booleans: `"replace_all": "no"`, `"internal": 1` or `?dry_run=no` were
taken, so a client that sent the wrong thing never learnt it. In a JSON body or a tool's arguments a
boolean is now JSON `true` or `false` (`Boolean`, pydantic's strict mode); in a query string, whose
values are all text, `true` or `false` in any case (`QueryBoolean`: Python's requests sends a True as
`True`). Anything else is refused, naming the field (422 in REST, a tool error in MCP).
"""

from typing import Annotated

from pydantic import BeforeValidator, Strict
from pydantic_core import PydanticCustomError

_QUERY_VALUES = {"true": True, "false": False}


def _query_boolean(value):
    if isinstance(value, str) and value.lower() in _QUERY_VALUES:
        return _QUERY_VALUES[value.lower()]
    raise PydanticCustomError("bool_parsing", "Input should be true or false")


Boolean = Annotated[bool, Strict()]
QueryBoolean = Annotated[bool, Strict(), BeforeValidator(_query_boolean)]
