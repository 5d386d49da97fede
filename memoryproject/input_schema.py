"""The base of every schema a JSON request body (or a part of one) is read into.

pydantic ignores fields a model does not name: `{"content": ..., "importnace": 0.9}` stored the entry with
the default importance and said nothing. An `InputSchema` refuses them (422 naming each, "Extra inputs
are not permitted"), and the OpenAPI document says so with `additionalProperties: false`. Query
parameters are not read into these: an unknown one (a client's cache-buster) is left alone.
"""

from pydantic import ConfigDict

from memoryproject.dict_schema import DictSchema


# A DictSchema: a parsed JSON body is read once, straight from its dict (Ninja's Schema read it twice
# when extra fields are forbidden, the second time through its DjangoGetter: 11 us against 3 for an
# entry, and as many times as a batch has messages).
class InputSchema(DictSchema):
    model_config = ConfigDict(extra="forbid")
