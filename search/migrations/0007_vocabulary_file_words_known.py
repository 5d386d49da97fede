"""The typo vocabulary's workspace-file trigger skips a write whose writer says its words are known
(vault.models.WORDS_KNOWN_SETTING, set for the transaction): the message path's day's-note append,
whose exchanges are the messages the same transaction stored, and whose words the messages' INSERT
trigger added. Parsing them again cost about 3 ms of each 50-message append."""

from django.db import migrations

from search.sql import FILE_TRIGGER_FUNCTION

# The function as migration 0005 created it, for the way back.
PREVIOUS_FILE_TRIGGER_FUNCTION = """
CREATE OR REPLACE FUNCTION search_vocabulary_file_trg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_bytes integer;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    old_bytes := octet_length(OLD.content);
  END IF;
  IF old_bytes IS NOT NULL AND octet_length(NEW.content) >= old_bytes
     AND starts_with(NEW.content, OLD.content) THEN
    -- The database's own encoding: the bytes as stored, checked but not converted.
    PERFORM search_vocabulary_add(convert_from(
      substring(convert_to(NEW.content, pg_catalog.getdatabaseencoding()) FROM old_bytes + 1),
      pg_catalog.getdatabaseencoding()));
  ELSE
    PERFORM search_vocabulary_add(NEW.path || ' ' || NEW.content);
  END IF;
  RETURN NULL;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("search", "0006_vocabulary_message_statement_trigger")]

    operations = [migrations.RunSQL(FILE_TRIGGER_FUNCTION, PREVIOUS_FILE_TRIGGER_FUNCTION)]
