"""An append to a workspace file costs its tail, not the whole file again.

Two changes, measured on a 1 MB daily note on the embedded PostgreSQL 18 (docs/benchmarks.md): an append
took 33 ms, of which 10 ms in the search-vector trigger and 16 ms compressing the whole note with pglz.

- The writer of an append gives the new search vector itself (the stored one and the tail's lexemes) and
  says so with a transaction-local setting, VECTOR_GIVEN_SETTING below. The trigger then leaves it:
  finding the tail on its own meant reading the old content back from TOAST, comparing it with the new
  one and copying the new one to bytes, three passes over the whole file. Every other write, and an
  append after a word cut in two, is parsed by the trigger as before.
- Where the server has no lz4 (the embedded PostgreSQL), the content is stored uncompressed (STORAGE
  EXTERNAL): pglz compressed the whole note again on every append. Text about doubles in size on disk.
  Servers with lz4 keep it (migration 0013): it compresses several times faster.
"""

from django.db import migrations

from vault.models import VECTOR_GIVEN_SETTING

FUNCTION = f"""
CREATE OR REPLACE FUNCTION vault_workspacefile_search_vector() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_bytes integer;
    new_bytes bytea;
    tail text;
BEGIN
    -- A NULL given vector (the stored one was NULL) is parsed whole below.
    IF TG_OP = 'UPDATE' AND current_setting('{VECTOR_GIVEN_SETTING}', true) = 'on'
        AND NEW.search_vector IS NOT NULL THEN
        RETURN NEW;
    END IF;
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

_NO_LZ4 = (
    "NOT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression'"
    " AND 'lz4' = ANY(enumvals))"
)
STORAGE = (
    f"DO $$ BEGIN IF {_NO_LZ4} THEN"
    " ALTER TABLE vault_workspacefile ALTER COLUMN content SET STORAGE {storage};"
    " END IF; END $$;"
)


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0014_workspacefile_search_vector_external"),
    ]

    operations = [
        migrations.RunSQL(
            FUNCTION,
            # 0012's function: the same without the first test.
            FUNCTION.replace(
                f"""    -- A NULL given vector (the stored one was NULL) is parsed whole below.
    IF TG_OP = 'UPDATE' AND current_setting('{VECTOR_GIVEN_SETTING}', true) = 'on'
        AND NEW.search_vector IS NOT NULL THEN
        RETURN NEW;
    END IF;
""",
                "",
            ),
        ),
        migrations.RunSQL(
            STORAGE.replace("{storage}", "EXTERNAL"), STORAGE.replace("{storage}", "EXTENDED")
        ),
    ]
