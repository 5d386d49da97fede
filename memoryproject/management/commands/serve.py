"""Run the whole server: migrations, schedules, a gunicorn web server and the django-q2 cluster."""

import contextlib
import difflib
import io
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection

from memoryproject import embedded_db, serve_state
from memoryproject.env import env_int
from memoryproject.unmigrated import unreachable_line
from search.semantic import semantic_status
from vault.services import project_ensure_default

# How long the web server and the job cluster get to finish what they are doing when asked to stop,
# before they are killed.
STOP_GRACE_SECONDS = 5
# A job cluster that exits by itself (e.g. while the database was down) is started again, at most
# this often.
RESTART_INTERVAL_SECONDS = 5


# serve's numeric options: (option, environment variable giving its default, default, minimum, maximum).
NUMBERS = [
    ("port", "PORT", serve_state.DEFAULT_PORT, serve_state.PORT_MIN, serve_state.PORT_MAX),
    ("workers", "WEB_WORKERS", 2, 1, 128),
    ("threads", "WEB_THREADS", 4, 1, 1024),
]


def _number(value: int | None, option: str, variable: str, default: int, minimum: int, maximum: int) -> int:
    """The option's value, else its variable's, else the default; a CommandError naming whichever is out
    of range (a port of 99999 reached gunicorn, 0 workers started a server that never answered)."""
    if value is None:
        try:
            return env_int(variable, default, minimum=minimum, maximum=maximum)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
    if not minimum <= value <= maximum:
        raise CommandError(f"--{option} must be between {minimum} and {maximum}, got {value}")
    return value


def _database_check() -> None:
    """A database that cannot be reached stops `serve` with one line naming DATABASE_URL (psycopg's own
    first line says why; it names no password), not migrate's traceback."""
    try:
        connection.ensure_connection()
    except DatabaseError as exc:
        raise CommandError(unreachable_line(exc)) from None


def _broker_check() -> None:
    """The job cluster cannot run without its broker: with REDIS_URL set, a Redis that cannot be reached
    stops `serve` with one line, where the cluster printed a traceback every few seconds and ran no job.
    (The web processes need no broker: `serve --no-cluster` starts, and answers while Redis is down.)"""
    try:
        with redis.Redis.from_url(settings.Q_CLUSTER["redis"]) as client:
            client.ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        raise CommandError(
            f"REDIS_URL: the job broker cannot be reached ({exc}); start Redis, or unset REDIS_URL to keep "
            "the jobs in PostgreSQL"
        ) from None


def _die_with_parent() -> None:
    """Run in a child before exec: it gets SIGTERM if `serve` itself is killed (Linux only)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _option_hint(parser, message: str) -> str:
    """ " (did you mean --port?)" for the first option argparse refused as unrecognized that is close to
    one of the command's (a typo: `--prot`), else nothing."""
    if not message.startswith("unrecognized arguments:"):
        return ""
    known = [option for option in parser._option_string_actions if option.startswith("--")]
    for word in message.removeprefix("unrecognized arguments:").split():
        close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1) if word.startswith("-") else []
        if close:
            return f" (did you mean {close[0]}?)"
    return ""


class Command(BaseCommand):
    help = "Migrate, then run the web server (gunicorn) and the background job cluster (django-q2) together."

    def create_parser(self, prog_name, subcommand, **kwargs):
        """The parser, whose refusal of an unknown option (printed with the usage, exit status 2) names
        the option meant when it is a typo of one: `bin/serve --prot 8001` said only "unrecognized
        arguments"."""
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        refuse = parser.error
        parser.error = lambda message: refuse(message + _option_hint(parser, message))
        return parser

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        for option, variable, default, minimum, maximum in NUMBERS:
            parser.add_argument(
                f"--{option}",
                type=int,
                help=f"{minimum}-{maximum} (default: {variable} from the environment, else {default})",
            )
        parser.add_argument("--no-cluster", action="store_true", help="do not start the django-q2 cluster")

    def handle(self, *args, **options):
        # Checked here, before anything starts, not in add_arguments: `help serve` must work whatever
        # the environment holds.
        for option, variable, default, minimum, maximum in NUMBERS:
            options[option] = _number(options[option], option, variable, default, minimum, maximum)
        data_dir: Path = settings.MEMORY_DATA_DIR
        message = serve_state.already_running_message(data_dir, options["host"], options["port"])
        message = message or serve_state.host_unusable_message(options["host"], options["port"])
        if message:
            raise CommandError(message)
        _database_check()
        if settings.REDIS_URL and not options["no_cluster"]:
            _broker_check()
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database migrated.")
        call_command("setup_schedules", verbosity=0, stdout=io.StringIO())
        embeddings = semantic_status(with_pending=False)
        if not embeddings["enabled"] and embeddings["backend"] != "off":
            self.stderr.write(self.style.WARNING(f"Warning: {embeddings['detail']}."))
        self._first_run_help()
        hosts_warning = serve_state.allowed_hosts_warning(options["host"], list(settings.ALLOWED_HOSTS))
        if hosts_warning:
            self.stderr.write(self.style.WARNING(f"Warning: {hosts_warning}."))

        url = serve_state.display_url(options["host"], options["port"])
        os.environ["WEB_THREADS"] = str(options["threads"])  # read by memoryproject/asgi.py in each worker
        commands = {"web": self._web_command(options)}
        if not options["no_cluster"]:
            commands["jobs"] = [sys.executable, str(settings.BASE_DIR / "manage.py"), "qcluster"]
        children = {name: self._start(command) for name, command in commands.items()}
        serve_state.write_record(data_dir, url)
        self.stdout.write(self.style.SUCCESS(f"Memory server running at {url}"))
        self.stdout.write(f"  API docs: {url}api/v1/docs   admin: {url}admin/   health: {url}healthz")
        self.stdout.write(f"  MCP (streamable HTTP): {url}mcp")
        self.stdout.write("  Ctrl-C stops it.")
        self.stdout.flush()
        try:
            code = self._supervise(commands, children)
        finally:
            stopped = self._stop_all(children)
            serve_state.remove_record(data_dir)
        self.stdout.write(f"Stopped {stopped}.")
        self.stdout.flush()
        sys.exit(code)

    @staticmethod
    def _web_command(options) -> list[str]:
        bind = f"{options['host']}:{options['port']}"
        return [
            # ASGI (uvicorn workers, memoryproject/web_worker.py) so /mcp is served by the MCP SDK;
            # Django runs in each worker's thread pool of WEB_THREADS threads (memoryproject/asgi.py).
            sys.executable, "-m", "gunicorn", "memoryproject.asgi:application",
            "--bind", bind,
            "--workers", str(options["workers"]),
            "--worker-class", "memoryproject.web_worker.WebWorker",
            "--access-logfile", "-",
            "--log-level", "warning",
            "--graceful-timeout", str(STOP_GRACE_SECONDS - 1),
            "--no-control-socket",
            "--chdir", str(settings.BASE_DIR),
        ]  # fmt: skip

    @staticmethod
    def _start(command: list[str]) -> subprocess.Popen:
        # Its own process group: Ctrl-C in the terminal reaches `serve` only, which then stops the
        # children in order (web and jobs first, the database last) instead of all at once.
        return subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent)

    def _supervise(self, commands: dict[str, list[str]], children: dict[str, subprocess.Popen]) -> int:
        stopping = {"signal": None}

        def on_signal(signum, frame):
            stopping["signal"] = signum

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        last_start = {name: time.monotonic() for name in children}
        while stopping["signal"] is None:
            if settings.EMBEDDED_DATABASE and not embedded_db.embedded_database_running(
                settings.MEMORY_DATA_DIR
            ):
                self._restart_database()
            for name, child in children.items():
                if child.poll() is None:
                    continue
                if name == "web":
                    self.stderr.write(f"The web server exited with code {child.returncode}; stopping.")
                    return child.returncode or 1
                if time.monotonic() - last_start[name] >= RESTART_INTERVAL_SECONDS:
                    self.stderr.write(
                        f"The {name} process exited with code {child.returncode}; restarting it."
                    )
                    children[name] = self._start(commands[name])
                    last_start[name] = time.monotonic()
            time.sleep(0.3)
        return 0

    def _restart_database(self) -> None:
        self.stderr.write("The embedded database stopped unexpectedly; restarting it.")
        started = time.monotonic()
        try:
            embedded_db.embedded_database_restart(settings.MEMORY_DATA_DIR)
        except Exception as exc:  # reported; the loop tries again
            self.stderr.write(f"The embedded database could not be restarted ({exc}); trying again.")
            time.sleep(1)
            return
        self.stderr.write(f"The embedded database is back ({time.monotonic() - started:.1f} s).")

    def _stop_all(self, children: dict[str, subprocess.Popen]) -> str:
        """Stop the web server and the job cluster (SIGTERM, then SIGKILL to what is left of their
        process groups after the grace period), then the embedded database if this process started it; describe what stopped."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        started = time.monotonic()
        for child in children.values():
            # The leader only: gunicorn's master and django-q2's cluster stop their own processes
            # (django-q2's hangs if its workers get the signal too).
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGTERM)
        deadline = started + STOP_GRACE_SECONDS
        for child in children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._signal_group(child, signal.SIGKILL)
                child.wait()
            self._signal_group(child, signal.SIGKILL)  # anything the child left behind in its group
        names = {"web": "the web server", "jobs": "the job cluster"}
        stopped = [names[name] for name in children]
        if settings.EMBEDDED_DATABASE and embedded_db.started_here:
            embedded_db.embedded_database_stop(settings.MEMORY_DATA_DIR)
            stopped.append("the embedded database")
        listed = stopped[0] if len(stopped) == 1 else ", ".join(stopped[:-1]) + " and " + stopped[-1]
        return f"{listed} in {time.monotonic() - started:.1f} s"

    @staticmethod
    def _signal_group(child: subprocess.Popen, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signum)

    def _first_run_help(self) -> None:
        project, created = project_ensure_default()
        if created:
            self.stdout.write(f"Created the project '{project.slug}'.")
        if not get_user_model().objects.filter(is_superuser=True).exists():
            manage = self._manage_command()
            self.stdout.write(
                f"To log in to the admin, create a user:  {manage} createsuperuser\n"
                f"To get an API token:  {manage} token_create --project default --scope admin"
            )

    @staticmethod
    def _manage_command() -> str:
        """`bin/manage` as the user can type it from where they are (it uses the project's .venv)."""
        script = settings.BASE_DIR / "bin" / "manage"
        try:
            relative = os.path.relpath(script)
        except ValueError:
            relative = str(script)
        if not relative.startswith(".."):
            return shlex.quote(relative if "/" in relative else f"./{relative}")
        return shlex.quote(str(script))
