"""A message's row stays whole in its heap page up to 8,160 bytes (the table's `toast_tuple_target`;
PostgreSQL's default is 2,032). A message's search vector is about 2.7 times its text and reply context
(1.7 kB for 350 characters answering 280), so most rows of a conversation passed 2 kB: PostgreSQL then
tried to compress the vector (a tsvector does not compress, so the attempt was wasted), compressed the
text, and moved the vector into the TOAST table, an extra heap row, index entry and WAL record a message.
Kept inline: 50 of bench_write's messages cost the database 0.7-1.8 ms less CPU to store (five runs of 75
batches into copies of the table, interleaved; 34.8 against 36.5 ms in one), the vectors are the same, and a search that ranks messages no longer
fetches each candidate's vector from TOAST (0.51 against 1.12 ms, median of 180 ranked queries); a
session's 200 messages read without their vectors cost 0.42 against 0.37 ms (wider rows, more pages).
A row over 8,160 bytes (a long text) is still compressed and moved out as before.

Only a storage parameter changes (SHARE UPDATE EXCLUSIVE lock, which blocks no read or write; nothing is
rewritten): it applies to rows written from now on, the rows stored before keep their TOAST values."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0017_session_archive_message_dates"),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE sessions_app_message SET (toast_tuple_target = 8160);",
            reverse_sql="ALTER TABLE sessions_app_message RESET (toast_tuple_target);",
        ),
    ]
