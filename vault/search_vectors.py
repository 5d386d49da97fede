"""How the vault's stored text becomes search vectors: the generated columns' expressions (both
languages' stems, identifier parts, the scope lexemes that let one GIN index serve every agent and
project), the GIN pending-list size, and the transaction-local settings a writer gives the file
triggers."""

from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Func
from django.db.models.expressions import RawSQL

from vault.search_text import FUNCTION_NAME as SEARCH_TEXT_FUNCTION
from vault.search_text import PARTS_FUNCTION_NAME, PARTS_TRANSITION, parts_cut_query

# New and updated rows wait in a GIN index's pending list until it is merged, and every search
# reads the whole list: PostgreSQL's default limit (4 MB) costs each search ~5 ms once it fills.
# 256 kB keeps that under half a millisecond; the merges get more frequent and each one smaller.
GIN_PENDING_KB = 256


# A transaction-local setting (set_config(..., true)) a writer turns on around a workspace-file write whose
# words are already in the typo vocabulary, so search's file trigger skips parsing them again: the day's
# note logs exchanges whose messages were stored, and their words added, in the same transaction.
WORDS_KNOWN_SETTING = "memory.words_known"


# A transaction-local setting the writer of an append to a workspace file turns on when it sets the file's
# new search vector itself (the stored vector and the tail's lexemes): the file's search-vector trigger
# then keeps it instead of finding the tail again in the whole file (vault migration 0015).
VECTOR_GIVEN_SETTING = "memory.file_vector_given"


# Scope lexemes: every search vector also holds '#a<agent id>' and '#p<project id>', so that search
# ANDs the scope into its tsquery and the GIN index cuts the candidates to one agent or project
# (search/selectors.py). '#' never survives PostgreSQL's text parser and the query compiler only
# emits parser output or \w-words, so no user query can produce or prefix-match these lexemes; they
# are never in text, snippets or the typo vocabulary (built from the text, not the vector).
SCOPE_AGENT_PREFIX = "#a"
SCOPE_PROJECT_PREFIX = "#p"


def scope_lexeme(prefix: str, column: str) -> Func:
    """IMMUTABLE `('<prefix>' || column::text)::tsvector` for a generated search vector (int -> text
    and text -> tsvector are I/O casts of immutable functions on PostgreSQL 15 and 18)."""
    return Func(
        models.F(column),
        template=f"('{prefix}' || %(expressions)s::text)::tsvector",
        output_field=SearchVectorField(),
    )


def scope_lexemes() -> list[Func]:
    return [scope_lexeme(SCOPE_AGENT_PREFIX, "agent_id"), scope_lexeme(SCOPE_PROJECT_PREFIX, "project_id")]


# Recency windows (search.selectors._epoch_windows): each entry's vector also holds its agent's and its
# project's epoch lexemes, '#a<agent>e<id >> 13>' and '#p<project>e<id >> 13>' (epochs of 8,192
# ids). Ids grow with insertion, so an epoch's rows sit together on disk and in every GIN posting
# list: a search AND-ed with the few epochs that hold an agent's newest rows reads only that part of
# the posting lists, whatever the table's size.
SCOPE_EPOCH_SHIFT = 13
SCOPE_EPOCH_MARK = "e"


def scope_epoch_lexeme(prefix: str, column: str) -> Func:
    """IMMUTABLE `('<prefix><column>e<id >> 13>')::tsvector`: the row's scope and id epoch."""
    return Func(
        models.F(column),
        models.F("id"),
        template=(f"('{prefix}' || %(expressions)s >> {SCOPE_EPOCH_SHIFT})::text)::tsvector"),
        arg_joiner=f"::text || '{SCOPE_EPOCH_MARK}' || (",
        output_field=SearchVectorField(),
    )


def scope_epoch_lexemes() -> list[Func]:
    return [
        scope_epoch_lexeme(SCOPE_AGENT_PREFIX, "agent_id"),
        scope_epoch_lexeme(SCOPE_PROJECT_PREFIX, "project_id"),
    ]


def searched_text(text: str | models.Expression) -> Func:
    """A text column (its name) or expression as search parses it: identifiers, paths and addresses
    cut into their words (vault/search_text.py)."""
    source = models.F(text) if isinstance(text, str) else text
    return Func(source, function=SEARCH_TEXT_FUNCTION, output_field=models.TextField())


def bilingual_vectors(field: str | models.Expression, weight: str = "B") -> list[SearchVector]:
    """English and Portuguese stemming of one text column (its name) or expression (the languages
    agents' users write)."""
    return [
        SearchVector(searched_text(field), config="english", weight=weight),
        SearchVector(searched_text(field), config="portuguese", weight=weight),
    ]


# The weight of an identifier's parts: a match there counts a quarter of one in the text's own words.
PARTS_WEIGHT = "D"


def identifier_parts(text: str | models.Expression) -> Func:
    """The identifiers of a text column (its name) or expression cut into their parts ("getUserById":
    "get User By Id"; vault/search_text.py), "" when it holds none."""
    source = models.F(text) if isinstance(text, str) else text
    return Func(source, function=PARTS_FUNCTION_NAME, output_field=models.TextField())


def parts_vectors(text: str | models.Expression) -> list[SearchVector]:
    """The bilingual vectors of a text's identifier parts, at PARTS_WEIGHT."""
    return bilingual_vectors(identifier_parts(text), weight=PARTS_WEIGHT)


def text_vectors(text: str) -> RawSQL:
    """The bilingual vectors of a value (weight B) then those of its identifiers' parts (PARTS_WEIGHT),
    concatenated: what `bilingual_vectors(Value(text))` and `parts_vectors(Value(text))` give, with the
    text sent once and cut once (memory_search_text, memory_identifier_parts), not four times and twice.
    The sub-select's OFFSET 0 keeps PostgreSQL from pulling it up into the expressions, which would
    inline both cuts into each vector again. A daily note's 17 kB tail (an append of 50 messages): about
    1.5 ms of the database's CPU less (docs/benchmarks.md)."""
    vectors = " || ".join(
        f"setweight(to_tsvector('{config}', t.{column}), '{weight}')"
        for column, weight in (("searched", "B"), ("parts", PARTS_WEIGHT))
        for config in ("english", "portuguese")
    )
    return RawSQL(
        f"(SELECT {vectors} FROM (SELECT COALESCE({SEARCH_TEXT_FUNCTION}(v.txt), '') AS searched,"
        f" COALESCE({SEARCH_TEXT_FUNCTION}({PARTS_FUNCTION_NAME}(v.txt)), '') AS parts"
        " FROM (SELECT %s::text AS txt) v OFFSET 0) t)",
        [text],
        output_field=SearchVectorField(),
    )


# An entry's text vector: its tags, its content in both languages, its identifiers' parts in both, in
# that order (the scope lexemes follow, in the column's expression). One PL/pgSQL function, not the
# expression of SearchVectors above: PostgreSQL plans a stored generated column's expression again at
# the start of every INSERT, and that expression inlined memory_search_text four times and
# memory_identifier_parts twice, parsing their bodies each time (about 0.4 ms of the database's CPU an
# entry write: vault migration 0030); it also computed each of them twice. A PL/pgSQL function's plans
# are kept for the session, and it cuts the content and its parts once. The vectors are the same.
# The identifiers are cut by the function's own statement (memory_identifier_parts_cut's body), not by
# calling that SQL function: PostgreSQL before 18 planned a SQL function's body again in every
# transaction that called it from PL/pgSQL, about 0.2 ms of the database's CPU an entry write on 15
# (vault migration 0033).
ENTRY_VECTOR_FUNCTION_NAME = "memory_entry_search_vector"
ENTRY_VECTOR_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {ENTRY_VECTOR_FUNCTION_NAME}(tags varchar[], content text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    searched text := COALESCE({SEARCH_TEXT_FUNCTION}(content), '');
    parts text := '';
BEGIN
    IF content ~ '{PARTS_TRANSITION}' THEN
        {parts_cut_query("content")}
        INTO parts;
        parts := COALESCE({SEARCH_TEXT_FUNCTION}(parts), '');
    END IF;
    RETURN setweight(to_tsvector('simple', COALESCE(memory_tags_text(tags), '')), 'A')
        || setweight(to_tsvector('english', searched), 'B')
        || setweight(to_tsvector('portuguese', searched), 'B')
        || setweight(to_tsvector('english', parts), '{PARTS_WEIGHT}')
        || setweight(to_tsvector('portuguese', parts), '{PARTS_WEIGHT}');
END $$;
"""


def entry_text_vector() -> Func:
    """An entry's tags and content as search parses them (ENTRY_VECTOR_FUNCTION_SQL)."""
    return Func(
        models.F("tags"),
        models.F("content"),
        function=ENTRY_VECTOR_FUNCTION_NAME,
        output_field=SearchVectorField(),
    )


def search_vector_field(*parts, scoped: bool = True, epochs: bool = False) -> models.GeneratedField:
    """A stored tsvector concatenating `parts` (plus the agent/project scope lexemes, and with
    `epochs` their id-epoch lexemes): generated by PostgreSQL, so it can never lag behind an edit.

    Only SQL reads it (matching and ranking). Python never needs its value, so an INSERT does not
    send it back (`db_returning` off: a 50-message append would otherwise receive 50 tsvectors as
    text) and the models' managers leave it out of every SELECT (`SearchVectorDeferredManager`).
    """
    field = models.GeneratedField(
        expression=Func(
            *parts,
            *(scope_lexemes() if scoped else ()),
            *(scope_epoch_lexemes() if epochs else ()),
            template="(%(expressions)s)",
            arg_joiner=" || ",
            output_field=SearchVectorField(),
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    field.db_returning = False
    return field


class SearchVectorDeferredManager(models.Manager):
    """The default and base manager of a model with a search vector column: rows without their
    tsvector. Loading it costs PostgreSQL its text output and Python a string as long as the indexed
    text (a day's note: hundreds of kilobytes) that nothing reads."""

    def get_queryset(self):
        return super().get_queryset().defer("search_vector")
