from django.core.management.base import CommandError

from vault.models import Project


def project_get(slug: str) -> Project:
    """The project a command names, or a CommandError saying how to create it."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"Project {slug!r} does not exist (create it with token_create --create-project).")
    return project
