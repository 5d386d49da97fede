"""SQL for the typo-tolerance vocabulary, shared by the migration and the rebuild service.

Words are 'simple' lexemes (lower-cased, accents kept) of 4-32 characters without digits or
punctuation: a query word of five or more letters with one edit can only be one edit away from a
word of at least four.
"""

from vault.search_text import FUNCTION_SQL as SEARCH_TEXT_FUNCTION_SQL
from vault.search_vectors import WORDS_KNOWN_SETTING

WORD_FILTER = "length(lexeme) BETWEEN 4 AND 32 AND lexeme !~ '[0-9_./@:''-]'"


def _words_insert(words: str) -> str:
    """The statement adding new words, and their deletion keys, from the `words` CTE's rows."""
    return f"""  WITH words AS (
    {words}
  ), added AS (
    -- Sorted so that two writers adding the same new words lock them in the same order.
    INSERT INTO search_vocabularyword (word)
    SELECT w.word FROM words w
    WHERE NOT EXISTS (SELECT 1 FROM search_vocabularyword v WHERE v.word = w.word)
    ORDER BY w.word
    ON CONFLICT DO NOTHING
    RETURNING word
  )
  INSERT INTO search_vocabularydeletion (key, word)
  SELECT key, word FROM (
    SELECT word AS key, word FROM added
    UNION
    SELECT substr(word, 1, i - 1) || substr(word, i + 1), word
    FROM added, generate_series(1, length(word)) AS i
  ) k
  ORDER BY key, word
  ON CONFLICT DO NOTHING;"""


_TEXT_WORDS = f"""SELECT lexeme AS word FROM unnest(to_tsvector('simple', memory_search_text(coalesce(txt, ''))))
    WHERE {WORD_FILTER}"""

# Text is parsed as search parses it (vault/search_text.py): the function is created here too, so that
# the vocabulary's first migration finds it on a new database.
VOCABULARY_ADD_FUNCTION = f"""{SEARCH_TEXT_FUNCTION_SQL}
CREATE OR REPLACE FUNCTION search_vocabulary_add(txt text) RETURNS void
LANGUAGE sql VOLATILE AS $$
{_words_insert(_TEXT_WORDS)}
$$;
"""

# Messages arrive in batches (50 rows in one INSERT): one statement-level trigger parses them all and adds
# their distinct new words at once (search migration 0006), where a row trigger ran the whole function
# once per message, about twice the time. The batch's lexemes are made distinct before they are filtered
# (a 50-message batch holds about two and a half times as many as it has distinct ones), the sub-select's
# OFFSET 0 keeping PostgreSQL from pushing the filter below the DISTINCT again, and taken as a text array
# (tsvector_to_array): unnest(tsvector) built each lexeme's positions and weights only to drop them. The
# same words, about 2 ms of the database's CPU less a batch (search migration 0016, docs/benchmarks.md).
_NEW_MESSAGES_WORDS = f"""SELECT lexeme AS word FROM (
      SELECT DISTINCT lexeme
      FROM new_rows, unnest(tsvector_to_array(to_tsvector('simple', memory_search_text(new_rows.text)))) AS lexeme
      OFFSET 0
    ) batch
    WHERE {WORD_FILTER}"""


def message_insert_trigger(words: str) -> str:
    """The messages' statement-level INSERT trigger adding the words that `words` selects from `new_rows`."""
    return f"""
CREATE OR REPLACE FUNCTION search_vocabulary_messages_ins_trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{_words_insert(words)}
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS search_vocabulary_ins ON sessions_app_message;
CREATE TRIGGER search_vocabulary_ins AFTER INSERT ON sessions_app_message
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION search_vocabulary_messages_ins_trg();
"""


MESSAGE_INSERT_TRIGGER = message_insert_trigger(_NEW_MESSAGES_WORDS)

# Daily notes grow by appends: when the new content extends the old, only the tail is new. Found by byte
# arithmetic (search migration 0005): octet_length() reads a stored value's size from its header, while
# length() and substr() count the characters of the whole file, which made each append to a day's note
# slower than the one before.
# A writer that knows the words are in the vocabulary already says so with vault's WORDS_KNOWN_SETTING
# (search migration 0007): the message path logging a batch's exchanges in the day's note.
FILE_TRIGGER_FUNCTION = f"""
CREATE OR REPLACE FUNCTION search_vocabulary_file_trg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_bytes integer;
BEGIN
  IF current_setting('{WORDS_KNOWN_SETTING}', true) = 'on' THEN
    RETURN NULL;
  END IF;
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

TRIGGER_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION search_vocabulary_entry_trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM search_vocabulary_add(NEW.content || ' ' || array_to_string(NEW.tags, ' '));
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION search_vocabulary_message_trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM search_vocabulary_add(NEW.text);
  RETURN NULL;
END $$;

{FILE_TRIGGER_FUNCTION}
CREATE TRIGGER search_vocabulary_ins AFTER INSERT ON vault_vaultentry
  FOR EACH ROW EXECUTE FUNCTION search_vocabulary_entry_trg();
CREATE TRIGGER search_vocabulary_upd AFTER UPDATE ON vault_vaultentry
  FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.tags IS DISTINCT FROM NEW.tags)
  EXECUTE FUNCTION search_vocabulary_entry_trg();
CREATE TRIGGER search_vocabulary_upd AFTER UPDATE ON sessions_app_message
  FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text)
  EXECUTE FUNCTION search_vocabulary_message_trg();
CREATE TRIGGER search_vocabulary_ins AFTER INSERT ON vault_workspacefile
  FOR EACH ROW EXECUTE FUNCTION search_vocabulary_file_trg();
CREATE TRIGGER search_vocabulary_upd AFTER UPDATE ON vault_workspacefile
  FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
  EXECUTE FUNCTION search_vocabulary_file_trg();
{MESSAGE_INSERT_TRIGGER}"""

DROP_TRIGGERS = """
DROP TRIGGER IF EXISTS search_vocabulary_ins ON vault_vaultentry;
DROP TRIGGER IF EXISTS search_vocabulary_upd ON vault_vaultentry;
DROP TRIGGER IF EXISTS search_vocabulary_ins ON sessions_app_message;
DROP TRIGGER IF EXISTS search_vocabulary_upd ON sessions_app_message;
DROP TRIGGER IF EXISTS search_vocabulary_ins ON vault_workspacefile;
DROP TRIGGER IF EXISTS search_vocabulary_upd ON vault_workspacefile;
DROP FUNCTION IF EXISTS search_vocabulary_entry_trg();
DROP FUNCTION IF EXISTS search_vocabulary_message_trg();
DROP FUNCTION IF EXISTS search_vocabulary_messages_ins_trg();
DROP FUNCTION IF EXISTS search_vocabulary_file_trg();
DROP FUNCTION IF EXISTS search_vocabulary_add(text);
"""

# Set-based (re)build from every searched table: used after bulk loads that bypassed the triggers.
VOCABULARY_REBUILD = f"""
INSERT INTO search_vocabularyword (word)
SELECT DISTINCT lexeme FROM (
  SELECT content || ' ' || array_to_string(tags, ' ') AS txt FROM vault_vaultentry
  UNION ALL SELECT text FROM sessions_app_message
  UNION ALL SELECT path || ' ' || content FROM vault_workspacefile
) t, unnest(to_tsvector('simple', memory_search_text(t.txt)))
WHERE {WORD_FILTER}
ORDER BY 1
ON CONFLICT DO NOTHING;
INSERT INTO search_vocabularydeletion (key, word)
SELECT key, word FROM (
  SELECT word AS key, word FROM search_vocabularyword
  UNION
  SELECT substr(word, 1, i - 1) || substr(word, i + 1), word
  FROM search_vocabularyword, generate_series(1, length(word)) AS i
) k
ORDER BY key, word
ON CONFLICT DO NOTHING;
"""
