"""When the first and the last message of each session archive were written, so that a forget by time
range decompresses only the archives whose messages can fall in it (it decompressed every archive
archived after its `since`): filled here for the archives stored before, read from their payloads, as
session_archive now writes them."""

import json
import zlib
from datetime import UTC, datetime

from django.db import migrations, models

# Before any date the server stores (memoryproject.timestamps keeps none before 0001-01-02).
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)


def message_dates_fill(apps, schema_editor):
    SessionArchive = apps.get_model("sessions_app", "SessionArchive")
    pks = list(SessionArchive.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), 100):
        for pk, payload, archived_at in SessionArchive.objects.filter(
            pk__in=pks[start : start + 100]
        ).values_list("pk", "payload", "archived_at"):
            rows = json.loads(zlib.decompress(bytes(payload)).decode("utf-8")).get("messages") or []
            dates = [datetime.fromisoformat(row["created_at"]) for row in rows if row.get("created_at")]
            if len(dates) < len(rows):
                # A message without its date (an older payload): any time range may hold it, so the
                # archive spans all time up to its archiving and a forget by time range looks inside.
                dates += [EARLIEST, archived_at]
            if dates:
                SessionArchive.objects.filter(pk=pk).update(
                    first_message_at=min(dates), last_message_at=max(dates)
                )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0016_session_archive_message_ids"),
    ]

    operations = [
        migrations.AddField(
            model_name="sessionarchive",
            name="first_message_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When the payload's first message was written (None: no messages), so that a "
                "forget by time range decompresses only the archives whose messages can fall in it.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="sessionarchive",
            name="last_message_at",
            field=models.DateTimeField(blank=True, help_text="When its last message was written.", null=True),
        ),
        migrations.RunPython(message_dates_fill, migrations.RunPython.noop, elidable=True),
    ]
