from django.core.management.base import BaseCommand, CommandError

from vault.models import Project
from vault.services import workspace_defaults_upgrade

LINES = {
    "upgraded": "{path} upgraded to the current default",
    "edited": "{path} edited (not a shipped default), left as it is",
}


class Command(BaseCommand):
    help = (
        "Give agents the current AGENTS.md where theirs is still, byte for byte, a default shipped "
        "before; files somebody edited are left alone and listed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="project slug: its agents only (default: every project)")
        parser.add_argument(
            "--dry-run", action="store_true", help="say what would be upgraded, change nothing"
        )

    def handle(self, *args, **options):
        project = None
        if options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project {options['project']!r}.")
        rows = workspace_defaults_upgrade(project=project, dry_run=options["dry_run"])
        for row in rows:
            line = LINES.get(row["state"])
            if line is None:
                continue
            if options["dry_run"] and row["state"] == "upgraded":
                line = "{path} would be upgraded to the current default"
            self.stdout.write(f"{row['project']}/{row['agent']}: " + line.format(path=row["path"]))
        count = {
            state: sum(row["state"] == state for row in rows) for state in ("upgraded", "current", "edited")
        }
        self.stdout.write(
            f"{count['upgraded']} {'to upgrade' if options['dry_run'] else 'upgraded'}, "
            f"{count['current']} already current, {count['edited']} edited (left as they are)"
        )
