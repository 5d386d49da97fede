"""Recall of `/search` on a public long-conversation benchmark (LoCoMo or REALTALK), over HTTP.

Creates a fresh project `bench-recall` (one agent per conversation), starts gunicorn on 127.0.0.1,
posts every session's turns through `POST /agents/{agent}/messages` with their dates (LoCoMo dates
sessions, REALTALK each message), asks every question of categories 1-4 through `GET /search?kinds=messages&agent=...&limit=10` and prints
R@5, R@10 and MRR overall and per category, beside a stemmed BM25 baseline (benchmarks/locomo.py)
computed on the same turns in the same run. The project is deleted afterwards unless --keep.

`--in-process` sends the same requests through Django's test client instead of a server (the
command's tests use it; no port is needed).
"""

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmarks.datasets import FORMATS, dataset_read
from benchmarks.load import BENCH_RATE_LIMIT, bench_env
from benchmarks.locomo import CATEGORIES, Bm25Baseline, Dataset, Scores
from vault import services as vault_services
from vault.models import Agent, Project, TokenScope

PROJECT_SLUG = "bench-recall"
LIMIT = 10


class HttpTransport:
    def __init__(self, port: int, token: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def __call__(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        self.conn.request(
            method, path, body=json.dumps(body) if body is not None else None, headers=self.headers
        )
        response = self.conn.getresponse()
        payload = response.read()
        return response.status, json.loads(payload or b"{}")


class ClientTransport:
    def __init__(self, token: str):
        from django.test import Client

        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def __call__(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        from django.test import override_settings

        # The rate limit a started server has (benchmarks/load.py).
        with override_settings(MEMORY_API_RATE_LIMIT=BENCH_RATE_LIMIT):
            if method == "GET":
                response = self.client.get(path)
            else:
                response = self.client.post(path, data=json.dumps(body), content_type="application/json")
        return response.status_code, response.json()


class Command(BaseCommand):
    help = "Recall of /search on a long-conversation benchmark (LoCoMo, REALTALK) beside a stemmed BM25."

    def add_arguments(self, parser):
        parser.add_argument(
            "--dataset",
            required=True,
            help="LoCoMo's locomo10.json, or a REALTALK chat file or folder of them (data/ of its repository).",
        )
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default="auto",
            help="The dataset's format (default: told by its shape).",
        )
        parser.add_argument(
            "--mode",
            default="",
            help="Comma-separated search modes to report (lexical, semantic, hybrid); default: the server's.",
        )
        parser.add_argument("--conversations", type=int, default=0, help="Only the first N conversations.")
        parser.add_argument("--port", type=int, default=0, help="Server port (default: a free one).")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers.")
        parser.add_argument("--in-process", action="store_true", help="Use Django's test client, no server.")
        parser.add_argument("--keep", action="store_true", help="Keep the benchmark project afterwards.")
        parser.add_argument(
            "--reuse", action="store_true", help="Reuse a kept project holding the same turns (no ingest)."
        )

    def handle(self, *args, **options):
        self._check_migrated()
        path = Path(options["dataset"])
        try:
            dataset = dataset_read(path, options["format"])
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        except (ValueError, KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
            raise CommandError(
                f"{path} is not a dataset in a known format ({options['format']}): {exc!r}"
            ) from exc
        if options["conversations"] > 0:
            dataset.conversations = dataset.conversations[: options["conversations"]]
        modes = [m.strip() for m in options["mode"].split(",") if m.strip()] or [""]
        reused = self._reusable(dataset) if options["reuse"] else None
        project, agents, token = reused or self._project(dataset)
        server = None
        try:
            if options["in_process"]:
                transport = ClientTransport(token)
            else:
                port = options["port"] or self._free_port()
                server = self._start_server(port, options["workers"])
                transport = HttpTransport(port, token)
            if reused:
                self.stdout.write(f"reusing project {PROJECT_SLUG} ({dataset.turns} turns)")
            else:
                started = time.perf_counter()
                self._ingest(dataset, agents, transport)
                self.stdout.write(f"ingested {dataset.turns} turns in {time.perf_counter() - started:.1f} s")
            # A reused project's embeddings may be stale too (another model, another embedded text).
            self._embeddings_current()
            results = {"bm25": self._baseline(dataset)}
            for mode in modes:
                results[mode or "search"] = self._ask(dataset, agents, transport, mode)
            self._report(dataset, results)
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
            if not (options["keep"] or options["reuse"]):
                project.delete()

    # --- setup ------------------------------------------------------------------------------------

    def _check_migrated(self) -> None:
        from django.db import DEFAULT_DB_ALIAS, connections
        from django.db.migrations.executor import MigrationExecutor

        try:
            executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        except Exception as exc:  # no database, or not reachable
            raise CommandError(
                f"cannot read the database's migrations ({exc}); run `manage.py migrate`"
            ) from exc
        if pending:
            raise CommandError(f"{len(pending)} migrations are not applied; run `manage.py migrate` first")

    def _project(self, dataset: Dataset) -> tuple[Project, dict[str, Agent], str]:
        Project.objects.filter(slug=PROJECT_SLUG).delete()
        project = Project.objects.create(slug=PROJECT_SLUG, name="Recall benchmark", context="# Recall bench")
        agents = {}
        for conv in dataset.conversations:
            agents[conv.sample_id] = Agent.objects.create(project=project, slug=self._slug(conv.sample_id))
        _, token = vault_services.token_create(project=project, scope=TokenScope.ADMIN, name="bench_recall")
        return project, agents, token

    def _reusable(self, dataset: Dataset) -> tuple[Project, dict[str, Agent], str] | None:
        from sessions_app.models import Message

        project = Project.objects.filter(slug=PROJECT_SLUG).first()
        if project is None or Message.objects.filter(project=project).count() != dataset.turns:
            return None
        agents = {}
        for conv in dataset.conversations:
            agent = Agent.objects.filter(project=project, slug=self._slug(conv.sample_id)).first()
            if agent is None:
                return None
            agents[conv.sample_id] = agent
        _, token = vault_services.token_create(project=project, scope=TokenScope.ADMIN, name="bench_recall")
        return project, agents, token

    @staticmethod
    def _slug(sample_id: str) -> str:
        return "conv-" + "".join(ch if ch.isalnum() else "-" for ch in sample_id.lower())[:58]

    def _embeddings_current(self) -> None:
        """Make the rows searchable as a running server would have them (embeddings are computed off
        the request path: run what is waiting)."""
        from django.core.management import get_commands

        if "embed_backfill" in get_commands():
            from django.core.management import call_command

            call_command("embed_backfill", stdout=self.stdout)

    def _free_port(self) -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def _start_server(self, port: int, workers: int) -> subprocess.Popen:
        gunicorn = Path(sys.executable).with_name("gunicorn")
        env = bench_env(DJANGO_SETTINGS_MODULE="memoryproject.settings")
        server = subprocess.Popen(
            [str(gunicorn), "memoryproject.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", str(workers)]
            + ["--log-level", "warning", "--timeout", "300"],
            cwd=settings.BASE_DIR,
            env=env,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/api/v1/healthz")
                if conn.getresponse().status == 200:
                    return server
            except OSError:
                time.sleep(0.3)
        server.terminate()
        raise CommandError("the benchmark server did not start within 60 s")

    # --- the run ----------------------------------------------------------------------------------

    def _ingest(self, dataset: Dataset, agents: dict[str, Agent], transport) -> None:
        for conv in dataset.conversations:
            agent = agents[conv.sample_id]
            first = conv.speakers[0].casefold()
            for number, turns in conv.sessions().items():
                body = {
                    "session": f"{conv.sample_id}-session-{number}",
                    "messages": [
                        {
                            "id": turn.dia_id,
                            "role": "user" if turn.speaker.casefold() == first else "assistant",
                            "text": turn.document,
                            "timestamp": turn.when.isoformat(),
                        }
                        for turn in turns
                    ],
                }
                status, payload = transport("POST", f"/api/v1/agents/{agent.slug}/messages", body)
                if status != 200:
                    raise CommandError(f"ingest of {conv.sample_id} session {number} -> {status}: {payload}")

    def _baseline(self, dataset: Dataset) -> Scores:
        scores = Scores()
        for conv in dataset.conversations:
            bm25 = Bm25Baseline(conv.turns)
            for question in conv.questions:
                scores.add(question.category, bm25.rank(question.text, LIMIT), question.evidence)
        return scores

    def _ask(self, dataset: Dataset, agents: dict[str, Agent], transport, mode: str) -> Scores:
        from sessions_app.models import Message

        scores = Scores()
        for conv in dataset.conversations:
            agent = agents[conv.sample_id]
            dia_of = dict(Message.objects.filter(agent=agent).values_list("id", "client_id"))
            for question in conv.questions:
                params = {"q": question.text[:1000], "agent": agent.slug, "kinds": "messages", "limit": LIMIT}
                if mode:
                    params["mode"] = mode
                status, payload = transport("GET", "/api/v1/search?" + urlencode(params))
                if status != 200:
                    raise CommandError(f"search {question.text!r} -> {status}: {payload}")
                ranked = [dia_of.get(r["id"], "") for r in payload["results"] if r.get("kind") == "message"]
                scores.add(question.category, ranked, question.evidence)
        return scores

    def _report(self, dataset: Dataset, results: dict[str, Scores]) -> None:
        self.stdout.write(
            f"{len(dataset.conversations)} conversations, {dataset.turns} turns, {dataset.questions} questions"
            f" (categories 1-4); evidence ids repaired: {dataset.evidence_fixed}, dropped:"
            f" {dataset.evidence_dropped} {dataset.dropped_examples}, questions left without evidence:"
            f" {dataset.questions_dropped}"
        )
        self.stdout.write(f"{'method':<10}{'category':<14}{'n':>6}{'R@5':>8}{'R@10':>8}{'MRR':>8}")
        for name, scores in results.items():
            for key in ("all", *CATEGORIES):
                n, r5, r10, mrr = scores.row(key)
                if not n:
                    continue
                label = "all" if key == "all" else f"{key} {CATEGORIES[key]}"
                self.stdout.write(f"{name:<10}{label:<14}{n:>6}{r5:>8.3f}{r10:>8.3f}{mrr:>8.3f}")
