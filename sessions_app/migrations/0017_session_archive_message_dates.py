"""When the first and the last message of each session archive were written, so that a forget by time
range decompresses only the archives whose messages can fall in it (it decompressed every archive
archived after its `since`): filled here for the archives stored before, read from their payloads, as
session_archive now writes them."""

import json
import zlib
from datetime import datetime

from django.db import migrations, models


def message_dates_fill(apps, schema_editor):
    SessionArchive = apps.get_model("sessions_app", "SessionArchive")
    pks = list(SessionArchive.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), 100):
        for pk, payload in SessionArchive.objects.filter(pk__in=pks[start : start + 100]).values_list(
            "pk", "payload"
        ):
            rows = json.loads(zlib.decompress(bytes(payload)).decode("utf-8"))["messages"]
            dates = [datetime.fromisoformat(row["created_at"]) for row in rows]
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
