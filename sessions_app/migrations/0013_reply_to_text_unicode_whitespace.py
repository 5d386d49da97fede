"""Messages stored before 0006 get the reply context today's writers store, where 0006 derived another.

0006 derived each stored message's reply context (its parent's text, whitespace collapsed, the last 300
characters) in SQL, where the writers derive it in Python (sessions_app.services.common.reply_context).
Python's split() collapses the no-break space, the other Unicode spaces, U+0085 and U+001C-U+001F; the
regular expression's \\s does not on PostgreSQL's C locales (PostgreSQL 15 with C.UTF-8: measured). A
parent holding one (text pasted from a web page or a word processor) gave a different context, and so a
different search vector, from the one the message would have had if written today. Only messages whose
parent holds such a character are read; a context that differs is written again (the search vector, a
generated column, follows).
"""

from django.db import migrations

# Characters str.split() cuts at besides ASCII whitespace (which \s matches everywhere).
_UNICODE_SPACES = "[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_CHARS = 300  # REPLY_CONTEXT_CHARS


def _context(text: str) -> str:
    # The rule as reply_context applies it, frozen here as this migration was written.
    return " ".join(text.split())[-_CHARS:]


def reply_contexts_recompute(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.reply_to_text, p.text FROM sessions_app_message m"
            " JOIN sessions_app_message p ON p.id = m.parent_id WHERE p.text ~ %s",
            [_UNICODE_SPACES],
        )
        changed = [(_context(text), pk) for pk, stored, text in cursor.fetchall() if _context(text) != stored]
        if changed:
            cursor.executemany("UPDATE sessions_app_message SET reply_to_text = %s WHERE id = %s", changed)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0012_session_restored_at"),
    ]

    operations = [migrations.RunPython(reply_contexts_recompute, migrations.RunPython.noop)]
