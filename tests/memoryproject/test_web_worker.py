"""The web server `serve` starts parses HTTP with httptools and runs uvloop, never uvicorn's slow
pure-Python fallbacks (h11 and the standard asyncio loop), which cost 0.3-0.4 ms of CPU a request."""

import gc
import subprocess
import sys

import uvicorn
import uvloop
from django.conf import settings
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker

from memoryproject.management.commands.serve import Command
from memoryproject.web_worker import WebWorker


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_serve_runs_gunicorn_with_the_web_worker():
    command = Command._web_command({"host": "127.0.0.1", "port": 8123, "workers": 2})
    assert _option(command, "--worker-class") == "memoryproject.web_worker.WebWorker"
    assert _option(command, "--bind") == "127.0.0.1:8123"


def test_the_web_worker_loads_the_compiled_parser_and_loop():
    config = uvicorn.Config(app=lambda scope, receive, send: None, **WebWorker.CONFIG_KWARGS)
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    loop = config.get_loop_factory()()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_the_web_worker_freezes_the_loaded_application_before_serving(monkeypatch):
    """A full garbage collection walked every object Django and the MCP server made at start, holding
    the worker's threads 60-210 ms about once every few thousand requests: they are frozen first."""
    seen = {}
    monkeypatch.setattr(UvicornWorker, "run", lambda self: seen.setdefault("frozen", gc.get_freeze_count()))
    try:
        WebWorker.run(object.__new__(WebWorker))
    finally:
        gc.unfreeze()
    assert seen["frozen"] > 10_000  # this test process's objects: tens of thousands


def test_the_server_application_loads_the_url_patterns_before_its_first_request():
    """Loaded by the first request, they cost it 0.3 s and were left out of the worker's gc.freeze."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, memoryproject.asgi; print('memoryproject.urls' in sys.modules, 'vault.api' in sys.modules)",
        ],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert loaded.stdout.split() == ["True", "True"], loaded.stderr[-2000:]
