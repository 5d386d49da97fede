"""The vocabulary's words had two indexes of one definition, `word varchar_pattern_ops`: the `..._like`
index Django creates beside a CharField primary key, and `vocabularyword_prefix` (migration 0003), made
for prefix completion, which either serves. Every new word was written into both (four b-trees a word
where three serve every query). `vocabularyword_prefix` is dropped; reversing creates it again."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0014_functions_schema_qualified"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="vocabularyword",
            name="vocabularyword_prefix",
        ),
    ]
