"""The typo vocabulary's workspace-file trigger finds an append's tail by byte arithmetic
(search.sql.FILE_TRIGGER_FUNCTION): its character counts over the whole file cost about 10 ms of a
32 ms append to a 429 KB daily note, and grew with the note."""

from django.db import migrations

from search.sql import FILE_TRIGGER_FUNCTION

# The function as migration 0002 created it, for the way back.
PREVIOUS_FILE_TRIGGER_FUNCTION = """
CREATE OR REPLACE FUNCTION search_vocabulary_file_trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND left(NEW.content, length(OLD.content)) = OLD.content THEN
    PERFORM search_vocabulary_add(substr(NEW.content, length(OLD.content) + 1));
  ELSE
    PERFORM search_vocabulary_add(NEW.path || ' ' || NEW.content);
  END IF;
  RETURN NULL;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0004_embeddings"),
        ("vault", "0011_workspacefile_search_vector_trigger"),
    ]

    operations = [migrations.RunSQL(FILE_TRIGGER_FUNCTION, PREVIOUS_FILE_TRIGGER_FUNCTION)]
