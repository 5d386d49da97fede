from django.core.management.base import BaseCommand, CommandError

from memoryproject import maintenance
from vault.models import Project, RunTrigger


class Command(BaseCommand):
    help = "Run compaction (expired checkpoints, long sessions, category caps) now."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
        parser.add_argument("--project", help="only this project (slug); default: every project")

    def handle(self, *args, **options):
        if options["project"]:
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"No project {options['project']!r}.")
            runs = [
                maintenance.compaction_run(
                    project=project, dry_run=options["dry_run"], trigger=RunTrigger.COMMAND
                )
            ]
        else:
            runs = maintenance.compaction_run_all(dry_run=options["dry_run"], trigger=RunTrigger.COMMAND)
        for run in runs:
            for line in maintenance.run_report_lines(run):
                self.stdout.write(line)
        failure = maintenance.runs_failure(runs)
        if failure:
            raise CommandError(failure)
