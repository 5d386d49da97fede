"""The base of every schema a JSON request body (or a part of one) is read into.

pydantic ignores fields a model does not name: `{"content": ..., "importnace": 0.9}` stored the entry with
the default importance and said nothing. An `InputSchema` refuses them (422 naming each, "Extra inputs
are not permitted"), and the OpenAPI document says so with `additionalProperties: false`. Query
parameters are not read into these: an unknown one (a client's cache-buster) is left alone.

A request body is JSON: objects arrive as dicts, and a dict is validated once, as it is. ninja's Schema
validates a schema that forbids extra fields twice (the input as it is, for the extra check, then again
through its DjangoGetter, which reads ORM objects), and a nested one twice within each of those: each of
a 50-message append's messages was validated four times (1.6 ms of a batch's Python, against 0.15 ms once).
Anything else (an object read by its attributes) still goes ninja's way.
"""

from typing import Any

from ninja import Schema
from ninja.schema import DjangoGetter
from pydantic import ConfigDict, ModelWrapValidatorHandler, ValidationInfo, model_validator


class InputSchema(Schema):
    model_config = ConfigDict(extra="forbid")

    # Named as ninja's validator, so that it replaces it rather than running around it.
    @model_validator(mode="wrap")
    @classmethod
    def _run_root_validator(
        cls, values: Any, handler: ModelWrapValidatorHandler, info: ValidationInfo
    ) -> Any:
        if isinstance(values, dict):
            return handler(values)
        handler(values)  # the extra-fields check, as ninja makes it
        return handler(DjangoGetter(values, cls, info.context))
