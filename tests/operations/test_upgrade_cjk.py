"""A database upgraded from before search 0012 finds its Chinese, Japanese and Korean memory.

The upgrade tests (test_upgrade_in_place.py) start before `memory_search_text` existed, so the
migrations that created it run today's definition and cannot show that 0012 recomputes what an older
definition stored. Here memory is written today, search 0012 is rolled back (the previous function
is restored and those rows' vectors computed again with it: a database as the previous release left
it), then migrated forward again."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app import services as session_services
from sessions_app.models import Message, Session
from tests.operations.search_vectors import found, lexemes
from vault import services
from vault.models import Project, TokenScope, VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("search", "0011_scope_length")]
ENTRY = "合作伙伴数据接入管道由narwhal团队维护"
TURNS = [("user", "カワウソのエクスポーターはいつ動く？"), ("assistant", "毎晩、バックアップの後に動く。")]
FILE = "# 메모\n\n- 추적기 포트는 설정 파일에 있다\n"


def test_rows_stored_before_the_pairs_are_parsed_again_on_upgrade_and_back_on_rollback(migrator, api):
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    project = Project.objects.create(slug="acme", name="Acme")
    agent = services.agent_ensure(project=project, slug="dev")
    token = services.token_create(project=project, scope=TokenScope.ADMIN)[1]
    entry = services.entry_create(agent=agent, category="projects", content=ENTRY, created_by="test")
    file, _ = services.file_write(agent=agent, path="MEMORY.md", content=FILE, changed_by="test")
    session_services.messages_append(
        agent=agent, session_key="chat", messages=[{"role": r, "text": t} for r, t in TURNS]
    )
    answer = Message.objects.get(session__external_id="chat", role="assistant")
    session_services.messages_append(
        agent=agent, session_key="old-chat", messages=[{"role": "user", "text": "旧的会话缓存配置"}]
    )
    archive = session_services.session_archive(session=Session.objects.get(external_id="old-chat"))
    today = {
        "entry": lexemes("vault_vaultentry", entry.pk),
        "file": lexemes("vault_workspacefile", file.pk),
        "message": lexemes("sessions_app_message", answer.pk),
        "archive": lexemes("sessions_app_sessionarchive", archive.pk),
    }
    assert {"数据", "据接", "接入"} <= today["entry"]
    assert {"추적", "적기"} <= today["file"]
    assert {"毎晩", "バッ"} <= today["message"]
    assert {"会话", "缓存"} <= today["archive"]

    migrator.apply_tested_migration(BEFORE)
    # As the previous release stored them: each run of CJK characters one lexeme.
    assert "合作伙伴数据接入管道由narwhal团队维护" in lexemes("vault_vaultentry", entry.pk)
    assert "추적기" in lexemes("vault_workspacefile", file.pk)
    assert "接入" not in lexemes("vault_vaultentry", entry.pk)
    assert "会话" not in lexemes("sessions_app_sessionarchive", archive.pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = 'memory_cjk_pairs'")
        assert cursor.fetchone() == (0,)

    migrator.apply_tested_migration(latest)
    assert lexemes("vault_vaultentry", entry.pk) == today["entry"]
    assert lexemes("vault_workspacefile", file.pk) == today["file"]
    assert lexemes("sessions_app_message", answer.pk) == today["message"]
    assert lexemes("sessions_app_sessionarchive", archive.pk) == today["archive"]
    assert found(api, token, "数据接入", "entries") == [entry.pk]
    assert VaultEntry.objects.get(pk=entry.pk).content == ENTRY
    assert found(api, token, "추적기 포트", "files") == [file.pk]
    assert answer.pk in found(api, token, "バックアップ", "messages")
