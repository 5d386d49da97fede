"""Messages and sessions dated after the moment this migration runs get that moment, as today's writers
store a caller's date to come (memoryproject.timestamps.stored: the time it was received).

Before, a message's `timestamp` and an import's dates were kept as sent: a message dated 2100 was the
conversation's newest under everything said after it, and an imported session whose last activity was
in 2100 was never archived. The time each was received is not stored; the migration's is the nearest
one known. Only rows with such a date are written (none, on most databases).
"""

from django.db import migrations

_SESSION_DATES = (
    "created_at",
    "last_activity_at",
    "closed_at",
    "restored_at",
    "status_changed_at",
    "buffer_started_at",
)

SQL = [
    "UPDATE sessions_app_message SET created_at = now() WHERE created_at > now()",
    "UPDATE sessions_app_session SET "
    + ", ".join(f"{c} = CASE WHEN {c} > now() THEN now() ELSE {c} END" for c in _SESSION_DATES)
    + " WHERE "
    + " OR ".join(f"{c} > now()" for c in _SESSION_DATES),
]


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_reply_to_text_unicode_whitespace"),
    ]

    operations = [migrations.RunSQL(sql, migrations.RunSQL.noop) for sql in SQL]
