"""An export imported into a fresh project gives every entry back, with its supersede chain."""

import io
from pathlib import Path

from django.core.management import call_command

from sessions_app import transfer
from vault import services
from vault.models import VaultEntry


def export_to(path: Path, project) -> Path:
    call_command("export_memory_dir", str(path), "--project", project.slug, stdout=io.StringIO())
    return path


def contents(project) -> list[tuple]:
    return sorted(
        (e.agent.slug, e.category, e.content, e.status)
        for e in VaultEntry.objects.filter(project=project).select_related("agent")
    )


def test_it_exports_an_entry_whose_id_another_entry_kept_from_an_import_under_its_own_id(
    tmp_path, project, agent_a, target
):
    """A native entry was exported under its pk, an imported one under its legacy id: the two could be the
    same (an earlier export's ids are small numbers, like this server's pks), and the import of the
    export skipped the second as already imported: an entry lost."""
    native = services.entry_create(agent=agent_a, category="decisions", content="Use SSE for streaming")
    services.entry_create(
        agent=agent_a, category="lessons", content="Cache keys need a version", legacy_id=str(native.pk)
    )
    report = transfer.import_memory_dir(path=export_to(tmp_path / "out", project), project=target)
    assert contents(target) == contents(project), report.summary()
