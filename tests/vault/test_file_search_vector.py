"""A workspace file's search vector is kept by a trigger that parses only the appended text on an
append (vault migration 0011). Whatever the write, it must hold the same lexemes, with the same
weights, as a full parse of the file's current path and content."""

from contextlib import contextmanager

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Message, Session
from vault import services
from vault.models import VaultEntry, WorkspaceFile

NOTE = "memory/2026-11-24.md"

FULL_PARSE = """
    setweight(to_tsvector('simple', memory_search_text(path)), 'A')
    || setweight(to_tsvector('english', memory_search_text(content)), 'B')
    || setweight(to_tsvector('portuguese', memory_search_text(content)), 'B')
    || setweight(to_tsvector('english', memory_search_text(memory_identifier_parts(path || ' ' || content))), 'D')
    || setweight(to_tsvector('portuguese', memory_search_text(memory_identifier_parts(path || ' ' || content))), 'D')
    || ('#a' || agent_id::text)::tsvector
    || ('#p' || project_id::text)::tsvector
"""


def _lexemes(file_id: int) -> dict[str, tuple[list[str], list[str]]]:
    """Per weight (A: path, B: content, D: identifier parts and scope lexemes), and for the whole vector
    ("all"), the stored and the fully parsed lexemes."""
    out = {}
    with connection.cursor() as cursor:
        for weight in ("a", "b", "d", "all"):
            filtered = "{v}" if weight == "all" else f"ts_filter({{v}}, '{{{{{weight}}}}}')"
            cursor.execute(
                f"SELECT tsvector_to_array({filtered.format(v='search_vector')}),"
                f" tsvector_to_array({filtered.format(v=FULL_PARSE)})"
                " FROM vault_workspacefile WHERE id = %s",
                [file_id],
            )
            stored, parsed = cursor.fetchone()
            out[weight] = (sorted(stored), sorted(parsed))
    return out


def _assert_same_as_full_parse(file: WorkspaceFile, weights: str = "abd") -> None:
    lexemes = _lexemes(file.pk)
    for weight in [*weights, "all"]:
        stored, parsed = lexemes[weight]
        assert stored == parsed, f"weight {weight}"
    assert lexemes["b"][0], "the content has lexemes"


def _matches(file: WorkspaceFile, config: str, word: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector @@ plainto_tsquery(%s::regconfig, %s) FROM vault_workspacefile WHERE id = %s",
            [config, word, file.pk],
        )
        return cursor.fetchone()[0]


def test_appends_give_the_lexemes_of_a_full_parse(agent_a):
    for i in range(25):
        file = services.file_append(
            agent=agent_a,
            path=NOTE,
            text=f"\n## [10:{i:02d}:00]\n**User:** running the flaky tests again, round{i}\n"
            f"**Agent:** corremos os testes de novo e eles passaram\n",
            changed_by="t",
            header="# Daily Notes -- 2026-11-24\n",
        )
    _assert_same_as_full_parse(file)
    assert _matches(file, "english", "round24")  # the last append is searchable
    assert _matches(file, "english", "run")  # English stemming of the appended text
    assert _matches(file, "portuguese", "passar")  # and Portuguese
    assert _matches(file, "simple", "2026")  # the path, weight A


def test_an_append_that_continues_a_word_is_parsed_with_that_word(agent_a):
    services.file_write(agent=agent_a, path="notes.md", content="deploy to kuber", changed_by="t")
    file = services.file_append(agent=agent_a, path="notes.md", text="netes tonight\n", changed_by="t")
    assert file.content == "deploy to kubernetes tonight\n"
    assert _matches(file, "english", "kubernetes")
    assert not _matches(file, "simple", "kuber")
    _assert_same_as_full_parse(file)


def test_appends_after_multibyte_text_cut_the_tail_at_the_right_byte(agent_a):
    """The triggers find an append's tail by bytes (vault 0012, search 0005): before it, accented
    letters, emoji and CJK take two to four bytes each, so a tail cut by a character count would start
    inside the old content."""
    last = "quokkazeppelinaxolotlsforever"  # longer than the 15 bytes the letters before it add
    old = f"Café, açúcar, 東京 and 🚀 ééééé {last}\n"
    services.file_write(agent=agent_a, path="notes.md", content=old, changed_by="t")
    file = services.file_append(agent=agent_a, path="notes.md", text="jabuticaba maçãs\n", changed_by="t")
    file = services.file_append(agent=agent_a, path="notes.md", text="ñandú 🚀 axolotl\n", changed_by="t")
    assert file.content == old + "jabuticaba maçãs\nñandú 🚀 axolotl\n"
    _assert_same_as_full_parse(file)
    assert _matches(file, "portuguese", "maçãs") and _matches(file, "english", "axolotl")
    with connection.cursor() as cursor:
        cursor.execute("SELECT word FROM search_vocabularyword")
        words = {row[0] for row in cursor.fetchall()}
    # Every word of each tail, and no piece of the old content's last word or of the first tail's.
    whole = {"jabuticaba", "maçãs", "ñandú", "axolotl", last}
    assert whole <= words
    assert not {w for w in words - whole if w in last or w in "jabuticaba maçãs"}


def test_edits_rewrites_and_renames_parse_the_whole_file_again(agent_a):
    services.file_write(agent=agent_a, path="ops.md", content="We use Redis for the cache.\n", changed_by="t")
    services.file_append(agent=agent_a, path="ops.md", text="Backups run nightly.\n", changed_by="t")
    file, _ = services.file_edit(
        agent=agent_a, path="ops.md", old_text="Redis", new_text="Memcached", changed_by="t"
    )
    assert _matches(file, "english", "memcached")
    assert not _matches(file, "english", "redis")
    _assert_same_as_full_parse(file)

    file, _ = services.file_write(
        agent=agent_a, path="ops.md", content="Only Postgres now.\n", changed_by="t"
    )
    assert not _matches(file, "english", "backups")
    _assert_same_as_full_parse(file)

    file = services.file_rename(agent=agent_a, old_path="ops.md", new_path="infrastructure.md")
    # The path is parsed as search parses text (vault/search_text.py): its name and extension.
    assert _matches(file, "simple", "infrastructure md")
    assert not _matches(file, "simple", "ops")
    _assert_same_as_full_parse(file)


def test_settings_changes_keep_the_vector(agent_a):
    services.file_write(agent=agent_a, path="ops.md", content="Deploys happen on Fridays.\n", changed_by="t")
    file = services.file_settings_set(agent=agent_a, path="ops.md", enabled=False, sort_order=7)
    _assert_same_as_full_parse(file)
    assert _matches(file, "english", "fridays")


def test_search_finds_the_latest_append_of_a_daily_note(api, agent_a, token_a):
    for word in ("zeppelin", "quokka", "axolotl"):
        services.file_append(agent=agent_a, path=NOTE, text=f"We talked about the {word}.\n", changed_by="t")
    results = api.get("/search", token=token_a, q="axolotl", kinds="files").json()["results"]
    assert [r["path"] for r in results] == [NOTE]


def test_python_never_loads_a_search_vector(agent_a, entry_a):
    """Only SQL reads the vectors: a SELECT leaves them out, an INSERT does not send them back."""
    services.file_append(agent=agent_a, path=NOTE, text="A line.\n", changed_by="t")
    session = Session.objects.create(project=agent_a.project, agent=agent_a)
    with CaptureQueriesContext(connection) as queries:
        message = Message.objects.bulk_create(
            [
                Message(
                    project=agent_a.project,
                    agent=agent_a,
                    session=session,
                    role="user",
                    text="hi",
                    created_at=session.created_at,
                )
            ]
        )[0]
    assert "search_vector" not in queries.captured_queries[-1]["sql"]
    assert message.pk and "search_vector" in message.get_deferred_fields()
    for model in (VaultEntry, WorkspaceFile, Message):
        with CaptureQueriesContext(connection) as queries:
            row = model.objects.filter(agent=agent_a).first()
        assert "search_vector" not in queries.captured_queries[0]["sql"], model
        assert "search_vector" in row.get_deferred_fields()
    reply = Message.objects.create(
        project=agent_a.project, agent=agent_a, session=session, parent=message, role="assistant",
        text="hello", created_at=session.created_at,
    )  # fmt: skip
    reply = Message.objects.get(pk=reply.pk)
    with CaptureQueriesContext(connection) as queries:
        assert reply.parent.text == "hi"  # a related row, loaded through the base manager
    assert "search_vector" not in queries.captured_queries[0]["sql"]


# The start of the hand-written UPDATE that appends a tail (vault/services/files.py, _TAIL_UPDATE).
_TAIL_UPDATE = "UPDATE vault_workspacefile SET content = "


@contextmanager
def _statements():
    """The (sql, params) of each statement run in the block, bound on the server or not."""
    seen = []

    def record(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield seen


def test_an_append_sends_only_its_text_and_skips_parts_already_there_even_across_the_seam(agent_a):
    """file_append_many builds the new text on its own (only it goes to the database). A part whose
    `unless` text is in the file, in the new text, or across the seam between them is left out."""
    services.file_write(agent=agent_a, path="notes.md", content="one two thr", changed_by="t")
    big = "x" * 20_000
    with _statements() as statements:
        file = services.file_append_many(
            agent=agent_a,
            path="notes.md",
            parts=[
                ("ee four", ""),
                ("SKIPPED-seam", "three fo"),  # "thr" stored + "ee fo" new
                ("SKIPPED-stored", "one two"),
                (" five" + big, ""),
                ("SKIPPED-new", "four five"),
                (" six", "seven"),
            ],
            changed_by="t",
        )
    expected = "one two three four five" + big + " six"
    assert file.content == expected and file.size == len(expected)
    stored = WorkspaceFile.objects.get(pk=file.pk)
    assert stored.content == expected and stored.size == len(expected)
    update = [f"{sql} {params!r}" for sql, params in statements if sql.startswith(_TAIL_UPDATE)]
    assert len(update) == 1 and "one two thr" not in update[0] and big in update[0]
    _assert_same_as_full_parse(stored)


def test_file_content_is_compressed_with_lz4_where_the_server_has_it_and_stored_plain_elsewhere(
    agent_a, settings
):
    """Vault migrations 0013 and 0015: a day's note is stored again on every append. A server with lz4
    (CI's PostgreSQL 15) compresses it with lz4, several times faster than pglz; the embedded PostgreSQL
    is built without lz4, and there the note is stored uncompressed (STORAGE EXTERNAL): compressing a
    1 MB note with pglz was half of each append. Either way it reads back intact."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        available = "lz4" in cursor.fetchone()[0]
        cursor.execute(
            "SELECT attcompression, attstorage FROM pg_attribute"
            " WHERE attrelid = 'vault_workspacefile'::regclass AND attname = 'content'"
        )
        assert cursor.fetchone() == (("l", "x") if available else ("", "e"))
    settings.MEMORY_DAILY_NOTE_MAX_BYTES = 256 * 1024  # the whole note in one part
    parts = [
        "".join(
            f"## [10:{i % 60:02d}]\n**User:** question {i} about caching\n" for i in range(start, start + 500)
        )
        for start in range(0, 2000, 500)
    ]
    for part in parts:
        services.file_append(agent=agent_a, path=NOTE, text=part, changed_by="t")
    text = "".join(parts)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(content), content, pg_column_size(content) >= octet_length(content)"
            " FROM vault_workspacefile WHERE agent_id = %s AND path = %s",
            [agent_a.pk, NOTE],
        )
        method, content, uncompressed = cursor.fetchone()
    assert method == ("lz4" if available else None)
    assert uncompressed is not available
    assert content == text


def _content_vector(file_id: int) -> str:
    """The content's lexemes with their positions (weight B) and its identifiers' parts' with the scope
    lexemes (weight D): the path's left out."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ts_filter(search_vector, '{b,d}')::text FROM vault_workspacefile WHERE id = %s", [file_id]
        )
        return cursor.fetchone()[0]


def test_an_append_gives_its_vector_and_it_is_the_one_the_trigger_computes(agent_a):
    """Vault migration 0015: file_append_many sets the new search vector itself (the stored one and the
    tail's lexemes) and the trigger keeps it. It must be exactly what the trigger computes for the same
    append: a twin file, appended to by a plain UPDATE, is compared lexeme by lexeme and position by
    position (the paths aside, parsed into as many words), after accented text, emoji, identifiers cut into
    their parts and a first append to the header alone."""
    header = "# Daily Notes -- 2026-11-24\n"
    tails = [
        "\n## [10:00:00]\n**User:** cafés e açúcar 東京 🚀 deploys\n",
        "**Agent:** we deployed the kubernetes cluster twice from deploy/k8s/cluster.yaml\n",
        "plain words again and again\n",
        "getUserById took 500ms behind the HTTPServerError of v2.4.1\n",
    ]
    twin = WorkspaceFile.objects.create(
        project=agent_a.project, agent=agent_a, path="twins/2026-11-24.md", content=header
    )
    for tail in tails:
        with _statements() as statements:
            file = services.file_append(agent=agent_a, path=NOTE, text=tail, changed_by="t", header=header)
        update = [sql for sql, _ in statements if sql.startswith(_TAIL_UPDATE)]
        assert len(update) == 1 and "search_vector =" in update[0]
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE vault_workspacefile SET content = content || %s WHERE id = %s", [tail, twin.pk]
            )
        assert _content_vector(file.pk) == _content_vector(twin.pk)
    _assert_same_as_full_parse(file)


def test_after_an_append_later_writes_in_the_same_transaction_are_parsed_again(agent_a):
    """The setting that makes the trigger keep a given vector is on for the append's UPDATE only."""
    services.file_write(agent=agent_a, path="ops.md", content="We use Redis.\n", changed_by="t")
    with transaction.atomic():
        services.file_append(agent=agent_a, path="ops.md", text="Backups nightly.\n", changed_by="t")
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE vault_workspacefile SET content = 'Only Memcached now.' WHERE agent_id = %s AND path = %s",
                [agent_a.pk, "ops.md"],
            )
    file = WorkspaceFile.objects.get(agent=agent_a, path="ops.md")
    assert _matches(file, "english", "memcached") and not _matches(file, "english", "redis")
    _assert_same_as_full_parse(file)


def test_a_files_search_vector_is_stored_uncompressed(agent_a):
    """Vault migration 0014: a tsvector does not compress, and trying on every append of a day's note cost
    more than the append's own parse. The vector of a note past the TOAST threshold is stored as it is,
    and still holds the lexemes of a full parse."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attstorage FROM pg_attribute"
            " WHERE attrelid = 'vault_workspacefile'::regclass AND attname = 'search_vector'"
        )
        assert cursor.fetchone()[0] == "e"
    for start in range(0, 1500, 500):
        part = "".join(
            f"## [10:{i % 60:02d}]\n**User:** word{i} about caching\n" for i in range(start, start + 500)
        )
        file = services.file_append(agent=agent_a, path=NOTE, text=part, changed_by="t")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_size(search_vector), pg_column_compression(search_vector)"
            " FROM vault_workspacefile WHERE id = %s",
            [file.pk],
        )
        size, method = cursor.fetchone()
    assert size > 8000 and method is None
    # Past position 16,383 (PostgreSQL's last) every word sits at that one position, which keeps one
    # weight: the weights of the identifier parts (D) then depend on the order the parts were added.
    _assert_same_as_full_parse(file, weights="ab")


def test_an_append_stores_the_files_byte_size_without_encoding_it_again(agent_a):
    """The size after an append is the stored value's byte length plus the tail's, counted by PostgreSQL:
    right after a note made with its header only, after multibyte text, and even when the stored
    size was wrong before (a row written around the services)."""
    header = "# Daily Notes -- 2026-11-24\n"
    file = services.file_append(agent=agent_a, path=NOTE, text="", changed_by="t", header=header)
    assert WorkspaceFile.objects.get(pk=file.pk).size == len(header) == file.size
    file = services.file_append(
        agent=agent_a, path=NOTE, text="açúcar 東京 🚀\n", changed_by="t", header=header
    )
    expected = len((header + "açúcar 東京 🚀\n").encode("utf-8"))
    assert WorkspaceFile.objects.get(pk=file.pk).size == expected == file.size
    WorkspaceFile.objects.filter(pk=file.pk).update(size=0)
    services.file_append(agent=agent_a, path=NOTE, text="more\n", changed_by="t", header=header)
    assert WorkspaceFile.objects.get(pk=file.pk).size == expected + len("more\n")


def test_an_append_to_a_file_without_a_vector_parses_the_whole_file(agent_a):
    """A given vector is the stored one and the tail's; with no stored vector (a row written around the
    trigger) that is NULL, and the trigger parses the whole file instead of keeping it."""
    services.file_write(agent=agent_a, path="ops.md", content="We use Redis.\n", changed_by="t")
    WorkspaceFile.objects.filter(agent=agent_a, path="ops.md").update(search_vector=None)
    file = services.file_append(agent=agent_a, path="ops.md", text="Backups nightly.\n", changed_by="t")
    assert _matches(file, "english", "redis") and _matches(file, "english", "backups")
    _assert_same_as_full_parse(file)
