from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError
from django.db import transaction

from vault import services
from vault.models import Project


def project_get(slug: str) -> Project:
    """The project a command names, or a CommandError saying how to create it."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"Project {slug!r} does not exist (create it with token_create --create-project).")
    return project


class _DryRunRollback(Exception):
    pass


@contextmanager
def project_for_import(
    slug: str, *, create: bool, dry_run: bool, say: Callable[[str], None]
) -> Iterator[Project]:
    """The project an import command writes into. A missing one is created (through project_create, as
    token_create --create-project does) when `create` is given, else the error names the flag; when the
    import then fails, the project it created is removed (services.project_created_remove). On a dry
    run the project is created in a transaction rolled back with the rest, so a dry run writes nothing."""
    project = Project.objects.filter(slug=slug).first()
    if project is not None:
        yield project
        return
    if not create:
        raise CommandError(f"Project {slug!r} does not exist (add --create-project to create it).")
    if not dry_run:
        project = services.project_create(slug=slug)
        say(f"Created project {project.slug}.")
        try:
            yield project
        except BaseException:
            # A failed import does not leave the project it created behind (the slug taken, the project
            # empty or half imported): it is removed with what the import stored. Run again, the import
            # creates it again.
            if services.project_created_remove(project=project):
                say(f"Removed project {project.slug}, which this import created: the import failed.")
            else:
                say(f"Kept project {project.slug}: it was given a token or a curator while the import ran.")
            raise
        return
    try:
        with transaction.atomic():
            project = services.project_create(slug=slug)
            say(f"Would create project {project.slug}.")
            yield project
            raise _DryRunRollback
    except _DryRunRollback:
        pass
