"""What both transports answer themselves for a message the SDK would misread but a client may well send."""

import json
import re

import pydantic_core
from mcp_types import INVALID_PARAMS, INVALID_REQUEST

LONE_SURROGATES = "Invalid input: text contains invalid Unicode (lone surrogates)."


def _has_lone_surrogate(value) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


_NAME_SHOWN = 64  # an argument's name is the client's: shown in at most this many characters


def _lone_surrogate_loc(value, loc: tuple = ()) -> tuple | None:
    """Where the first lone surrogate is in `value`: the keys and indexes leading to it, as the REST
    API's `loc` (a key holding one ends the path: it cannot be shown)."""
    if isinstance(value, str):
        return loc if _has_lone_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if _has_lone_surrogate(key):
                return (*loc, "(an argument's name)")
            found = _lone_surrogate_loc(item, (*loc, str(key)[:_NAME_SHOWN]))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _lone_surrogate_loc(item, (*loc, index))
            if found is not None:
                return found
    return None


def _lone_surrogates_message(params) -> tuple[str, list]:
    """The error text naming the argument that holds the lone surrogate (`content`, `messages.0.text`),
    as the REST API names the field, and its loc."""
    if not isinstance(params, dict):
        return LONE_SURROGATES, []
    arguments = params.get("arguments")
    loc = _lone_surrogate_loc(arguments) if isinstance(arguments, dict) else None
    if loc is None:
        loc = _lone_surrogate_loc(params)
    if not loc:
        return LONE_SURROGATES, []
    where = ".".join(str(part) for part in loc)
    return f"Invalid input: {where}: contains invalid Unicode (lone surrogates).", list(loc)


def lone_surrogate_answer(body: bytes) -> dict | None:
    """The answer to a request whose JSON escapes half of a surrogate pair ("\\ud83d", an emoji cut in
    two, as JavaScript's JSON.stringify writes it), or None for any other body. The SDK's parser refuses
    such a message whole, as a parse error without the request's id; the REST API answers 422. A tool
    call is answered as a tool error, anything else as invalid params, under the request's id; either
    names the argument that holds it, as the REST API names the field."""
    if b"\\u" not in body:
        return None
    try:
        pydantic_core.from_json(body)
        return None
    except ValueError:
        pass
    try:
        message = json.loads(body)
    except ValueError:
        return None  # malformed: the SDK's parse error
    if not (isinstance(message, dict) and "id" in message and "method" in message):
        return None
    if not _has_lone_surrogate(message):
        return None
    text, loc = _lone_surrogates_message(message.get("params"))
    if message["method"] == "tools/call":
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}
    error = {"code": INVALID_PARAMS, "message": text, "data": {"status": 422, "loc": loc}}
    return {"jsonrpc": "2.0", "id": message["id"], "error": error}


_NULL_ID = re.compile(rb'"id"\s*:\s*null')
NULL_ID = (
    "Invalid Request: a request's id is a string or a number, never null (a notification has no id member)"
)


def null_id_answer(body: bytes) -> dict | None:
    """The answer to a request whose id is null, or None for any other body. JSON-RPC 2.0 makes a
    notification of a message WITHOUT an id member; `"id": null` is a request, and MCP says a request's
    id MUST NOT be null. The SDK took it for a notification: the call was dropped unanswered (HTTP 202,
    nothing on stdio) and the client waited. It is answered Invalid Request (-32600), with a null id as
    JSON-RPC answers a request whose id it cannot use."""
    if not _NULL_ID.search(body):
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None  # malformed: the SDK's parse error
    if not (isinstance(message, dict) and "method" in message and "id" in message and message["id"] is None):
        return None
    return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": NULL_ID}}


def early_answer(body: bytes) -> dict | None:
    """What a transport answers for `body` itself, or None to hand the message to the SDK."""
    return null_id_answer(body) or lone_surrogate_answer(body)


# A token over MEMORY_API_RATE_LIMIT. MCP defines no code for it: one of the JSON-RPC server-error band
# that the MCP schema leaves to implementations (-32000..-32019; the SDK keeps -32000 and -32001).
RATE_LIMITED = -32005


def request_id(body: bytes | None):
    """The id of the JSON-RPC request in `body`, or None (a notification, a batch, not JSON)."""
    try:
        message = json.loads(body) if body else None
    except ValueError:
        return None
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def rate_limited_answer(body: bytes | None, detail: str, retry_after: int) -> dict:
    """The JSON-RPC error for a request refused by the rate limit, under its id: the SDK's client takes
    the error of a non-2xx answer from its body (a body without one becomes "Server returned an error
    response"), and other clients show the body; the message is the REST API's 429 `detail`."""
    error = {"code": RATE_LIMITED, "message": detail, "data": {"status": 429, "retry_after": retry_after}}
    return {"jsonrpc": "2.0", "id": request_id(body), "error": error}
