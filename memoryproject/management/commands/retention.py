from django.core.management.base import BaseCommand, CommandError

from memoryproject import maintenance
from vault.models import RunTrigger


class Command(BaseCommand):
    help = "Apply retention (archive expired, purge after the grace period) and size limits now."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")

    def handle(self, *args, **options):
        runs = maintenance.retention_run_all(dry_run=options["dry_run"], trigger=RunTrigger.COMMAND)
        for run in runs:
            for line in maintenance.run_report_lines(run):
                self.stdout.write(line)
        failure = maintenance.runs_failure(runs)
        if failure:
            raise CommandError(failure)
