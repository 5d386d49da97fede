"""The numbers the REST API's schemas and the MCP tools take: a JSON number, never a boolean or a
string, and a float that is finite.

Both validate in pydantic's lax mode, which reads JSON `true` as 1 and `false` as 0 for an int or a
float field (`"supersedes": true` superseded entry 1, `"importance": true` stored 1.0), and a string
of digits as its number (`"importance": "0.5"` stored 0.5, where the OpenAPI document and the tools'
inputSchema say number). Strict mode would refuse those but also `5.0`, a JSON number JSON Schema
counts as an integer; these types refuse the boolean and the string only. (Query parameters do not use
them: their values are strings, read by Ninja's plain `int`.)
"""

from typing import Annotated

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError


def _not_bool_or_str(value, error_type: str, kind: str):
    if isinstance(value, bool):
        raise PydanticCustomError(error_type, f"Input should be {kind}, not a boolean")
    if isinstance(value, str | bytes):
        raise PydanticCustomError(error_type, f"Input should be {kind}, not a string")
    return value


def _int_only(value):
    return _not_bool_or_str(value, "int_type", "a valid integer")


def _float_only(value):
    return _not_bool_or_str(value, "float_type", "a valid number")


def integer(**constraints):
    """An int that is not a boolean or a string, with Field `constraints` (ge, le...). They go here, not
    on the field's Field(): applied after the validator, pydantic still checks them but the JSON Schema shows
    them as "ge"/"le" instead of minimum/maximum."""
    return Annotated[int, Field(**constraints), BeforeValidator(_int_only)]


def number(**constraints):
    """A finite float that is not a boolean or a string, with Field `constraints` (as `integer`). NaN and
    Infinity, which Python's json and pydantic's JSON parser read (no JSON holds them), are refused as not
    finite rather than as out of range ("importance: NaN" was "should be less than or equal to 1")."""
    return Annotated[float, Field(allow_inf_nan=False, **constraints), BeforeValidator(_float_only)]


Integer = integer()
