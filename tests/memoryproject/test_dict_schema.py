"""Schemas read from plain dicts skip Ninja's DjangoGetter (memoryproject/dict_schema.py)
and render the same bytes."""

import ninja.schema
import pytest

from memoryproject.dict_schema import DictSchema
from tests.factories import EntryFactory


@pytest.fixture
def getters_made(monkeypatch):
    made = []
    original = ninja.schema.DjangoGetter.__init__

    def counting_init(self, obj, schema_cls, context=None):
        made.append(schema_cls.__name__)
        original(self, obj, schema_cls, context)

    monkeypatch.setattr(ninja.schema.DjangoGetter, "__init__", counting_init)
    return made


def _search(api, token, agent):
    return api.get("/search", token=token, q="deploy", agent=agent.slug, mode="lexical")


def test_it_validates_search_results_without_djangogetter(api, token_a, agent_a, getters_made):
    for n in range(5):
        EntryFactory(agent=agent_a, content=f"deploy note {n}")

    response = _search(api, token_a, agent_a)

    assert response.status_code == 200
    assert len(response.json()["results"]) == 5
    assert "SearchResultOut" not in getters_made
    assert "SearchOut" not in getters_made


def test_it_renders_the_same_bytes_as_ninjas_way(api, token_a, agent_a, monkeypatch):
    for n in range(5):
        EntryFactory(agent=agent_a, content=f"deploy note {n}", tags=["ops"], importance=0.25)
    fast = _search(api, token_a, agent_a).content

    monkeypatch.setattr(DictSchema, "_ninja_resolvers", {"never": None})  # every schema takes Ninja's way
    slow = _search(api, token_a, agent_a).content

    strip = lambda body: body.split(b'"took_ms"')[0]  # noqa: E731 (the time differs between calls)
    assert strip(fast) == strip(slow)
    assert b'"results": [{' in fast


class _WithResolver(DictSchema):
    name: str

    @staticmethod
    def resolve_name(obj) -> str:
        return "resolved"


class _Plain(DictSchema):
    name: str
    size: int = 0


def test_it_still_runs_resolvers_on_dicts():
    assert _WithResolver.model_validate({"name": "given"}).name == "resolved"


def test_it_still_reads_objects_through_their_attributes(getters_made):
    class Row:
        name = "row"
        size = 3

    assert _Plain.model_validate(Row()).model_dump() == {"name": "row", "size": 3}
    assert getters_made == ["_Plain"]


def test_it_refuses_a_dict_that_does_not_fit():
    with pytest.raises(ValueError):
        _Plain.model_validate({"size": 1})


def test_it_reads_a_request_body_once_without_djangogetter(api, token_a, agent_a, getters_made):
    body = {"category": "lessons", "content": "Deploys go out on Tuesdays.", "tags": ["ops"]}

    response = api.post(f"/agents/{agent_a.slug}/entries", body, token=token_a)

    assert response.status_code == 201
    assert "EntryIn" not in getters_made


def test_a_request_body_with_an_unknown_field_is_still_refused(api, token_a, agent_a):
    body = {"category": "lessons", "content": "Deploys go out on Tuesdays.", "importnace": 0.9}

    response = api.post(f"/agents/{agent_a.slug}/entries", body, token=token_a)

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "payload", "importnace"]
    assert response.json()["errors"][0]["type"] == "extra_forbidden"
