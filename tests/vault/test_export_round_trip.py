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


def chains(project) -> list[tuple]:
    return sorted(
        (e.content, e.status, e.supersedes.content if e.supersedes else None)
        for e in VaultEntry.objects.filter(project=project).select_related("supersedes")
    )


def test_it_gives_back_every_supersede_chain_and_a_reimport_keeps_it(tmp_path, project, agent_a, target):
    """The export kept a superseded entry's status but not what superseded it: imported, the chain was
    cut into entries that each stood alone (GET /entries/{id}/chain showed one entry, and deleting the
    live end no longer brought its predecessor back)."""
    first = services.entry_create(agent=agent_a, category="decisions", content="Streaming uses SSE")
    second = services.entry_create(
        agent=agent_a, category="decisions", content="Streaming moves to WebTransport", supersedes_id=first.pk
    )
    services.entry_create(
        agent=agent_a, category="projects", content="Streaming is gRPC now", supersedes_id=second.pk
    )
    services.entry_create(agent=agent_a, category="lessons", content="Alone")
    out = export_to(tmp_path / "out", project)
    transfer.import_memory_dir(path=out, project=target)
    assert chains(target) == chains(project)
    again = transfer.import_memory_dir(path=out, project=target)
    assert chains(target) == chains(project) and not again.problems


def test_it_keeps_an_entrys_importance_exactly(tmp_path, project, agent_a, target):
    """Importance was written with six significant digits (`:g`): 0.123456789 came back 0.123457."""
    services.entry_create(agent=agent_a, category="decisions", content="Precise", importance=0.123456789)
    transfer.import_memory_dir(path=export_to(tmp_path / "out", project), project=target)
    assert VaultEntry.objects.get(project=target).importance == 0.123456789
