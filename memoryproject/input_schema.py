"""The base of every schema a JSON request body (or a part of one) is read into.

pydantic ignores fields a model does not name: `{"content": ..., "importnace": 0.9}` stored the entry with
the default importance and said nothing. An `InputSchema` refuses them (422 naming each, "Extra inputs
are not permitted"), and the OpenAPI document says so with `additionalProperties: false`. Query
parameters are not read into these: an unknown one (a client's cache-buster) is left alone.
"""

from ninja import Schema
from pydantic import ConfigDict


class InputSchema(Schema):
    model_config = ConfigDict(extra="forbid")
