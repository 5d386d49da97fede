"""Workspace files' search vector: kept by a trigger instead of a generated column, so that appending
to a file parses only the appended text.

A generated column re-parses the whole content (English and Portuguese) on every write. An agent's
daily note grows all day by one block per exchange, so each append cost more than the one before:
118 ms of a 134 ms UPDATE for a 432 KB note. The trigger gives the same lexemes with the same weights;
when the new content is the old content plus a tail, and the old content ended at a word boundary, it
adds the tail's lexemes to the stored vector instead (word positions after the old end may differ from a
full parse, which ranking does not read). Any other write parses the whole file, as before.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations

CREATE_TRIGGER = """
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
        -- An append after a word boundary: the old lexemes stay right, only the tail is new.
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

CREATE TRIGGER vault_workspacefile_search_vector
BEFORE INSERT OR UPDATE OF content, path, agent_id, project_id ON vault_workspacefile
FOR EACH ROW EXECUTE FUNCTION vault_workspacefile_search_vector();

-- Fill the new column: OLD.search_vector is NULL, so every row takes the full parse.
UPDATE vault_workspacefile SET path = path;
"""

DROP_TRIGGER = """
DROP TRIGGER IF EXISTS vault_workspacefile_search_vector ON vault_workspacefile;
DROP FUNCTION IF EXISTS vault_workspacefile_search_vector();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0010_base_manager_defers_search_vector"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="workspacefile", name="workspacefile_search_gin"),
        migrations.RemoveField(model_name="workspacefile", name="search_vector"),
        migrations.AddField(
            model_name="workspacefile",
            name="search_vector",
            field=django.contrib.postgres.search.SearchVectorField(editable=False, null=True),
        ),
        migrations.RunSQL(CREATE_TRIGGER, DROP_TRIGGER),
        migrations.AddIndex(
            model_name="workspacefile",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], gin_pending_list_limit=256, name="workspacefile_search_gin"
            ),
        ),
    ]
