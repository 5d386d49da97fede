"""The workspace-file search-vector trigger finds an append by byte arithmetic.

Migration 0011 parses only an append's tail, but to find the tail it counted characters from the start
of the file (length(), right() and substr() walk UTF-8 text character by character) several times per
write: 8-10 ms of a 32 ms append to a 429 KB daily note, growing with the note. octet_length() reads a
stored value's size from its header, starts_with() compares bytes, and the tail is cut from the bytes
after the old content. Same lexemes, same weights, same rule (the old content must end at a word
boundary, or the whole file is parsed again).
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION vault_workspacefile_search_vector() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_bytes integer;
    new_bytes bytea;
    tail text;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.search_vector IS NOT NULL AND NEW.path = OLD.path
        AND NEW.agent_id = OLD.agent_id AND NEW.project_id = OLD.project_id THEN
        old_bytes := octet_length(OLD.content);
        IF octet_length(NEW.content) >= old_bytes AND starts_with(NEW.content, OLD.content) THEN
            -- The database's own encoding: the bytes as stored, checked but not converted.
            new_bytes := convert_to(NEW.content, pg_catalog.getdatabaseencoding());
            -- An append after a word boundary: the old lexemes stay right, only the tail is new.
            -- These four bytes are whole characters in every server encoding.
            IF old_bytes = 0 OR get_byte(new_bytes, old_bytes - 1) IN (32, 10, 9, 13) THEN
                tail := convert_from(substring(new_bytes FROM old_bytes + 1),
                                     pg_catalog.getdatabaseencoding());
                NEW.search_vector := OLD.search_vector
                    || setweight(to_tsvector('english', tail), 'B')
                    || setweight(to_tsvector('portuguese', tail), 'B');
                RETURN NEW;
            END IF;
        END IF;
    END IF;
    NEW.search_vector := setweight(to_tsvector('simple', COALESCE(NEW.path, '')), 'A')
        || setweight(to_tsvector('english', COALESCE(NEW.content, '')), 'B')
        || setweight(to_tsvector('portuguese', COALESCE(NEW.content, '')), 'B')
        || ('#a' || NEW.agent_id::text)::tsvector
        || ('#p' || NEW.project_id::text)::tsvector;
    RETURN NEW;
END
$$;
"""

# 0011's function, for the way back.
PREVIOUS_FUNCTION = """
CREATE OR REPLACE FUNCTION vault_workspacefile_search_vector() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_content text;
    new_content text;
    tail text;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.search_vector IS NOT NULL AND NEW.path = OLD.path
        AND NEW.agent_id = OLD.agent_id AND NEW.project_id = OLD.project_id THEN
        old_content := OLD.content;
        new_content := NEW.content;
        IF (old_content = '' OR right(old_content, 1) IN (' ', E'\\n', E'\\t', E'\\r'))
            AND starts_with(new_content, old_content) THEN
            tail := substr(new_content, length(old_content) + 1);
            NEW.search_vector := OLD.search_vector
                || setweight(to_tsvector('english', tail), 'B')
                || setweight(to_tsvector('portuguese', tail), 'B');
            RETURN NEW;
        END IF;
    END IF;
    NEW.search_vector := setweight(to_tsvector('simple', COALESCE(NEW.path, '')), 'A')
        || setweight(to_tsvector('english', COALESCE(NEW.content, '')), 'B')
        || setweight(to_tsvector('portuguese', COALESCE(NEW.content, '')), 'B')
        || ('#a' || NEW.agent_id::text)::tsvector
        || ('#p' || NEW.project_id::text)::tsvector;
    RETURN NEW;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0011_workspacefile_search_vector_trigger"),
    ]

    operations = [migrations.RunSQL(FUNCTION, PREVIOUS_FUNCTION)]
