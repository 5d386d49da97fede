from django.core.management.base import BaseCommand

from memoryproject.schedules import schedules_apply


class Command(BaseCommand):
    help = "Create or update the django-q2 schedules declared in each app's tasks.py (idempotent)."

    def handle(self, *args, **options):
        results = schedules_apply()
        for name, action in results:
            self.stdout.write(f"{action:9} {name}")
        self.stdout.write(self.style.SUCCESS(f"{len(results)} schedule(s) in place."))
