"""Run the whole server: migrations, schedules, a gunicorn web server and the django-q2 cluster."""

import io
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from memoryproject import embedded_db
from search.semantic import semantic_status
from vault.services import project_ensure_default


class Command(BaseCommand):
    help = "Migrate, then run the web server (gunicorn) and the background job cluster (django-q2) together."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_WORKERS", "2")))
        parser.add_argument("--threads", type=int, default=int(os.environ.get("WEB_THREADS", "4")))
        parser.add_argument("--no-cluster", action="store_true", help="do not start the django-q2 cluster")

    def handle(self, *args, **options):
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database migrated.")
        call_command("setup_schedules", verbosity=0, stdout=io.StringIO())
        embeddings = semantic_status(with_pending=False)
        if not embeddings["enabled"] and embeddings["backend"] != "off":
            self.stderr.write(self.style.WARNING(f"Warning: {embeddings['detail']}."))
        self._first_run_help()

        base = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        bind = f"{options['host']}:{options['port']}"
        children = {
            "web": subprocess.Popen(
                [
                    sys.executable, "-m", "gunicorn", "memoryproject.wsgi:application",
                    "--bind", bind,
                    "--workers", str(options["workers"]),
                    "--threads", str(options["threads"]),
                    "--worker-class", "gthread",
                    "--access-logfile", "-",
                    "--graceful-timeout", "10",
                    "--no-control-socket",
                    "--chdir", str(settings.BASE_DIR),
                ]
            ),
        }  # fmt: skip
        if not options["no_cluster"]:
            children["jobs"] = subprocess.Popen([*base, "qcluster"])
        host = options["host"] if options["host"] not in ("0.0.0.0", "::") else "127.0.0.1"
        url = f"http://{host}:{options['port']}/"
        self.stdout.write(self.style.SUCCESS(f"Memory server running at {url}"))
        self.stdout.write(f"  API docs: {url}api/v1/docs   admin: {url}admin/   health: {url}healthz")
        self.stdout.flush()
        code = self._supervise(children)
        if settings.EMBEDDED_DATABASE and embedded_db.started_here:
            embedded_db.embedded_database_stop(settings.MEMORY_DATA_DIR)
            self.stdout.write("Embedded database stopped.")
        sys.exit(code)

    def _supervise(self, children: dict[str, subprocess.Popen]) -> int:
        stopping = {"flag": False}

        def on_signal(signum, frame):
            stopping["flag"] = True

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        code = 0
        while not stopping["flag"]:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(f"The {name} process exited with code {child.returncode}; stopping.")
                    code = child.returncode or 1
                    stopping["flag"] = True
            time.sleep(0.3)
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for child in children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        return code

    def _first_run_help(self) -> None:
        project, created = project_ensure_default()
        if created:
            self.stdout.write(f"Created the project '{project.slug}'.")
        if not get_user_model().objects.filter(is_superuser=True).exists():
            self.stdout.write(
                "To log in to the admin, create a user:  python manage.py createsuperuser\n"
                "To get an API token:  python manage.py token_create --project default --scope admin"
            )
