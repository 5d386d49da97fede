"""A database upgraded from before vault 0027 tells apart, by their content hashes, texts that differ
in a mark only (vault/trust.py's text_words): the hashes stored by the folding rule are computed again.

The content hashes and sketches are set back to what no current rule gives (as an older release
stored them by another rule), vault 0027 is rolled back and applied again: the entries holding a
character beyond ASCII get today's values, the ASCII ones (whose hash the new rule leaves as it was)
keep theirs."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from vault import services
from vault.models import Project, VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("vault", "0026_duplicate_words")]
VIETNAMESE = "Chúng tôi sẽ bán căn nhà ở Hà Nội cho gia đình anh Minh vào tháng sau"
HINDI = "एक दिन"
ASCII = "The billing workers run from cron on Fridays"


def test_hashes_and_sketches_of_text_beyond_ascii_are_computed_again(migrator):
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    project = Project.objects.create(slug="acme", name="Acme")
    agent = services.agent_ensure(project=project, slug="dev")
    made = {
        text: services.entry_create(agent=agent, category="decisions", content=text, created_by="test")
        for text in (VIETNAMESE, HINDI, ASCII)
    }
    today = {entry.pk: (entry.content_hash, entry.sketch) for entry in VaultEntry.objects.all()}

    migrator.apply_tested_migration(BEFORE)
    VaultEntry.objects.update(content_hash="old", sketch=[1])

    migrator.apply_tested_migration(latest)
    stored = {entry.pk: (entry.content_hash, entry.sketch) for entry in VaultEntry.objects.all()}
    assert stored[made[VIETNAMESE].pk] == today[made[VIETNAMESE].pk]
    assert stored[made[HINDI].pk] == today[made[HINDI].pk]
    assert stored[made[ASCII].pk] == ("old", [1])
