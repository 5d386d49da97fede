"""The sessions' running bound of their messages' size, which the working buffer tests on each append
until it starts (it summed every message of the session before): filled here for the sessions stored
before, as the append keeps it."""

from django.db import migrations, models

FILL = """
UPDATE sessions_app_session s SET context_bytes_bound = (
    SELECT COALESCE(SUM(octet_length(m.text) + octet_length(m.tool_calls::text) + 8), 0)
    FROM sessions_app_message m WHERE m.session_id = s.id AND NOT m.archived
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0014_future_dates_clamped"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="context_bytes_bound",
            field=models.BigIntegerField(
                blank=True,
                help_text="At least the UTF-8 bytes of the session's messages not archived (text and tool "
                "calls) plus 8 a message, the working buffer's cheap test "
                "(recovery.session_tokens_upper_bound); kept by the append, none (counted again when "
                "needed) after a write that may have made it too small.",
                null=True,
            ),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
    ]
