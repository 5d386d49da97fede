from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memoryproject.errors import DomainError
from sessions_app.session_files import agent_session_files
from vault.management.projects import project_get
from vault.transfer import export


class Command(BaseCommand):
    help = (
        "Write the project's memory as .memory/ layout: readable markdown (an Obsidian vault), with "
        "each agent's sessions and checkpoint, that import_memory_dir reads back."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the folder to write (created if missing)")
        parser.add_argument("--project", default="default", help="project slug (default: default)")
        parser.add_argument("--agent", action="append", help="export only this agent (repeatable)")

    def handle(self, *args, **options):
        project = project_get(options["project"])
        agents = project.agents.order_by("slug")
        if options["agent"]:
            agents = agents.filter(slug__in=options["agent"])
            missing = set(options["agent"]) - set(agents.values_list("slug", flat=True))
            if missing:
                raise CommandError(f"No such agent in {project.slug}: {', '.join(sorted(missing))}")
        try:
            summary = export.export_memory_dir(
                path=Path(options["path"]),
                project=project,
                agents=agents,
                progress=self.stdout.write,
                extra=agent_session_files,
            )
        except DomainError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(
            f"Exported {len(summary.agents)} agent(s), {summary.entries} entries in {summary.files} files to "
            f"{summary.path}."
        )
