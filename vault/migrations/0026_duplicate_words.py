"""Entries in scripts without spaces compared by their character pairs, and negations kept as words
(vault/trust.py).

`word_set` now gives a run of Chinese, Japanese, Thai, Lao, Myanmar or Khmer as its character pairs,
and `text_normalise` keeps the vowel and tone marks of the last four; `word_set` keeps "not" (and the
"t" of "can't") and the other negations. The content hashes and sketches stored for entries holding
such a character or such a word are computed again, and only those, so that the duplicate check
compares a new entry with them by the same rule.

Going back leaves them: a hash or sketch computed by another rule only makes the earlier code miss a
duplicate of these entries (it never drops one), and their text is unchanged.
"""

from django.db import migrations
from django.db.models import Q

# Every text whose word set holds a negation (vault/trust.py's _NEGATIONS, "t" for "not"), and a few more.
NEGATIONS = r"(^|[^[:alnum:]])(not|t|never|n[aãAÃ]o|nunca|nem|jamais)([^[:alnum:]]|$)"


def hashes_and_sketches_compute(apps, schema_editor):
    from vault.trust import PAIRS_COMPARED_CLASS, content_hash, sketch, word_set

    VaultEntry = apps.get_model("vault", "VaultEntry")
    affected = Q(content__regex=f"[{PAIRS_COMPARED_CLASS}]") | Q(content__iregex=NEGATIONS)
    entries = VaultEntry.objects.filter(affected).only("pk", "content")
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
    dependencies = [("vault", "0025_deletion_audit_outlives_project")]

    operations = [migrations.RunPython(hashes_and_sketches_compute, migrations.RunPython.noop)]
