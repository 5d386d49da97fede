from django.core.management.base import BaseCommand

from memoryproject import maintenance
from vault.models import RunTrigger


class Command(BaseCommand):
    help = "Apply retention (archive expired, purge after the grace period) and size limits now."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")

    def handle(self, *args, **options):
        for run in maintenance.retention_run_all(dry_run=options["dry_run"], trigger=RunTrigger.COMMAND):
            counts = ", ".join(f"{key}={value}" for key, value in run.counts.items() if value)
            prefix = "[dry run] " if run.dry_run else ""
            self.stdout.write(
                f"{prefix}{run.project.slug}: {counts or 'nothing to do'} ({run.duration_ms} ms)"
            )
            for change in run.changes:
                self.stdout.write(
                    f"  {change['step']} {change['action']} {change['target']}: {change['reason']}"
                )
