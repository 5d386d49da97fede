from django.core.management.base import BaseCommand

from memoryproject import maintenance
from vault.models import RunTrigger


class Command(BaseCommand):
    help = "Apply retention (archive expired, purge after the grace period) and size limits now."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")

    def handle(self, *args, **options):
        for run in maintenance.retention_run_all(dry_run=options["dry_run"], trigger=RunTrigger.COMMAND):
            for line in maintenance.run_report_lines(run):
                self.stdout.write(line)
