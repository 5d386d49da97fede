"""What migrations took from the code stays as it was, or a new migration brings it to the databases
migrated before.

Several migrations create SQL functions and triggers from constants of the code (vault/search_text.py,
search/sql.py), and data migrations store values computed by the code (vault/trust.py's content hashes
and sketches, the messages' reply context). A database migrated before such a constant or function
changed keeps what it was given then, while a fresh one gets the change: the upgraded database would
parse, hash or complete words differently from a new one, and its stored rows would no longer match
the queries made in Python. The upgrade tests cannot see this (they run today's migrations), so each
is pinned here. Changing one needs a new migration that applies it again to existing databases and
recomputes what was derived from it (as vault 0017 does for the search vectors), then a new pin.
"""

import hashlib

import search.sql
import vault.search_text
import vault.search_vectors
from sessions_app.services.common import reply_context
from vault.trust import content_hash, sketch, word_set

PINNED_SQL = {
    # Search 0012 creates it again (CJK pairs), and 0013 (Thai, Lao, Myanmar, Khmer pairs; a CJK run's
    # last character), each recomputing the vectors of the rows it changes.
    (vault.search_text, "FUNCTION_SQL"): "2713df579166bb45",
    (vault.search_text, "PARTS_FUNCTION_SQL"): "4b880856a2ff0512",
    (search.sql, "VOCABULARY_ADD_FUNCTION"): "c58e7564f73ac9aa",  # FUNCTION_SQL, then its own
    (search.sql, "TRIGGER_FUNCTIONS"): "6e4cf7908d9045b4",
    (search.sql, "FILE_TRIGGER_FUNCTION"): "d9c72bfaf0fafb28",
    (search.sql, "MESSAGE_INSERT_TRIGGER"): "75ae02a7001b3d58",  # search 0016 applies it again
    # The entries' search vector's function (vault 0030), which their generated column calls; vault 0033
    # creates it again (the identifiers cut by its own statement: the same vectors, nothing recomputed).
    (vault.search_vectors, "ENTRY_VECTOR_FUNCTION_SQL"): "65810dbedbe53c78",
    # Named inside the workspace-file trigger (vault 0015, 0017, 0018).
    (vault.search_vectors, "VECTOR_GIVEN_SETTING"): "2e73d1f0c160114d",
}

CJK_TEXT = "我们决定使用Redis作为会话缓存。เราซื้อข้าว"
TEXT = "We decided: run the Quokka billing workers from src/worker/queue_runner.py, not cron!"


def test_the_sql_that_migrations_installed_is_what_the_code_holds():
    changed = [
        f"{module.__name__}.{name}"
        for (module, name), pin in PINNED_SQL.items()
        if hashlib.sha256(str(getattr(module, name)).encode()).hexdigest()[:16] != pin
    ]
    assert changed == [], (
        f"{changed} changed: databases migrated before keep the old definition. Add a migration that "
        "creates it again and recomputes what it derived (search vectors, vocabulary), then update the pin."
    )


def test_the_values_data_migrations_stored_are_what_the_code_computes():
    # vault 0003 and 0004 stored these for every entry; the duplicate check compares new ones with them.
    assert content_hash(TEXT) == "fa95c712004ea50ba1cd348f6d54ecea0f89f8211e53511cad3d5a0b4508f9ec"
    assert sketch(word_set(TEXT)) == [
        -1905438104, -1683938196, -1605378216, -1234555939, -1207657902, -929199782, -424892177, -293032171,
    ]  # fmt: skip  # vault 0026: "not" counted
    # vault 0026 stored them again for entries in scripts without spaces (character pairs, Thai marks).
    assert content_hash(CJK_TEXT) == "916cff98b9ed5b2b545fc110504f638ab32b6b1dea68229d4c689cfb5e454b48"
    assert sketch(word_set(CJK_TEXT)) == [
        -2140445347, -1344933025, -1126957305, -740427011, -716620187, -593556141, -328403174, -250016430,
    ]  # fmt: skip
    # sessions_app 0006 and 0012 stored each message's reply context by this rule.
    assert reply_context("  a\u00a0b\n\tc  ") == "a b c"
    assert reply_context("x" * 200 + " " + "y" * 200) == "x" * 99 + " " + "y" * 200
