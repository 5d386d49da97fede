"""A database upgraded from before search 0013 finds its Thai, Lao, Myanmar and Khmer memory, and its
CJK memory by one character.

As in test_upgrade_cjk.py: memory is written today, search 0013 is rolled back (the function as search
0012 created it is restored and the affected rows' vectors computed again with it), then migrated
forward again. Rows without such text are not rewritten."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app import services as session_services
from sessions_app.models import Message, Session
from tests.operations.search_vectors import found, lexemes, row_version
from vault import services
from vault.models import Project, TokenScope

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("search", "0012_search_text_cjk")]
ENTRY = "เราตัดสินใจใช้Redisเป็นแคชของเซสชัน"
FILE = "# 笔记\n\n- 我养了一只猫\n"
TURNS = [("user", "ພວກເຮົາຕັດສິນໃຈໃຊ້ຖານຂໍ້ມູນໃໝ່"), ("assistant", "OK")]
ARCHIVED = "យើងសម្រេចចិត្តប្រើឃ្លាំងសម្ងាត់"


def test_rows_of_scripts_without_spaces_are_parsed_again_on_upgrade_and_back_on_rollback(migrator, api):
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    project = Project.objects.create(slug="acme", name="Acme")
    agent = services.agent_ensure(project=project, slug="dev")
    token = services.token_create(project=project, scope=TokenScope.ADMIN)[1]
    entry = services.entry_create(agent=agent, category="projects", content=ENTRY, created_by="test")
    latin = services.entry_create(
        agent=agent, category="projects", content="The café rota is on the wiki", created_by="test"
    )
    file, _ = services.file_write(agent=agent, path="MEMORY.md", content=FILE, changed_by="test")
    session_services.messages_append(
        agent=agent, session_key="chat", messages=[{"role": r, "text": t} for r, t in TURNS]
    )
    question = Message.objects.get(session__external_id="chat", role="user")
    session_services.messages_append(
        agent=agent, session_key="old-chat", messages=[{"role": "user", "text": ARCHIVED}]
    )
    archive = session_services.session_archive(session=Session.objects.get(external_id="old-chat"))
    today = {
        "entry": lexemes("vault_vaultentry", entry.pk),
        "file": lexemes("vault_workspacefile", file.pk),
        "message": lexemes("sessions_app_message", question.pk),
        "archive": lexemes("sessions_app_sessionarchive", archive.pk),
    }
    assert {"แค", "คช", "redi"} <= today["entry"]
    assert {"只猫", "猫"} <= today["file"]
    assert {"ຖາ", "ມູ"} <= today["message"]

    migrator.apply_tested_migration(BEFORE)
    # As the previous release stored them: a Thai run one lexeme, a CJK run's pairs only.
    assert "แค" not in lexemes("vault_vaultentry", entry.pk)
    assert "猫" not in lexemes("vault_workspacefile", file.pk)
    assert "ຖາ" not in lexemes("sessions_app_message", question.pk)
    assert ARCHIVED in lexemes("sessions_app_sessionarchive", archive.pk)
    unchanged = row_version("vault_vaultentry", latin.pk)

    migrator.apply_tested_migration(latest)
    assert lexemes("vault_vaultentry", entry.pk) == today["entry"]
    assert lexemes("vault_workspacefile", file.pk) == today["file"]
    assert lexemes("sessions_app_message", question.pk) == today["message"]
    assert lexemes("sessions_app_sessionarchive", archive.pk) == today["archive"]
    assert row_version("vault_vaultentry", latin.pk) == unchanged
    assert found(api, token, "แคช", "entries") == [entry.pk]
    assert found(api, token, "猫", "files") == [file.pk]
    assert question.pk in found(api, token, "ຖານຂໍ້ມູນ", "messages")
