"""The messages' vocabulary trigger (search.sql.MESSAGE_INSERT_TRIGGER) makes a batch's lexemes distinct
before it filters them, and takes them with tsvector_to_array instead of unnest(tsvector): the same
words, about 2 ms of the database's CPU less for a 50-message batch (docs/benchmarks.md).

The function is created again, then its calls of the search functions are qualified by their schema as
search 0014 did for every function before it (a backup restores). No table is rewritten."""

import importlib

from django.db import migrations

from search.sql import MESSAGE_INSERT_TRIGGER, WORD_FILTER, message_insert_trigger

_QUALIFIED = importlib.import_module("search.migrations.0014_functions_schema_qualified")

# 0006's words (the way back).
PREVIOUS_WORDS = f"""SELECT DISTINCT lexeme AS word
    FROM new_rows, unnest(to_tsvector('simple', memory_search_text(new_rows.text)))
    WHERE {WORD_FILTER}"""


def qualify(apps, schema_editor):
    _QUALIFIED.qualify(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0015_vocabulary_prefix_index_dropped"),
    ]

    operations = [
        # Qualified after the function is created, going either way.
        migrations.RunPython(migrations.RunPython.noop, qualify),
        migrations.RunSQL(MESSAGE_INSERT_TRIGGER, message_insert_trigger(PREVIOUS_WORDS)),
        migrations.RunPython(qualify, migrations.RunPython.noop),
    ]
