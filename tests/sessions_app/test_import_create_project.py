"""import_memory_dir and import_conversations into a project that does not exist yet, as the README
prints them: `--create-project` creates it; without it the error names the flag."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session
from vault.models import Project, VaultEntry

COMMANDS = ["import_memory_dir", "import_conversations"]


@pytest.fixture
def memory_folder(tmp_path) -> Path:
    root = tmp_path / ".memory"
    (root / "dev").mkdir(parents=True)
    (root / "dev" / "decisions.md").write_text(
        "<!-- id:1 -->\n## 2026-03-15T09:00 · #database\nWe decided to use PostgreSQL.\n---\n",
        encoding="utf-8",
    )
    (root / "conversations").mkdir()
    conversation = {
        "agentId": "dev",
        "savedAt": "2026-03-15T23:04:23.463Z",
        "messages": [
            {"role": "user", "text": "hi"},
            {"role": "agent", "text": "We decided to use Redis for caching."},
        ],
    }
    (root / "conversations" / "dev.json").write_text(json.dumps(conversation), encoding="utf-8")
    return root


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize("command", COMMANDS)
def test_it_refuses_a_missing_project_naming_the_flag(memory_folder, command):
    with pytest.raises(CommandError) as failure:
        run(command, str(memory_folder), "--project", "newproj")
    assert str(failure.value) == "Project 'newproj' does not exist (add --create-project to create it)."
    assert not Project.objects.filter(slug="newproj").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("command", COMMANDS)
def test_it_creates_the_missing_project_and_imports_into_it(memory_folder, command):
    out = run(command, str(memory_folder), "--project", "newproj", "--create-project")
    project = Project.objects.get(slug="newproj")
    assert out.startswith("Created project newproj.\n") and "Import summary:" in out
    contents = set(VaultEntry.objects.filter(project=project).values_list("content", flat=True))
    if command == "import_memory_dir":
        assert any("PostgreSQL" in c for c in contents)
        assert Session.objects.filter(project=project, agent__slug="dev").exists()
    else:
        assert any("Redis" in c for c in contents)
    # Run again: the project is there now and the flag changes nothing.
    again = run(command, str(memory_folder), "--project", "newproj", "--create-project")
    assert "Created project" not in again
    assert Project.objects.filter(slug="newproj").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("command", COMMANDS)
def test_a_dry_run_creates_no_project(memory_folder, command):
    out = run(command, str(memory_folder), "--project", "newproj", "--create-project", "--dry-run")
    assert out.startswith("Would create project newproj.\n") and "Dry run" in out
    assert not Project.objects.filter(slug="newproj").exists()
    assert not VaultEntry.objects.exists() and not Session.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("command", COMMANDS)
def test_an_invalid_project_slug_is_refused_and_nothing_is_created(memory_folder, command):
    with pytest.raises(CommandError, match="project 'Bad Slug!' is not valid"):
        run(command, str(memory_folder), "--project", "Bad Slug!", "--create-project")
    assert not Project.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("command", COMMANDS)
def test_a_failed_import_does_not_leave_the_project_it_created(tmp_path, command):
    """An import that failed after --create-project had created the project left it behind, empty: the
    slug taken by a project nobody meant to have. The project it created is removed with it."""
    (tmp_path / "notes.txt").write_text("nothing an import reads", encoding="utf-8")
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command(command, str(tmp_path), "--project", "newproj", "--create-project", stdout=out)
    assert not Project.objects.filter(slug="newproj").exists()
    assert out.getvalue().splitlines() == [
        "Created project newproj.",
        "Removed project newproj, which this import created: the import failed.",
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("command", COMMANDS)
def test_a_failed_import_leaves_a_project_that_was_there_as_it_was(tmp_path, memory_folder, command):
    run(command, str(memory_folder), "--project", "newproj", "--create-project")
    entries = VaultEntry.objects.filter(project__slug="newproj").count()
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError):
        run(command, str(tmp_path / "empty"), "--project", "newproj", "--create-project")
    assert Project.objects.filter(slug="newproj").exists()
    assert VaultEntry.objects.filter(project__slug="newproj").count() == entries > 0


@pytest.mark.django_db
def test_removing_a_created_project_says_whether_it_is_gone():
    """The failed import's clean-up reports a project someone else removed meanwhile as gone (it said
    "Kept project ...: it was given a token or a curator"), and keeps one a token was given to."""
    from vault import services
    from vault.models import ApiToken

    gone = services.project_create(slug="gone-meanwhile")
    Project.objects.filter(pk=gone.pk).delete()
    assert services.project_created_remove(project=gone) is True
    kept = services.project_create(slug="given-a-token")
    ApiToken.objects.create(project=kept, name="ci", prefix="x", token_hash="x" * 64)
    assert services.project_created_remove(project=kept) is False
    assert Project.objects.filter(pk=kept.pk).exists()
    fresh = services.project_create(slug="untouched")
    assert services.project_created_remove(project=fresh) is True
    assert not Project.objects.filter(pk=fresh.pk).exists()


@pytest.mark.django_db
def test_removing_the_project_a_failed_import_created_is_audited(tmp_path, memory_folder, monkeypatch):
    """Every deletion of memory writes a deletion-audit row (forget, purge, a session's retention), but the
    removal of the project a failed --create-project import had created, with the half import it held,
    wrote none: the memory was gone without a trace. It now writes one, kept after the project is gone
    (the row names the project by its slug), hash and size of its context, counts of what it held."""
    from vault.models import DeletionAudit
    from vault.services.audit import content_sha
    from vault.transfer import layouts

    def fail_after_the_vault_part(*args, **kwargs):  # committed: the sessions are stored after it
        raise RuntimeError("disk full")

    monkeypatch.setattr(layouts, "sessions_pending_store", fail_after_the_vault_part)
    with pytest.raises(RuntimeError):
        run("import_memory_dir", str(memory_folder), "--project", "newproj", "--create-project")
    assert not Project.objects.filter(slug="newproj").exists()
    audit = DeletionAudit.objects.get(kind="project")
    assert (audit.project_id, audit.project_slug, audit.reason, audit.deleted_by) == (
        None,
        "newproj",
        "undone",
        "import",
    )
    assert audit.content_sha256 == content_sha("") and audit.content_chars == 0
    assert audit.criteria["why"] == "the import that created it failed"
    assert (audit.criteria["agents"], audit.criteria["entries"]) == (1, 1) and audit.criteria["files"] > 0
