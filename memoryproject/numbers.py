"""The numbers the REST API's schemas and the MCP tools take: an integer or a float that is not a
boolean, a float that is finite.

Both validate in pydantic's lax mode, which reads JSON `true` as 1 and `false` as 0 for an int or a
float field: `"supersedes": true` superseded entry 1 and `"importance": true` stored 1.0. Strict mode
would refuse the boolean but also `5.0`, a JSON number JSON Schema counts as an integer, and the strings
a query string carries; these types refuse the boolean only. (Query parameters need neither: their
values are strings, and "true" is no integer to pydantic.)
"""

from typing import Annotated

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError


def _int_not_bool(value):
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer, not a boolean")
    return value


def _float_not_bool(value):
    if isinstance(value, bool):
        raise PydanticCustomError("float_type", "Input should be a valid number, not a boolean")
    return value


def integer(**constraints):
    """An int that is not a boolean, with Field `constraints` (ge, le...). They go here, not on the
    field's Field(): applied after the validator, pydantic still checks them but the JSON Schema shows
    them as "ge"/"le" instead of minimum/maximum."""
    return Annotated[int, Field(**constraints), BeforeValidator(_int_not_bool)]


def number(**constraints):
    """A finite float that is not a boolean, with Field `constraints` (as `integer`). NaN and Infinity,
    which Python's json and pydantic's JSON parser read (no JSON holds them), are refused as not finite
    rather than as out of range ("importance: NaN" was "should be less than or equal to 1")."""
    return Annotated[float, Field(allow_inf_nan=False, **constraints), BeforeValidator(_float_not_bool)]


Integer = integer()
