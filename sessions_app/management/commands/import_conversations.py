from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memoryproject.errors import DomainError
from sessions_app import transfer
from vault.management.projects import project_for_import
from vault.transfer.common import agent_map_parse


class Command(BaseCommand):
    help = (
        "Mine conversation files (.memory/, its conversations/ folder, or one .json) into handoffs, "
        "decisions and lessons with the PT + EN patterns. Idempotent; source files are never modified."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path", help="a .memory/ folder, a conversations/ folder or one conversation file"
        )
        parser.add_argument("--project", default="default", help="target project slug (default: default)")
        parser.add_argument(
            "--create-project", action="store_true", help="create the project if it is missing"
        )
        parser.add_argument("--agent-map", default="", help="rename agents: old=new,old2=new2")
        parser.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
        parser.add_argument(
            "--strict",
            action="store_true",
            help=(
                "exit with status 1 when any problem was reported (a file, an entry or a message skipped) "
                "or a date was not kept as written (to come, too early or unreadable)"
            ),
        )

    def handle(self, *args, **options):
        try:
            agent_map = agent_map_parse(options["agent_map"])
            with project_for_import(
                options["project"],
                create=options["create_project"],
                dry_run=options["dry_run"],
                say=self.stdout.write,
            ) as project:
                report = transfer.import_conversations(
                    path=Path(options["path"]),
                    project=project,
                    agent_map=agent_map,
                    dry_run=options["dry_run"],
                    progress=self.stdout.write,
                )
        except DomainError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(report.summary())
        if options["strict"] and report.strict_failed():
            raise CommandError(report.strict_failure())
