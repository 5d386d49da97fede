"""A partial index of the entries the server writes from a conversation by their source messages, so
that a forget of a message finds what was written from it alone without reading the agent's entries."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0027_duplicate_marks"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="vaultentry",
            index=models.Index(
                condition=models.Q(("source__in", ["extraction", "compaction"])),
                fields=["source_message_ids"],
                name="vaultentry_written_from",
            ),
        ),
    ]
