"""`manage.py workspace_upgrade`: an agent's AGENTS.md still at a starting text shipped before gets the
current one (versioned); one somebody wrote is left alone and reported."""

import hashlib
import io

import pytest
from django.core.management import CommandError, call_command

from vault import services
from vault.models import WorkspaceFile, WorkspaceFileVersion
from vault.workspace_templates import AGENTS_MD, PREVIOUS_DEFAULTS

pytestmark = pytest.mark.django_db

# The AGENTS.md agents were created with before days were kept in parts (commit 73e4f85), by its SHA-256:
# the upgrade matches byte for byte, so the kept text must be exactly what was shipped.
SHIPPED_BEFORE_DAY_PARTS = "a46d2236a62a8f1cadcb9c971055a2592c6462a1cc2c87cb91c4c4b67f74caf2"
OLD = PREVIOUS_DEFAULTS["AGENTS.md"][0]


def agents_md(agent) -> WorkspaceFile:
    return WorkspaceFile.objects.get(agent=agent, path="AGENTS.md", deleted_at__isnull=True)


def made_before(agent, content: str = OLD) -> None:
    """The agent as it was created by an earlier release: AGENTS.md at that release's default, no history."""
    WorkspaceFile.objects.filter(agent=agent, path="AGENTS.md").update(
        content=content, size=len(content.encode())
    )


def upgrade(*args) -> str:
    out = io.StringIO()
    call_command("workspace_upgrade", *args, stdout=out)
    return out.getvalue()


def test_the_kept_earlier_default_is_the_text_that_was_shipped():
    assert hashlib.sha256(OLD.encode()).hexdigest() == SHIPPED_BEFORE_DAY_PARTS
    assert OLD != AGENTS_MD


def test_it_upgrades_an_agents_md_left_at_an_earlier_default(agent_a):
    """Agents made before the template changed kept telling their model that a day is one note
    (memory/YYYY-MM-DD.md): nothing ever brought them the new text."""
    made_before(agent_a)
    out = upgrade()
    assert agents_md(agent_a).content == AGENTS_MD
    [version] = WorkspaceFileVersion.objects.filter(file=agents_md(agent_a))
    assert version.content == OLD and version.changed_by == "workspace upgrade"
    assert "acme/agent-a: AGENTS.md upgraded to the current default" in out
    assert out.endswith("1 upgraded, 0 already current, 0 edited (left as they are)\n")
    assert upgrade().endswith("0 upgraded, 1 already current, 0 edited (left as they are)\n")
    assert WorkspaceFileVersion.objects.filter(file=agents_md(agent_a)).count() == 1


def test_it_leaves_an_edited_agents_md_alone_and_reports_it(agent_a, agent_b):
    edited = OLD + "\n- Always answer in French.\n"
    services.file_write(agent=agent_b, path="AGENTS.md", content=edited, changed_by="curator")
    made_before(agent_a, OLD.replace("\n", "\r\n"))  # not byte for byte a shipped text: somebody's
    out = upgrade()
    assert agents_md(agent_b).content == edited and agents_md(agent_a).content == OLD.replace("\n", "\r\n")
    assert "acme/agent-a: AGENTS.md edited (not a shipped default), left as it is" in out
    assert "acme/agent-b: AGENTS.md edited (not a shipped default), left as it is" in out
    assert out.endswith("0 upgraded, 0 already current, 2 edited (left as they are)\n")


def test_a_dry_run_changes_nothing_and_a_project_keeps_to_its_agents(agent_a, outsider_agent):
    made_before(agent_a)
    made_before(outsider_agent)
    out = upgrade("--dry-run")
    assert "acme/agent-a: AGENTS.md would be upgraded to the current default" in out
    assert agents_md(agent_a).content == OLD and not WorkspaceFileVersion.objects.exists()
    upgrade("--project", "globex")
    assert agents_md(outsider_agent).content == AGENTS_MD and agents_md(agent_a).content == OLD
    with pytest.raises(CommandError, match="No project 'nope'"):
        upgrade("--project", "nope")


def test_a_deleted_agents_md_is_not_brought_back(agent_a):
    made_before(agent_a)
    services.file_delete(agent=agent_a, path="AGENTS.md", deleted_by="curator")
    assert upgrade().endswith("0 upgraded, 0 already current, 0 edited (left as they are)\n")
    assert not WorkspaceFile.objects.filter(agent=agent_a, path="AGENTS.md", deleted_at__isnull=True).exists()
