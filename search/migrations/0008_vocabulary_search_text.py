"""The typo vocabulary takes its words from text parsed as search parses it (vault/search_text.py):
"src/worker/queue_runner.py" gives the words worker, queue and runner, so "IntegrityEror" is corrected and
"Integr" completed from "django.db.utils.IntegrityError". The words of the rows already stored are
added once."""

from django.db import migrations

from search.sql import MESSAGE_INSERT_TRIGGER, VOCABULARY_ADD_FUNCTION, VOCABULARY_REBUILD
from vault.search_text import FUNCTION_NAME, FUNCTION_SQL

FUNCTIONS = VOCABULARY_ADD_FUNCTION + MESSAGE_INSERT_TRIGGER
# The way back: the same functions parsing the text as it is.
PREVIOUS_FUNCTIONS = FUNCTIONS.replace(FUNCTION_SQL, "").replace(f"{FUNCTION_NAME}(", "(")


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0007_vocabulary_file_words_known"),
        ("vault", "0017_search_text_identifiers"),
        ("sessions_app", "0010_search_text_identifiers"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS, PREVIOUS_FUNCTIONS),
        migrations.RunSQL(VOCABULARY_REBUILD, migrations.RunSQL.noop),
    ]
