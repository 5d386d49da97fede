"""An operator upgrades in place: memory stored by earlier versions survives `migrate` to the current
code whole, and is found and used as memory stored today is.

The database is migrated back to an early state (django-test-migrations drops the tables and applies
the migrations up to it), memory is written there with that state's models, more at a halfway state,
then everything is migrated to the latest state. Each old row is compared with a twin: the same text
written through today's services for another agent of the project. Their search vectors must be the same
lexemes with the same positions and weights (the agent's own scope lexemes aside), so every migration that
changed how text is parsed must have recomputed the rows it found.
"""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from search.models import VocabularyWord
from sessions_app import services as session_services
from sessions_app.models import Message, Session, SessionArchive
from sessions_app.services.common import reply_context
from tests.operations.old_memory import (
    ARCHIVED_TURNS,
    EARLY,
    EARLY_COLUMNS,
    HALFWAY,
    HALFWAY_COLUMNS,
    early_memory_write,
    halfway_memory_write,
)
from vault import services
from vault.models import Agent, Project, TokenScope, VaultEntry, WorkspaceFile
from vault.trust import content_hash, sketch, word_set

pytestmark = pytest.mark.django_db(transaction=True)


def rows_read(columns: dict[str, str]) -> dict[str, list[tuple]]:
    """Every row of each table, by id, with the given columns (bytes as bytes)."""
    read = {}
    with connection.cursor() as cursor:
        for table, names in columns.items():
            cursor.execute(f"SELECT id, {names} FROM {table} ORDER BY id")
            read[table] = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor]
    return read


def vector_read(table: str, pk: int, agent_id: int) -> list[tuple]:
    """A row's search vector as (lexeme, positions, weights), its agent's scope lexemes written `#a*`."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT v.lexeme, v.positions, v.weights FROM {table} t, unnest(t.search_vector) v"
            " WHERE t.id = %s ORDER BY v.lexeme",
            [pk],
        )
        rows = cursor.fetchall()
    own = f"#a{agent_id}"
    return [
        (
            "#a*" + lexeme[len(own) :] if lexeme == own or lexeme.startswith(own + "e") else lexeme,
            pos,
            weights,
        )
        for lexeme, pos, weights in rows
    ]


def early_state_migrate(migrator):
    """The tables dropped and migrated up to EARLY. The library's clean start runs every migration that
    comes before its target in the full plan's order, where vault 0019 comes before sessions_app 0002:
    so it is started at vault 0002, which only earlier apps precede, and the rest applied from there."""
    migrator.apply_initial_migration(EARLY[:1])
    return migrator.apply_tested_migration(EARLY)


def latest_state_migrate(migrator):
    return migrator.apply_tested_migration(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_an_upgrade_keeps_every_row_and_old_memory_is_searched_and_used_as_new(migrator, api):
    early = early_memory_write(early_state_migrate(migrator).apps)
    early_rows = rows_read(EARLY_COLUMNS)

    halfway_apps = migrator.apply_tested_migration(HALFWAY).apps
    assert rows_read(EARLY_COLUMNS) == early_rows
    halfway = halfway_memory_write(halfway_apps, early)
    halfway_rows = rows_read(HALFWAY_COLUMNS)

    latest_state_migrate(migrator)
    assert rows_read(HALFWAY_COLUMNS) == halfway_rows

    derived_values_check()
    twins = twins_write(early, halfway)
    vectors_check(twins)
    search_check(api, early, halfway, twins)
    old_memory_use_check(early, halfway)


def test_a_rollback_to_the_halfway_schema_keeps_its_rows_and_the_next_upgrade_recomputes_them(migrator):
    early = early_memory_write(early_state_migrate(migrator).apps)
    halfway = halfway_memory_write(migrator.apply_tested_migration(HALFWAY).apps, early)
    halfway_rows = rows_read(HALFWAY_COLUMNS)
    latest_state_migrate(migrator)

    halfway_apps = migrator.apply_tested_migration(HALFWAY).apps
    assert rows_read(HALFWAY_COLUMNS) == halfway_rows
    # The files' vectors, kept by a trigger, are parsed again as that schema parses them.
    Agent = halfway_apps.get_model("vault", "Agent")
    WorkspaceFile = halfway_apps.get_model("vault", "WorkspaceFile")
    twin = Agent.objects.create(project_id=early["project"], slug="twin")
    for file in WorkspaceFile.objects.filter(agent_id=early["agent"]):
        again = WorkspaceFile.objects.create(
            project_id=early["project"], agent=twin, path=file.path, content=file.content
        )
        assert vector_read("vault_workspacefile", file.pk, early["agent"]) == vector_read(
            "vault_workspacefile", again.pk, twin.pk
        ), file.path
    WorkspaceFile.objects.filter(agent=twin).delete()
    twin.delete()

    latest_state_migrate(migrator)
    assert rows_read(HALFWAY_COLUMNS) == halfway_rows
    derived_values_check()
    vectors_check(twins_write(early, halfway))


def derived_values_check():
    """What the data migrations and backfills derived equals what today's writers store."""
    for entry in VaultEntry.objects.all():
        assert entry.content_hash == content_hash(entry.content), entry.pk
        assert entry.sketch == sketch(word_set(entry.content)), entry.pk
    for message in Message.objects.select_related("parent"):
        expected = reply_context(message.parent.text) if message.parent else ""
        assert message.reply_to_text == expected, message.pk
    words = set(VocabularyWord.objects.values_list("word", flat=True))
    for word in ("quokka", "narwhal", "platypus", "ocelot", "queue", "runner", "exporter"):
        assert word in words, word
    with connection.cursor() as cursor:
        cursor.execute("SELECT relpersistence FROM pg_class WHERE relname = 'memory_cache'")
        assert cursor.fetchone() == ("u",)


def twins_write(early: dict, halfway: dict) -> dict:
    """The old rows' texts written again through today's services, for the agent "twin"."""
    project = Project.objects.get(pk=early["project"])
    twin = services.agent_ensure(project=project, slug="twin")
    twins = {"agent": twin.pk, "entries": {}, "files": {}, "messages": {}}
    for entry in VaultEntry.objects.filter(agent_id=early["agent"]).order_by("id"):
        written = services.entry_create(
            agent=twin, category=entry.category, content=entry.content, tags=entry.tags, created_by="test"
        )
        assert (written.content, written.tags) == (entry.content, entry.tags)
        twins["entries"][entry.pk] = written.pk
    for file in WorkspaceFile.objects.filter(agent_id=early["agent"]).order_by("id"):
        written, _ = services.file_write(agent=twin, path=file.path, content=file.content, changed_by="test")
        twins["files"][file.pk] = written.pk
    for message in Message.objects.filter(agent_id=early["agent"]).select_related("parent").order_by("id"):
        turns = [message.parent, message] if message.parent else [message]
        session_services.messages_append(
            agent=twin,
            session_key=f"twin-{message.pk}",
            messages=[{"role": turn.role, "text": turn.text} for turn in turns],
        )
        twins["messages"][message.pk] = (
            Message.objects.filter(session__external_id=f"twin-{message.pk}").latest("id").pk
        )
    session_services.messages_append(
        agent=twin,
        session_key="twin-archived",
        messages=[{"role": role, "text": text} for role, text in ARCHIVED_TURNS],
    )
    session = Session.objects.get(agent=twin, external_id="twin-archived")
    twins["archive"] = session_services.session_archive(session=session).pk
    return twins


def vectors_check(twins: dict) -> None:
    """Every old row's search vector is its twin's: same lexemes, positions and weights."""
    tables = {
        "entries": (VaultEntry, "vault_vaultentry"),
        "files": (WorkspaceFile, "vault_workspacefile"),
        "messages": (Message, "sessions_app_message"),
    }
    for kind, (model, table) in tables.items():
        for old, new in twins[kind].items():
            old_vector = vector_read(table, old, model.objects.get(pk=old).agent_id)
            assert old_vector, (table, old)
            assert old_vector == vector_read(table, new, twins["agent"]), (table, old)
    old_archive = SessionArchive.objects.exclude(agent_id=twins["agent"]).get()
    assert vector_read("sessions_app_sessionarchive", old_archive.pk, old_archive.agent_id) == vector_read(
        "sessions_app_sessionarchive", twins["archive"], twins["agent"]
    )


SEARCHES = [
    # query, kind, the old row (early or halfway, its key)
    ("quokka billing", "entries", ("early", "entries", "decisions")),
    ("invoice totals", "entries", ("early", "entries", "lessons")),
    ("worker queue runner", "entries", ("early", "entries", "decisions")),
    ("replicação atrasada", "entries", ("early", "entries", "tasks")),
    ("webtransport", "entries", ("halfway", "entries", "superseding")),
    ("platypus cursor", "messages", ("early", "messages", "m1")),
    ("hit ratio", "messages", ("halfway", "messages", "h2")),
    ("get user by id handler", "files", ("early", "files", "memory/2026-11-20.md")),
    ("redis cluster", "files", ("halfway", "files", "memory/2026-11-21.md")),
    ("数据接入", "entries", ("early", "entries", "projects")),
    ("刷新", "messages", ("early", "messages", "m2")),
]


def search_check(api, early: dict, halfway: dict, twins: dict) -> None:
    """/search finds each old row, as it finds its twin."""
    project = Project.objects.get(pk=early["project"])
    token = services.token_create(project=project, scope=TokenScope.ADMIN)[1]
    written = {"early": early, "halfway": halfway}
    for query, kind, (phase, group, key) in SEARCHES:
        old = written[phase][group][key]
        response = api.get(
            "/search", token=token, q=query, kinds=kind, mode="lexical", limit=50, status="all"
        )
        assert response.status_code == 200, response.json()
        found = {result["id"] for result in response.json()["results"]}
        assert {old, twins[group][old]} <= found, (query, found)
    response = api.get(
        "/search", token=token, q="axolotl tracer", kinds="messages", status="archived", mode="lexical"
    )
    assert {r["agent"] for r in response.json()["results"]} == {"dev", "twin"}, response.json()


def old_memory_use_check(early: dict, halfway: dict) -> None:
    """Old rows take part in today's rules: a write repeating an old entry is its duplicate, an old
    archived session comes back with its messages' reply context, an old daily note takes appends."""
    dev = Agent.objects.get(pk=early["agent"])
    old = VaultEntry.objects.get(pk=early["entries"]["projects"])
    again = services.entry_create(
        agent=dev, category=old.category, content=old.content.upper(), created_by="t"
    )
    assert again.pk == old.pk
    session = Session.objects.get(pk=halfway["archived_session"])
    session_services.session_restore(session=session)
    restored = list(Message.objects.filter(session=session).select_related("parent").order_by("id"))
    assert [m.text for m in restored] == [text for _, text in ARCHIVED_TURNS]
    for message in restored:
        assert message.reply_to_text == (reply_context(message.parent.text) if message.parent else "")
    assert services.daily_notes_flush(agent=dev) == 1
    queued = WorkspaceFile.objects.get(pk=halfway["files"]["memory/2026-11-21.md"])
    assert queued.content.endswith(
        "- assistant: yes, in redis.cluster.local:6379\n- user: and the ocelot cache?\n"
    )
    services.file_append(
        agent=dev, path="memory/2026-11-20.md", text="- user: the tapir gateway?\n", changed_by="t"
    )
    for path, word in (("memory/2026-11-21.md", "ocelot"), ("memory/2026-11-20.md", "tapir")):
        file = WorkspaceFile.objects.get(agent=dev, path=path)
        assert (word,) in {row[:1] for row in vector_read("vault_workspacefile", file.pk, dev.pk)}, path
