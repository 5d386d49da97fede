"""Messages lose their single-column session index.

message_session_order (session, created_at, id) and message_unique_client_id (session, client_id) both
lead with the session, so every look-up by session (a session's messages, the cascade of a session's
deletion) has an index without it, and each stored message paid for one more b-tree insert. Only the
index is dropped: Django's AlterField would also drop and re-add the foreign key, checking every
stored message again under lock.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0008_base_manager_defers_search_vector"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="messages",
                        to="sessions_app.session",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "sessions_app_message_session_id_a5aec9af"',
                    'CREATE INDEX IF NOT EXISTS "sessions_app_message_session_id_a5aec9af"'
                    ' ON "sessions_app_message" ("session_id")',
                ),
            ],
        ),
    ]
