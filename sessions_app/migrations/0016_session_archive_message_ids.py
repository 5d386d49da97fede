"""The ids of the messages each session archive holds, so that a forget by id finds the archive
holding a message without decompressing every archive of the project: filled here for the archives
stored before, read from their payloads, as session_archive now writes it."""

import json
import zlib

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models


def message_ids_fill(apps, schema_editor):
    SessionArchive = apps.get_model("sessions_app", "SessionArchive")
    pks = list(SessionArchive.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), 100):
        for pk, payload in SessionArchive.objects.filter(pk__in=pks[start : start + 100]).values_list(
            "pk", "payload"
        ):
            rows = json.loads(zlib.decompress(bytes(payload)).decode("utf-8"))["messages"]
            SessionArchive.objects.filter(pk=pk).update(message_ids=[row["id"] for row in rows])


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0015_session_context_bytes_bound"),
    ]

    operations = [
        migrations.AddField(
            model_name="sessionarchive",
            name="message_ids",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.BigIntegerField(),
                blank=True,
                default=list,
                help_text="The ids of the messages in the payload, so that a forget by id finds the archive "
                "holding a message without decompressing the others.",
                size=None,
            ),
        ),
        migrations.RunPython(message_ids_fill, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="sessionarchive",
            index=django.contrib.postgres.indexes.GinIndex(fields=["message_ids"], name="session_archive_ids_gin"),
        ),
    ]
