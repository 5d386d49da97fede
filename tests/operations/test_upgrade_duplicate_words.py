"""A database upgraded from before vault 0026 compares its Chinese, Japanese and Thai entries, and its
negated statements, with new ones by the current rule (vault/trust.py: character pairs, Thai marks
kept, "not" counted).

The content hashes and sketches are set back to what no current rule gives (as an older release
stored them by other rules), vault 0026 is rolled back and applied again: the affected entries get
today's values, the others keep theirs."""

import pytest

from vault import services
from vault.models import Project, VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("vault", "0025_deletion_audit_outlives_project")]
AFTER = [("vault", "0026_duplicate_words")]
CHINESE = "数据库迁移在周五完成，需要先备份所有的用户表和订单表。"
THAI = "เราซื้อข้าวทุกวันจันทร์"
NEGATED = "We decided we can't run the billing workers from cron on Fridays"


def test_hashes_and_sketches_of_text_without_spaces_are_computed_again(migrator, api):
    project = Project.objects.create(slug="acme", name="Acme")
    agent = services.agent_ensure(project=project, slug="dev")
    made = {
        text: services.entry_create(agent=agent, category="decisions", content=text, created_by="test")
        for text in (CHINESE, THAI, NEGATED, "The café rota lives on the ops wiki, updated every Monday")
    }
    today = {entry.pk: (entry.content_hash, entry.sketch) for entry in VaultEntry.objects.all()}
    assert len(today[made[CHINESE].pk][1]) == 8  # five pairs or more: a sketch

    migrator.apply_tested_migration(BEFORE)
    VaultEntry.objects.update(content_hash="old", sketch=[1])

    migrator.apply_tested_migration(AFTER)
    stored = {entry.pk: (entry.content_hash, entry.sketch) for entry in VaultEntry.objects.all()}
    assert stored[made[CHINESE].pk] == today[made[CHINESE].pk]
    assert stored[made[THAI].pk] == today[made[THAI].pk]
    assert stored[made[NEGATED].pk] == today[made[NEGATED].pk]
    assert stored[made["The café rota lives on the ops wiki, updated every Monday"].pk] == ("old", [1])
