"""Exact duplicates are the same words as written (vault/trust.py's text_words): the content hash
keeps accents, tone marks and every combining mark, and keeps ß and superscript digits, where it
folded them all; word sets keep a word whole across its combining marks (a Hindi vowel sign cut it).

Only a text with a character beyond ASCII can hash or cut differently, so the content hashes and
sketches of those entries, and only those, are computed again: the duplicate check compares a new
entry with them by the same rule.

Going back leaves them: a hash computed by the newer rule only makes the earlier code miss a
duplicate of these entries (it never drops one), and their text is unchanged.
"""

from django.db import migrations

NOT_ASCII = r"[^\x01-\x7f]"


def hashes_and_sketches_compute(apps, schema_editor):
    from vault.trust import content_hash, sketch, word_set

    VaultEntry = apps.get_model("vault", "VaultEntry")
    entries = VaultEntry.objects.filter(content__regex=NOT_ASCII).only("pk", "content")
    batch = []
    for entry in entries.iterator(chunk_size=2000):
        entry.content_hash = content_hash(entry.content)
        entry.sketch = sketch(word_set(entry.content))
        batch.append(entry)
        if len(batch) == 2000:
            VaultEntry.objects.bulk_update(batch, ["content_hash", "sketch"])
            batch = []
    VaultEntry.objects.bulk_update(batch, ["content_hash", "sketch"])


class Migration(migrations.Migration):
    dependencies = [("vault", "0026_duplicate_words")]

    operations = [migrations.RunPython(hashes_and_sketches_compute, migrations.RunPython.noop)]
