"""A live server for the streamable-HTTP transport (memoryproject.asgi in a uvicorn thread), helpers to
open SDK client sessions over HTTP and over a spawned stdio process, and the MCP personas."""

import contextlib
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import anyio
import httpx2
import pytest
import uvicorn
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from vault import services
from vault.models import ProjectMembership, TokenScope

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def mcp_live_url(django_db_setup, django_db_blocker):
    """http://127.0.0.1:PORT: memoryproject.asgi (Django + /mcp) served by uvicorn in a thread."""
    from memoryproject.asgi import application

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    with django_db_blocker.unblock():
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
        server.should_exit = True
        thread.join(timeout=10)
        # The server's worker threads kept their database connections; end them so that the test
        # database can be dropped.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        # And this one: the teardown may run on another thread than the one that drops the test
        # database (its connection stayed open and the drop failed with "being accessed by other users").
        connection.close()


def run(fn, *args):
    """Run an async test body (the SDK client is async) from a sync, transactional_db test.

    On a thread of its own: the browser tests' Playwright keeps an event loop running on the main one.
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, fn, *args).result()


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def database_url() -> str:
    """A DATABASE_URL for the test database, for a spawned `manage.py mcp`."""
    s = connection.settings_dict
    host = quote(s.get("HOST") or "", safe="")
    port = f":{s['PORT']}" if s.get("PORT") else ""
    auth = quote(s.get("USER") or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    url = f"postgres://{auth}@{host}{port}/{quote(s['NAME'], safe='')}"
    socket_dir = (s.get("OPTIONS") or {}).get("host")  # the embedded server listens on a socket
    return url + (f"?host={quote(socket_dir, safe='/')}" if socket_dir else "")


def stdio_env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_TOKEN"}
    env.update(DATABASE_URL=database_url(), PYTHONUNBUFFERED="1", **extra)
    return env


def stdio_params(*args: str, **env) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", *args], env=stdio_env(**env), cwd=str(ROOT)
    )


@contextlib.asynccontextmanager
async def stdio_session(*args: str, **env):
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(stdio_params(*args, **env), errlog=errlog) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            yield session


def text(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def mcp_project(transactional_db):
    return services.project_create(slug="acme", name="Acme", context="# Acme\nPayments platform, EU only.")


@pytest.fixture
def dev(mcp_project):
    return services.agent_ensure(project=mcp_project, slug="dev")


@pytest.fixture
def ops(mcp_project):
    return services.agent_ensure(project=mcp_project, slug="ops")


@pytest.fixture
def dev_token(dev):
    return services.token_create(project=dev.project, agent=dev, scope=TokenScope.WRITE)[1]


@pytest.fixture
def dev_read_token(dev):
    return services.token_create(project=dev.project, agent=dev, scope=TokenScope.READ)[1]


@pytest.fixture
def project_admin_token(mcp_project):
    return services.token_create(project=mcp_project, agent=None, scope=TokenScope.ADMIN)[1]


@pytest.fixture
def ops_entry(ops):
    return services.entry_create(
        agent=ops,
        category="decisions",
        content="Ops rotates the database credentials monthly.",
        created_by="t",
    )


@pytest.fixture
def curator(mcp_project):
    """A logged-in curator of the project."""
    user = User.objects.create_user("carla", password="pw-carla")
    user.groups.add(Group.objects.get_or_create(name="curator")[0])
    ProjectMembership.objects.create(user=user, project=mcp_project)
    client = Client()
    client.force_login(user)
    return client
