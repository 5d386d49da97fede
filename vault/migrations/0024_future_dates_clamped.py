"""Entries dated after the moment this migration runs get that moment, as today's imports store a date
to come (memoryproject.timestamps.stored, through vault.transfer.common.date_parse).

Before, an import kept an entry's dates (its header, the export's .entries.json) as sent: an entry dated
2100 was the newest memory for every ordering newest first. The time it was imported is not stored;
the migration's is the nearest one known. Only rows with such a date are written.
"""

from django.db import migrations

_DATES = ("created_at", "updated_at", "last_accessed_at")

SQL = (
    "UPDATE vault_vaultentry SET "
    + ", ".join(f"{c} = CASE WHEN {c} > now() THEN now() ELSE {c} END" for c in _DATES)
    + " WHERE "
    + " OR ".join(f"{c} > now()" for c in _DATES)
)


class Migration(migrations.Migration):
    dependencies = [
        ("vault", "0023_sessionmark_facts"),
    ]

    operations = [migrations.RunSQL(SQL, migrations.RunSQL.noop)]
