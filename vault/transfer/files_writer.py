"""The part of an import's writer that writes workspace files and the project context (`FilesWriter`,
the base of `writer.Importer`), and `_written`, how any write of the vault part that locks a row the
live write path locks is run (rolled back at once in a dry run)."""

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import transaction

from memoryproject.errors import DomainError
from vault import services
from vault.models import (
    Agent,
    Project,
    ProjectContextVersion,
    VaultEntry,
    VersionAction,
    WorkspaceFile,
    WorkspaceFileVersion,
)
from vault.text import text_check
from vault.transfer.common import then
from vault.transfer.histories import IMPORT_AUTHOR, import_version_drop
from vault.workspace_templates import workspace_default


class _WriteUndone(Exception):
    pass


class FilesWriter:
    """Workspace files and the project context of an import. Expects the `Importer`'s `report`,
    `project`, `file_versions`, `project_versions` and `agents_created`."""

    @contextmanager
    def _written(self) -> Iterator[None]:
        """A write of the vault part that locks a row the live write path locks too (a workspace file:
        the day's note an agent's exchanges are logged in, MEMORY.md its durable facts go to; the project;
        an entry), whose result nothing later in the import reads. In a real run it is committed with the
        vault part. In a dry run it is a savepoint rolled back as soon as it is done, which releases that
        lock: a dry run holds none of them to its end, and a live agent does not wait for it."""
        if not self.report.dry_run:
            with transaction.atomic():
                yield
            return
        try:
            with transaction.atomic():
                yield
                raise _WriteUndone
        except _WriteUndone:
            pass

    def file_put(
        self,
        agent: Agent | None,
        path: str,
        content: str,
        *,
        enabled: bool | None = None,
        sort_order: int | None = None,
        exported: bool = False,
        where,
    ) -> None:
        """Create or update a workspace file (`exported`: one our export wrote, held to
        MEMORY_IMPORT_MAX_FILE_BYTES, since appends grow a note past MEMORY_MAX_ENTRY_BYTES). A file deleted
        here since holding this content stays deleted.
        A file that already holds this content is unchanged (its
        enabled flag and sort order are set only when they differ, so its date stays); one that held it
        before a later edit is left alone (the edit wins); otherwise the import overwrites it and the
        previous content is versioned."""
        if agent is None:
            self.report.counts["files skipped (no valid agent)"] += 1
            return
        try:  # before the lookups below: a NUL in the text failed them with a DataError traceback
            text_check(content, allow_empty=True, max_bytes=sys.maxsize)
        except DomainError as exc:
            self.report.problem(where, then(exc.detail, "File skipped"))
            return
        existing = WorkspaceFile.objects.filter(agent=agent, path=path, deleted_at__isnull=True).first()
        if existing is None and self._file_deleted_since(agent, path, content):
            self.report.counts["files deleted here since (skipped)"] += 1
            return
        if existing is not None and existing.content == content:
            self.report.counts["files unchanged"] += 1
            if enabled not in (None, existing.enabled) or sort_order not in (None, existing.sort_order):
                with self._written():
                    services.file_settings_set(agent=agent, path=path, enabled=enabled, sort_order=sort_order)
        elif (
            existing is not None
            and WorkspaceFileVersion.objects.filter(file=existing, content=content).exists()
            and not workspace_default(path, existing.content)
        ):
            self.report.counts["files skipped (edited since an earlier import)"] += 1
            return
        else:
            try:
                with self._written():
                    file, created = services.file_write(
                        agent=agent,
                        path=path,
                        content=content,
                        changed_by=IMPORT_AUTHOR,
                        enabled=enabled,
                        sort_order=sort_order,
                        markdown_only=not path.startswith("memories/"),
                        dateless_notes=True,  # kept, and reported (daily_note_name_check)
                        **(
                            {
                                "max_bytes": settings.MEMORY_IMPORT_MAX_FILE_BYTES,
                                "limit_setting": "MEMORY_IMPORT_MAX_FILE_BYTES",
                            }
                            if exported
                            else {}
                        ),
                    )
                    import_version_drop(
                        WorkspaceFileVersion.objects.filter(file=file),
                        self.file_versions.get(agent.pk, {}).get(path, []),
                    )
                    if exported and existing is not None and agent.pk in self.agents_created:
                        self._starting_text_unversion(file, existing.content)
            except DomainError as exc:
                self.report.problem(where, then(exc.detail, "File skipped"))
                return
            self.report.counts["files created" if created else "files updated"] += 1

    @staticmethod
    def _starting_text_unversion(file: WorkspaceFile, replaced: str) -> None:
        """An agent this import created got the starting workspace files, which the import then
        overwrote with those of our export: the starting text it versioned was never the source agent's
        (the export's history, attached, shows it only if the source's did), so it goes. A folder written
        by hand has no history: there the starting text stays a version."""
        if not workspace_default(file.path, replaced):
            return
        version = (
            WorkspaceFileVersion.objects.filter(file=file, changed_by=IMPORT_AUTHOR, content=replaced)
            .order_by("-id")
            .first()
        )
        if version is not None:
            version.delete()

    @staticmethod
    def _file_deleted_since(agent: Agent, path: str, content: str) -> bool:
        """Whether the file at `path` was deleted here while holding this content (or holding it before an
        edit): an import run again must not bring back what a curator deleted."""
        versions = WorkspaceFileVersion.objects.filter(
            file__agent=agent, file__path=path, file__deleted_at__isnull=False
        )
        return (
            versions.filter(content=content).exists()
            and versions.filter(action=VersionAction.DELETE).exists()
        )

    def redaction_off_adopt(self, *, where) -> None:
        """The exported project had redaction switched off: its memory holds addresses and keys as they
        are. A project holding no entry yet takes that setting, so that they are not redacted on the way
        in; one that holds memory keeps its own setting, and the report says what that means."""
        project = Project.objects.get(pk=self.project.pk)
        if not project.redaction_enabled:
            return
        if VaultEntry.objects.filter(project=project).exists():
            self.report.problem(
                where,
                "the exported project had redaction off; this project redacts what is imported into it (switch "
                "its redaction off first, on its settings page, to keep the text as it was)",
            )
            return
        services.project_redaction_set(project=project, enabled=False)
        self.report.counts["project redaction switched off, as in the exported project"] += 1

    def project_context(self, content: str, *, where) -> None:
        project = Project.objects.get(pk=self.project.pk)
        if project.context == content:
            self.report.counts["project context unchanged"] += 1
            return
        try:
            with self._written():
                services.project_context_set(project=project, content=content, changed_by=IMPORT_AUTHOR)
                import_version_drop(
                    ProjectContextVersion.objects.filter(project=project), self.project_versions
                )
        except DomainError as exc:
            self.report.problem(where, exc.detail)
            return
        self.report.counts["project context replaced (previous text versioned)"] += 1
