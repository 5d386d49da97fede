"""Each embedding row keeps md5 of its chunk"s text, so an item re-embedded after an edit keeps the
vectors of its unchanged chunks (search/embedding_index.py). Rows stored before have "" (also the
database default, so a writer that does not name the column still inserts) and are re-embedded
whole once, as before. Adding a column with a constant default does not rewrite the table."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0009_vocabulary_folded_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="embedding",
            name="chunk_hash",
            field=models.CharField(blank=True, db_default="", default="", max_length=32),
        ),
    ]
