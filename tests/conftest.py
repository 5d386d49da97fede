"""Shared fixtures: three personas per the API contract (agent A's token, agent B's token, and an
admin token of another project), plus a project admin token and a small JSON API client."""

import json
import time
import types
from pathlib import Path

# numpy is imported here, before any test, not first by the embedding model in a query-embed thread
# while a test runs: pytest.approx looks numpy up in sys.modules and failed on the half-imported module
# ("partially initialized module 'numpy' has no attribute 'isscalar'") now and then.
import numpy  # noqa: F401
import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.factories import AgentFactory, CuratorFactory, EntryFactory, ProjectFactory, TokenFactory
from vault.models import TokenScope

ROOT = Path(__file__).resolve().parents[1]


class ApiClient:
    """Django's test client speaking JSON to /api/v1 with a bearer token."""

    def __init__(self, token: str | None = None):
        self.client = Client()
        self.token = token

    def _headers(self, token, headers=None):
        token = token if token is not None else self.token
        extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in (headers or {}).items()}
        return ({"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}) | extra

    def request(
        self,
        method: str,
        path: str,
        data=None,
        *,
        token=None,
        raw: str | bytes | None = None,
        headers: dict | None = None,
        **query,
    ):
        url = "/api/v1" + path
        headers = self._headers(token, headers)
        if method == "get":
            return self.client.get(url, data=query or None, **headers)
        body = raw if raw is not None else (json.dumps(data) if data is not None else "")
        if query:
            from urllib.parse import urlencode

            url += "?" + urlencode(query)
        return getattr(self.client, method)(url, data=body, content_type="application/json", **headers)

    def get(self, path, *, token=None, **query):
        return self.request("get", path, token=token, **query)

    def post(self, path, data=None, *, token=None, raw=None, **query):
        return self.request("post", path, data, token=token, raw=raw, **query)

    def put(self, path, data=None, *, token=None, raw=None, headers=None):
        return self.request("put", path, data, token=token, raw=raw, headers=headers)

    def patch(self, path, data=None, *, token=None, raw=None, headers=None):
        return self.request("patch", path, data, token=token, raw=raw, headers=headers)

    def delete(self, path, *, token=None, headers=None):
        return self.request("delete", path, token=token, headers=headers)


def conversation_closed(api, token: str, capture, text: str) -> int:
    """agent-a's user says `text`, then the session is closed (`sleep`) with the commit's callbacks run
    (`capture`: django_capture_on_commit_callbacks), as the extraction's queueing needs; its id."""
    api.post("/agents/agent-a/messages", {"messages": [{"role": "user", "text": text}]}, token=token)
    with capture(execute=True):
        closed = api.post("/agents/agent-a/sleep", {"session": "current"}, token=token)
    assert closed.status_code == 200, closed.content
    return closed.json()["session"]["id"]


def pytest_configure(config):
    """Transactional tests' databases emptied without re-running post_migrate (tests/database_flush.py);
    the product's bytecode written before any test starts a process (product_bytecode_write)."""
    from tests import database_flush

    database_flush.install()
    if not hasattr(config, "workerinput"):  # once, in the controlling process
        product_bytecode_write()


PRODUCT_PACKAGES = ("memoryproject", "vault", "search", "sessions_app", "benchmarks")


def product_bytecode_write() -> None:
    """Compile the product's modules to __pycache__ once. With PYTHONDONTWRITEBYTECODE set (as on the CI
    machine) Python reads bytecode but never writes it, so each of the hundreds of processes the suite
    starts (manage.py commands, servers, their workers and job clusters) compiled every module it
    imported again: 0.3-0.4 s of CPU a process for the API's modules alone. Stale files are recompiled
    (compileall compares the source's mtime and size, as the import system does)."""
    import compileall

    for package in PRODUCT_PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=2, workers=0)


@pytest.fixture(scope="session", autouse=True)
def background_connections_closed(django_db_setup):
    """Searches outside a transaction (transactional tests, the live server) run their semantic arm on
    the query-embed thread's own connection, which stays open as a web process's does: closed before
    the test database is dropped (this fixture's teardown runs before django_db_setup's)."""
    yield
    from search.semantic import background_connections_close

    background_connections_close()


@pytest.fixture(scope="session", autouse=True)
def passwords_hashed_fast():
    """Every test user's password is hashed with MD5, not Django's PBKDF2 at 1,000,000 rounds: one
    PBKDF2 hash costs 1.5-3 s of CPU on a slow 2-core machine, and some 300 curator-page tests each
    create one or two users. Production keeps Django's default hashers (settings.py sets none);
    tests/memoryproject/test_password_hashing.py checks that a curator's password is stored with them."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


TEMPLATES_REGISTRY = "data-dir-templates"


@pytest.fixture(scope="session")
def data_dir_templates(request, tmp_path_factory):
    """Initialised and migrated data folders to copy (tests/operations/running.py says why), shared by
    the run's pytest-xdist workers: the controller's temporary folder holds their paths."""
    from tests.operations.running import DataDirTemplates

    worker = hasattr(request.config, "workerinput")
    registry = tmp_path_factory.getbasetemp().parent / TEMPLATES_REGISTRY if worker else None
    templates = DataDirTemplates(registry)
    yield templates
    templates.remove()


def pytest_sessionfinish(session):
    """The controller of a pytest-xdist run removes the templates its workers made, once all have ended."""
    if not hasattr(session.config, "workerinput") and getattr(session.config.option, "numprocesses", None):
        from tests.operations.running import templates_remove

        templates_remove(session.config._tmp_path_factory.getbasetemp() / TEMPLATES_REGISTRY)


@pytest.fixture(autouse=True)
def query_embedding_not_paused():
    """A test whose embedder failed leaves searches lexical for a while (search.semantic's pause after
    a failed query embedding): not the next test's. The query-embed thread's tasks an earlier test
    left queued run first: on a loaded machine one of them failed after the next test had begun, and
    paused that test's semantic arm (no hits)."""
    from search import semantic

    semantic.background_submit(lambda: None).result(timeout=60)
    semantic._query_embed_paused_until = float("-inf")


@pytest.fixture
def project(db):
    return ProjectFactory(slug="acme", name="Acme", context="# Acme\nPayments platform.")


@pytest.fixture
def target(db):
    """An empty project to import into."""
    return ProjectFactory(slug="target", name="Target")


@pytest.fixture
def other_project(db):
    return ProjectFactory(slug="globex", name="Globex")


@pytest.fixture
def agent_a(project):
    return AgentFactory(project=project, slug="agent-a")


@pytest.fixture
def agent_b(project):
    return AgentFactory(project=project, slug="agent-b")


@pytest.fixture
def outsider_agent(other_project):
    return AgentFactory(project=other_project, slug="agent-a")


def _token(project, agent=None, scope=TokenScope.WRITE) -> str:
    return TokenFactory(project=project, agent=agent, scope=scope)


@pytest.fixture
def token_a(agent_a):
    return _token(agent_a.project, agent_a)


@pytest.fixture
def token_b(agent_b):
    return _token(agent_b.project, agent_b)


@pytest.fixture
def read_token_a(agent_a):
    return _token(agent_a.project, agent_a, TokenScope.READ)


@pytest.fixture
def admin_token(project):
    return _token(project, None, TokenScope.ADMIN)


@pytest.fixture
def outsider_token(other_project, outsider_agent):
    """Admin of another project, which happens to have an agent with the same slug as agent A."""
    return _token(other_project, None, TokenScope.ADMIN)


@pytest.fixture
def api():
    return ApiClient()


@pytest.fixture
def entry_a(agent_a):
    return EntryFactory(agent=agent_a, category="decisions", content="We decided to use PostgreSQL #database")


@pytest.fixture
def entry_b(agent_b):
    return EntryFactory(
        agent=agent_b, category="lessons", content="Cache keys need a version", created_by="t"
    )


# --- Personas for the curator pages: a curator of project A (acme), a curator of project B (globex),
# and a logged-in user who is no curator.


@pytest.fixture
def curator_a(project):
    return CuratorFactory(username="alice", project=project)


@pytest.fixture
def curator_b(other_project):
    return CuratorFactory(username="bob", project=other_project)


@pytest.fixture
def non_curator(db):
    return User.objects.create_user("nina", password="pw-nina")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def client_a(curator_a):
    return _client(curator_a)


@pytest.fixture
def client_b(curator_b, outsider_agent):
    return _client(curator_b)


@pytest.fixture
def client_nc(non_curator):
    return _client(non_curator)


HTMX = {"HTTP_HX_REQUEST": "true"}


def until_another_connection_waits_for_a_lock(seconds: float = 10) -> None:
    """Return once some connection to the test database waits for a lock (a row another transaction
    holds), or after `seconds`: how a race test knows the other side has reached the lock."""
    from django.db import connection

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            # pg_stat_activity is read once per transaction unless its snapshot is cleared.
            cursor.execute(
                "SELECT pg_stat_clear_snapshot(), count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            if cursor.fetchone()[1]:
                return
        time.sleep(0.02)


@pytest.fixture
def one_rate_window(monkeypatch):
    """django-ratelimit counts in fixed windows: requests that straddle the end of one start a new
    count, and a test counting up to a limit would then see 200 where it expects 429. Its clock
    stands still for the test."""
    import django_ratelimit.core

    now = time.time()
    monkeypatch.setattr(django_ratelimit.core, "time", types.SimpleNamespace(time=lambda: now))


def body_filled(body, value):
    """`body` with each "{value}" in it, at any depth, replaced by `value` (a test's bad input)."""
    if body == "{value}":
        return value
    if isinstance(body, dict):
        return {key: body_filled(item, value) for key, item in body.items()}
    if isinstance(body, list):
        return [body_filled(item, value) for item in body]
    return body
