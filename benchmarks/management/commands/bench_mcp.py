"""What MCP adds over REST: memory_search and memory_context over streamable HTTP beside the same calls over
REST, against one server, in one run.

Loads N synthetic entries (benchmarks/corpus.py) into a benchmark project (kept and reused when it already
holds N entries), starts the web server the way `serve` does (gunicorn, one worker) on --port, and times
each query over REST (httpx) and over MCP (the SDK's ClientSession on the streamable-HTTP client),
alternating which goes first. Latency is measured at the client, request to parsed reply.
"""

import logging
import socket
import statistics
import subprocess
import sys
import time

import anyio
import httpx2
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from benchmarks.corpus import corpus_generate, corpus_queries
from benchmarks.load import bench_env
from vault import services, trust
from vault.models import Agent, Project, TokenScope, VaultEntry


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100)[p - 1]


class Command(BaseCommand):
    help = "Benchmark MCP (streamable HTTP) against REST for memory_search and memory_context at N entries."

    def add_arguments(self, parser):
        parser.add_argument("--entries", type=int, default=100_000)
        parser.add_argument("--queries", type=int, default=200)
        parser.add_argument(
            "--writes", type=int, default=0, help="also time N saves (REST POST vs memory_save)"
        )
        parser.add_argument("--project", default="bench-mcp")
        parser.add_argument("--port", type=int, default=8140)
        parser.add_argument(
            "--server",
            choices=["asgi", "wsgi"],
            default="asgi",
            help="asgi: serve's server (uvicorn worker, /mcp); wsgi: the former gthread server (REST only)",
        )
        parser.add_argument("--rest-only", action="store_true", help="time the REST calls only")
        parser.add_argument("--workers", type=int, default=1, help="web worker processes")
        parser.add_argument(
            "--concurrency",
            type=int,
            default=0,
            help="also measure REST throughput: this many clients searching and saving at once",
        )

    def handle(self, *args, **options):
        logging.getLogger("httpx2").setLevel(logging.WARNING)
        if options["server"] == "wsgi" and not options["rest_only"]:
            raise CommandError("The WSGI server has no /mcp: add --rest-only.")
        project, agent = self._load(options["project"], options["entries"])
        _, secret = services.token_create(
            project=project, agent=agent, scope=TokenScope.WRITE, name="bench-mcp"
        )
        queries = corpus_queries(options["queries"], seed=3)
        server = self._start(options["server"], options["port"], options["workers"])
        try:
            base = f"http://127.0.0.1:{options['port']}"
            timings = anyio.run(self._measure, base, secret, agent.slug, queries, options)
        finally:
            server.terminate()
            server.wait(timeout=30)
        self.stdout.write(
            f"{len(queries)} queries at {options['entries']:,} entries, server {options['server']} "
            f"({options['workers']} worker(s)), agent {agent.slug}"
        )
        for name, values in timings.items():
            self.stdout.write(f"  {name:28} p50 {pct(values, 50):7.2f} ms  p95 {pct(values, 95):7.2f} ms")
        if not options["rest_only"]:
            for tool, rest in (
                ("memory_search", "REST GET /search"),
                ("memory_context", "REST POST context"),
            ):
                added = pct(timings[f"MCP {tool}"], 50) - pct(timings[rest], 50)
                paired = statistics.median(
                    m - r for m, r in zip(timings[f"MCP {tool}"], timings[rest], strict=True)
                )
                self.stdout.write(
                    f"  MCP adds to {tool:15} p50 {added:+7.2f} ms  (median of per-query differences "
                    f"{paired:+.2f} ms)"
                )

    def _load(self, slug: str, n: int) -> tuple[Project, Agent]:
        project = Project.objects.filter(slug=slug).first()
        if project is not None:  # what earlier runs' --writes added
            VaultEntry.objects.filter(project=project, content__contains="(bench write ").delete()
        if project is not None and VaultEntry.objects.filter(project=project).count() == n:
            self.stdout.write(f"reusing {n:,} entries in project {slug!r}")
        else:
            if project is not None:
                project.delete()
            project = services.project_create(slug=slug, name="MCP benchmark")
            started = time.perf_counter()
            agents, batch = {}, []
            for item in corpus_generate(n, agents=50, seed=7):
                agent = agents.get(item["agent"])
                if agent is None:
                    agent = agents[item["agent"]] = Agent.objects.create(project=project, slug=item["agent"])
                now = timezone.now()
                batch.append(
                    VaultEntry(
                        project=project,
                        agent=agent,
                        category=item["category"],
                        content=item["content"],
                        content_hash=trust.content_hash(item["content"]),
                        tags=item["tags"],
                        importance=item["importance"],
                        created_at=now,
                        updated_at=now,
                    )
                )
                if len(batch) == 5000:
                    VaultEntry.objects.bulk_create(batch)
                    batch.clear()
            if batch:
                VaultEntry.objects.bulk_create(batch)
            self.stdout.write(f"loaded {n:,} entries in {time.perf_counter() - started:.1f} s")
        # The busiest agent: its searches and contexts have the most to rank.
        agent = max(Agent.objects.filter(project=project), key=lambda a: a.entries.count())
        return project, agent

    def _start(self, kind: str, port: int, workers: int) -> subprocess.Popen:
        app, worker = (
            ("memoryproject.asgi:application", "memoryproject.web_worker.WebWorker")
            if kind == "asgi"
            else ("memoryproject.wsgi:application", "gthread")
        )
        command = [
            sys.executable, "-m", "gunicorn", app,
            "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers),
            "--threads", "4",
            "--worker-class", worker,
            "--no-control-socket",
            "--log-level", "warning",
            "--chdir", str(settings.BASE_DIR),
        ]  # fmt: skip
        env = bench_env(WEB_THREADS="4")
        process = subprocess.Popen(command, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise CommandError(f"the server exited with {process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    pass
                if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200:
                    return process
            except (OSError, httpx2.HTTPError):
                time.sleep(0.3)
        process.terminate()
        raise CommandError("the server did not start in time")

    async def _measure(self, base: str, secret: str, agent: str, queries: list[str], options) -> dict:
        headers = {"Authorization": f"Bearer {secret}"}
        timings: dict[str, list[float]] = {
            "REST GET /search": [],
            "REST POST context": [],
        }
        if not options["rest_only"]:
            timings.update({"MCP memory_search": [], "MCP memory_context": []})
        async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=60) as rest:

            async def rest_search(q):
                response = await rest.get("/api/v1/search", params={"q": q, "limit": 10})
                response.raise_for_status()
                return response.json()

            async def rest_context(q):
                response = await rest.post(f"/api/v1/agents/{agent}/context", json={"command": q})
                response.raise_for_status()
                return response.json()

            async def timed(name, fn, *a):
                t0 = time.perf_counter()
                await fn(*a)
                timings[name].append((time.perf_counter() - t0) * 1000)

            if options["rest_only"]:
                for q in queries[:5]:  # warm up
                    await rest_search(q)
                for q in queries:
                    await timed("REST GET /search", rest_search, q)
                    await timed("REST POST context", rest_context, q)
                await self._writes(options["writes"], timings, timed, rest, agent, None)
                if options["concurrency"]:
                    await self._throughput(options["concurrency"], queries, rest_search, rest, agent)
                return timings

            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as mcp_http,
                streamable_http_client(f"{base}/mcp", http_client=mcp_http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()

                async def mcp_call(tool, arguments):
                    result = await session.call_tool(tool, arguments)
                    if result.is_error:
                        raise CommandError(f"{tool} failed: {result.content[0].text}")
                    return result

                async def mcp_search(q):
                    return await mcp_call("memory_search", {"query": q, "limit": 10})

                async def mcp_context(q):
                    return await mcp_call("memory_context", {"task": q})

                for q in queries[:5]:  # warm up both paths
                    await rest_search(q)
                    await mcp_search(q)
                for i, q in enumerate(queries):
                    pairs = [
                        ("REST GET /search", rest_search),
                        ("MCP memory_search", mcp_search),
                        ("REST POST context", rest_context),
                        ("MCP memory_context", mcp_context),
                    ]
                    if i % 2:  # alternate which transport goes first
                        pairs = [pairs[1], pairs[0], pairs[3], pairs[2]]
                    for name, fn in pairs:
                        await timed(name, fn, q)
                await self._writes(options["writes"], timings, timed, rest, agent, mcp_call)
        return timings

    async def _throughput(self, clients: int, queries: list[str], rest_search, rest, agent: str) -> None:
        """Requests per second with `clients` concurrent clients: searches, then saves."""
        for label in ("GET /search", "POST entries"):
            pending = list(enumerate(queries))

            async def client(label=label, pending=pending):
                while pending:
                    i, q = pending.pop()
                    if label == "GET /search":
                        await rest_search(q)
                    else:
                        body = {"category": "lessons", "content": f"{q} (bench write throughput {i})"}
                        (await rest.post(f"/api/v1/agents/{agent}/entries", json=body)).raise_for_status()

            t0 = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(clients):
                    group.start_soon(client)
            rate = len(queries) / (time.perf_counter() - t0)
            self.stdout.write(f"  REST {label:23} {rate:7.1f} requests/s with {clients} concurrent clients")

    async def _writes(self, writes, timings, timed, rest, agent, mcp_call) -> None:
        if not writes:
            return
        timings["REST POST entries"] = []
        if mcp_call is not None:
            timings["MCP memory_save"] = []
        for i, item in enumerate(corpus_generate(writes, agents=50, seed=1234)):
            body = {"category": item["category"], "content": f"{item['content']} (bench write {i})"}

            async def rest_save(b=body):
                (await rest.post(f"/api/v1/agents/{agent}/entries", json=b)).raise_for_status()

            await timed("REST POST entries", rest_save)
            if mcp_call is not None:

                async def mcp_save(b=body):
                    await mcp_call("memory_save", {**b, "content": b["content"] + " via mcp"})

                await timed("MCP memory_save", mcp_save)
