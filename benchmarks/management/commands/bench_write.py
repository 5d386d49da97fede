"""Measure what duplicate, conflict and poisoning checks add to the write path.

Loads N synthetic entries (benchmarks/corpus.py) into a throwaway project, then times
entry_create with every check against a bare INSERT of the same rows, and prints percentiles.

With --clients N: write throughput over HTTP instead (benchmarks/load.py) against the production
server (`manage.py serve`, started here unless --port names a running one): N concurrent clients
create entries, then append batches of messages; every acknowledged write is checked in the database.
"""

import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from benchmarks.corpus import corpus_generate
from benchmarks.migrated import ensure_migrated
from vault import services, trust
from vault.models import Agent, Project, VaultEntry


class Command(BaseCommand):
    help = "Benchmark the write path (duplicate/conflict/poisoning checks) at N existing entries."

    def add_arguments(self, parser):
        parser.add_argument("--entries", type=int, default=100_000)
        parser.add_argument("--writes", type=int, default=300)
        parser.add_argument("--project", default="bench-write")
        parser.add_argument("--keep", action="store_true", help="keep the benchmark project afterwards")
        parser.add_argument(
            "--clients", type=int, default=0, help="HTTP load with this many concurrent clients"
        )
        parser.add_argument("--batches", type=int, default=20, help="--clients: message batches per client")
        parser.add_argument("--batch-size", type=int, default=50, help="--clients: messages per batch")
        parser.add_argument("--port", type=int, default=0, help="--clients: a running server's port")
        parser.add_argument(
            "--waits",
            action="store_true",
            help="--clients: also sample what the database's sessions wait on (its queries add some CPU)",
        )

    def handle(self, *args, **options):
        ensure_migrated(self)
        if options["clients"]:
            return self._http_load(options)
        n, writes = options["entries"], options["writes"]
        Project.objects.filter(slug=options["project"]).delete()
        project = services.project_create(slug=options["project"], name="write benchmark")
        agents = {}

        def agent_of(item: dict) -> Agent:
            # Made on first use: a small corpus does not name every agent the probes write for.
            if item["agent"] not in agents:
                agents[item["agent"]] = Agent.objects.create(project=project, slug=item["agent"])
            return agents[item["agent"]]

        started = time.perf_counter()
        batch = []
        for item in corpus_generate(n, agents=50, seed=7):
            agent = agent_of(item)
            batch.append(
                VaultEntry(
                    project=project,
                    agent=agent,
                    category=item["category"],
                    content=item["content"],
                    content_hash=trust.content_hash(item["content"]),
                    tags=item["tags"],
                    importance=item["importance"],
                    created_at=timezone.now(),
                    updated_at=timezone.now(),
                )
            )
            if len(batch) == 5000:
                VaultEntry.objects.bulk_create(batch)
                batch.clear()
                self.stdout.write(
                    f"\rloaded {VaultEntry.objects.filter(project=project).count():,}", ending=""
                )
        if batch:
            VaultEntry.objects.bulk_create(batch)
        self.stdout.write(f"\rloaded {n:,} entries in {time.perf_counter() - started:.1f} s")

        probes = list(corpus_generate(writes, agents=50, seed=99))
        checked, bare = [], []
        for item in probes:
            agent = agent_of(item)
            t0 = time.perf_counter()
            services.entry_create(
                agent=agent, category=item["category"], content=item["content"], tags=item["tags"]
            )
            checked.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            with transaction.atomic():
                VaultEntry.objects.create(
                    project=project,
                    agent=agent,
                    category=item["category"],
                    content=item["content"] + " (bare)",
                    tags=item["tags"],
                    created_at=timezone.now(),
                    updated_at=timezone.now(),
                )
            bare.append((time.perf_counter() - t0) * 1000)

        def pct(values, p):
            return statistics.quantiles(values, n=100)[p - 1]

        self.stdout.write(f"writes measured: {writes} at {n:,} existing entries (50 agents)")
        for name, values in (("entry_create with checks", checked), ("bare INSERT", bare)):
            self.stdout.write(f"  {name:26} p50 {pct(values, 50):6.2f} ms  p95 {pct(values, 95):6.2f} ms")
        added = [c - b for c, b in zip(checked, bare, strict=True)]
        self.stdout.write(
            f"  {'added by the checks':26} p50 {pct(added, 50):6.2f} ms  p95 {pct(added, 95):6.2f} ms"
        )
        if not options["keep"]:
            project.delete()

    def _http_load(self, options):
        from benchmarks.load import Server, free_port, load_run

        clients = options["clients"]
        if not 1 <= clients <= 64:
            raise CommandError("--clients must be between 1 and 64")
        arguments = dict(
            clients=clients,
            writes=options["writes"],
            batches=options["batches"],
            batch_size=options["batch_size"],
            project_slug=f"{options['project']}-http",
            waits=options["waits"],
            out=self.stdout.write,
        )
        self.stdout.write(
            f"{clients} clients: {options['writes']} entries each, then {options['batches']} batches of "
            f"{options['batch_size']} messages each"
        )
        if options["port"]:
            figures = load_run(port=options["port"], **arguments)
        else:
            port = free_port()
            with Server(port) as server:
                figures = load_run(port=port, server_pid=server.process.pid, **arguments)
        if not options["keep"]:
            figures["project"].delete()
        if (
            figures["lost_entries"]
            or figures["lost_messages"]
            or figures["missing_exchanges"]
            or figures["server_errors"]
        ):
            raise CommandError("acknowledged writes were lost or the server answered 5xx")
