"""Search and context latency over HTTP on a synthetic corpus (benchmarks/corpus.py).

Loads N entries over 50 agents into a project `bench-N` with COPY (reused when it already holds N
entries), starts the production server on 127.0.0.1 (`manage.py serve --no-cluster`: gunicorn with
uvicorn workers, 2 by default), and times
sequential keep-alive requests from this process: p50/p95/p99 of agent-scoped search, project-wide
search and context building. The server is stopped at the end; the corpus is kept unless --drop.

With --embeddings the entries also get stored vectors (cheap synthetic ones, benchmarks/vectors.py:
realistic for timing, meaningless for quality), the HNSW index is built, and three more rows are
timed: `mode=hybrid` search of one agent over HTTP (the first row's queries again, so the server
mostly finds their vectors in its query cache; the first row, hybrid by default, embeds every
query), and in this process the query's embedding and the semantic scan
(search.semantic.semantic_search) alone.
"""

import http.client
import io
import json
import os
import time
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils import timezone

from benchmarks.corpus import corpus_generate, corpus_queries
from benchmarks.load import Server, cpu_since, database_pid, free_port, proc_table
from benchmarks.migrated import ensure_migrated
from benchmarks.vectors import synthetic_embeddings_copy, vector_pool
from memoryproject.embeddings import embedder_get
from search.agent_text_index import agent_text_indexes_ensure
from search.embedding_index import agent_vector_indexes_ensure, vector_indexes_ensure, vector_storage_ensure
from search.models import Embedding
from search.semantic import semantic_search
from search.services import vocabulary_rebuild
from vault import services as vault_services
from vault import trust
from vault.models import Agent, Project, TokenScope, VaultEntry

COLUMNS = (
    "project_id",
    "agent_id",
    "category",
    "content",
    "tags",
    "status",
    "source",
    "importance",
    "created_by",
    "legacy_id",
    "created_at",
    "updated_at",
    "access_count",
    "content_hash",
    "sketch",
    "source_message_ids",
)


def _pg_array(tags: list[str]) -> str:
    return "{" + ",".join('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in tags) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class Command(BaseCommand):
    help = "Measure search and context-injection latency over HTTP on a synthetic corpus of N entries."

    def add_arguments(self, parser):
        parser.add_argument("--entries", type=int, required=True, help="Corpus size (e.g. 10000, 100000).")
        parser.add_argument("--queries", type=int, default=300, help="Timed requests per measurement.")
        parser.add_argument("--workers", type=int, default=2, help="Web worker processes (WEB_WORKERS).")
        parser.add_argument("--drop", action="store_true", help="Delete the benchmark project afterwards.")
        parser.add_argument(
            "--port", type=int, default=0, help="Port of the benchmark server (default: any free one)."
        )
        parser.add_argument(
            "--pause",
            type=float,
            default=0.0,
            help="Seconds to wait before each timed request (untimed): a lightly used server, whose "
            "database connections reach DATABASE_CONN_MAX_AGE between requests.",
        )
        parser.add_argument(
            "--embeddings",
            action="store_true",
            help="Store synthetic vectors for the entries and also time hybrid search and the semantic arm.",
        )

    def handle(self, *args, **options):
        n = options["entries"]
        if not 1 <= n <= 5_000_000:
            raise CommandError("--entries must be between 1 and 5,000,000")
        if not 0 <= options["pause"] <= 600:
            raise CommandError("--pause must be between 0 and 600 seconds")
        self._pause = options["pause"]
        ensure_migrated(self)
        project = self._corpus(n)
        started = time.perf_counter()
        built = agent_text_indexes_ensure()["vault_vaultentry"]["built"]  # as the hourly job would
        if built:
            self.stdout.write(
                f"built GIN indexes of their own for {len(built)} large agents in {time.perf_counter() - started:.1f} s"
            )
        if options["embeddings"]:
            self._embeddings(project)
        _, token = vault_services.token_create(project=project, scope=TokenScope.ADMIN, name="bench_search")
        port = options["port"] or free_port()
        try:
            with Server(port, env={"WEB_WORKERS": str(options["workers"])}) as server:
                self._server_pid = server.process.pid
                self._measure(project, token, port, options["queries"], embeddings=options["embeddings"])
        except RuntimeError as exc:  # benchmarks.load.Server: the server did not start
            raise CommandError(str(exc)) from exc
        finally:
            if options["drop"]:
                project.delete()

    # --- corpus ---------------------------------------------------------------------------------

    def _corpus(self, n: int) -> Project:
        slug = f"bench-{n}"
        project = Project.objects.filter(slug=slug).first()
        if project and VaultEntry.objects.filter(project=project).count() == n:
            self.stdout.write(f"reusing corpus {slug} ({n} entries)")
            self._vacuum()
            return project
        if project:
            self.stdout.write(f"dropping incomplete corpus {slug}")
            project.delete()
        started = time.perf_counter()
        project = Project.objects.create(
            slug=slug, name=f"Search benchmark, {n} entries", context="# Bench\nSynthetic corpus."
        )
        agents = {
            f"agent-{i:02d}": Agent.objects.create(project=project, slug=f"agent-{i:02d}") for i in range(50)
        }
        now = timezone.now()
        batch = 50_000
        rows = corpus_generate(n, agents=50, seed=0)
        done = 0
        with transaction.atomic(), connection.cursor() as cursor:
            try:  # skip the vocabulary triggers for the bulk load (superuser only); rebuilt below
                with transaction.atomic():
                    cursor.execute("SET LOCAL session_replication_role = replica")
                triggers_off = True
            except Exception:
                triggers_off = False
            raw = cursor.cursor
            while done < n:
                buf = io.StringIO()
                for _ in range(min(batch, n - done)):
                    e = next(rows)
                    when = (now - timedelta(days=e["age_days"])).isoformat()
                    fields = (
                        str(project.pk),
                        str(agents[e["agent"]].pk),
                        e["category"],
                        _escape(e["content"]),
                        _escape(_pg_array(e["tags"])),
                        "active",
                        "import",
                        str(e["importance"]),
                        "bench_search",
                        "",
                        when,
                        when,
                        "0",
                        trust.content_hash(e["content"]),
                        "{" + ",".join(str(h) for h in trust.sketch(trust.word_set(e["content"]))) + "}",
                        "{}",
                    )
                    buf.write("\t".join(fields) + "\n")
                    done += 1
                with raw.copy(f"COPY vault_vaultentry ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                    copy.write(buf.getvalue())
                self.stdout.write(f"  loaded {done}/{n}")
        if triggers_off:
            vocabulary_rebuild()
        self._vacuum()
        self.stdout.write(f"loaded {n} entries in {time.perf_counter() - started:.1f} s")
        return project

    def _embeddings(self, project: Project) -> None:
        """One synthetic vector per entry, marked as the entry's current embedding (its md5 and the
        configured model), so that nothing is pending and the background job leaves them alone."""
        embedder = embedder_get()
        if embedder is None or not vector_storage_ensure():
            raise CommandError("--embeddings needs MEMORY_EMBEDDINGS on and pgvector in the database")
        stored = Embedding.objects.filter(project=project, kind="entry", model=embedder.model_id).count()
        entries = VaultEntry.objects.filter(project=project).count()
        if stored == entries:
            self.stdout.write(f"reusing {stored} stored vectors")
            agent_vector_indexes_ensure(embedder.dimensions, embedder.model_id)  # as the job would
            return
        started = time.perf_counter()
        Embedding.objects.filter(project=project).delete()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS search_embedding_hnsw_{embedder.dimensions}")
            cursor.execute(f"DROP INDEX IF EXISTS search_embedding_scope_{embedder.dimensions}")
            cursor.execute(
                "SELECT id, project_id, agent_id, md5(content) FROM vault_vaultentry WHERE project_id = %s",
                [project.pk],
            )
            rows = [("entry", *row) for row in cursor.fetchall()]
        synthetic_embeddings_copy(rows, embedder=embedder, pool=vector_pool(embedder, 256))
        with connection.cursor() as cursor:
            # The shared HNSW graph of 1,000,000 384-dimension vectors takes about 2 GB: built in less
            # memory, pgvector goes on inserting into the index on disk, several times slower.
            cursor.execute("SET maintenance_work_mem = '3GB'")
        vector_indexes_ensure(embedder.dimensions)
        agent_vector_indexes_ensure(embedder.dimensions, embedder.model_id)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) search_embedding")
        self.stdout.write(
            f"stored {len(rows)} synthetic vectors and built the HNSW index in {time.perf_counter() - started:.1f} s"
        )

    def _vacuum(self) -> None:
        # A bulk COPY leaves its last rows in the GIN index's pending list, which every search then
        # scans linearly until (auto)vacuum merges it: measure the steady state, not that transient.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) vault_vaultentry")

    # --- measurement ----------------------------------------------------------------------------

    def _measure(
        self, project: Project, token: str, port: int, count: int, *, embeddings: bool = False
    ) -> None:
        from urllib.parse import urlencode

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        agents = list(Agent.objects.filter(project=project).order_by("slug").values_list("slug", flat=True))
        queries = corpus_queries(count + 20, seed=1)

        def timed(method, path, body=None):
            started = time.perf_counter()
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                raise CommandError(f"{method} {path} -> {response.status}: {payload[:300]!r}")
            return elapsed, json.loads(payload)

        runs = {
            "search, one agent": lambda i: timed(
                "GET",
                "/api/v1/search?"
                + urlencode({"q": queries[i], "agent": agents[i % len(agents)], "kinds": "entries"}),
            ),
            "search, whole project": lambda i: timed("GET", "/api/v1/search?" + urlencode({"q": queries[i]})),
            "context": lambda i: timed(
                "POST",
                f"/api/v1/agents/{agents[i % len(agents)]}/context",
                {"command": queries[i], "budget_tokens": 2000},
            ),
        }
        if embeddings:
            runs["search mode=hybrid, one agent"] = lambda i: timed(
                "GET",
                "/api/v1/search?"
                + urlencode(
                    {"q": queries[i], "agent": agents[i % len(agents)], "kinds": "entries", "mode": "hybrid"}
                ),
            )
            agent_ids = dict(Agent.objects.filter(project=project).values_list("slug", "pk"))

            embedder = embedder_get()
            vectors: dict[str, tuple] = {}

            def query_embedding(i):
                # As a search embeds its query: on the query thread count, not every core.
                started = time.perf_counter()
                vectors[queries[i]] = tuple(embedder.embed_query(queries[i]))
                return (time.perf_counter() - started) * 1000, {"results": [None] * 10}

            def semantic_scan(i):
                started = time.perf_counter()
                hits = semantic_search(
                    project_id=project.pk,
                    agent_id=agent_ids[agents[i % len(agents)]],
                    kinds={"entries"},
                    query=queries[i],
                    limit=10,
                    vector=vectors[queries[i]],
                )
                return (time.perf_counter() - started) * 1000, {"results": hits}

            runs["query embedding (in-process)"] = query_embedding
            runs["semantic scan (in-process)"] = semantic_scan
        self.stdout.write(
            f"{VaultEntry.objects.filter(project=project).count()} entries, {count} sequential requests each"
        )
        self._table(runs, count)

    def _table(self, runs: dict, count: int) -> None:
        """Each operation run 20 times untimed, then `count` times: p50, p95, p99, mean hits, and for
        the requests the CPU the server's processes and PostgreSQL used, a request (a machine shared
        with other work slows every request; it changes the CPU much less)."""
        self.stdout.write(
            f"{'operation':<32}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'mean hits':>11}"
            f"{'CPU ms: server / database':>28}"
        )
        server_pid, postmaster = getattr(self, "_server_pid", None), database_pid()
        for name, run in runs.items():
            for i in range(20):  # warm up connections and caches
                run(count + i)
            times, hits = [], []
            before = proc_table() if server_pid and "in-process" not in name else {}
            before_reaped = {"server": _reaped_cpu(server_pid), "database": _reaped_cpu(postmaster)}
            for i in range(count):
                if getattr(self, "_pause", 0) and "in-process" not in name:
                    time.sleep(self._pause)
                elapsed, body = run(i)
                times.append(elapsed)
                hits.append(len(body.get("results", body.get("cited", []))))
            cpu = ""
            if before:
                # A process that ended during the row (a PostgreSQL backend whose connection closed)
                # counts in its parent's reaped CPU.
                used = cpu_since(before, server_pid, postmaster)
                reaped = {
                    "server": _reaped_cpu(server_pid) - before_reaped["server"],
                    "database": _reaped_cpu(postmaster) - before_reaped["database"],
                }
                server, database = (
                    (used[role] + reaped[role]) / count * 1000 for role in ("server", "database")
                )
                cpu = f"{server:.1f} / {database:.1f}"
            self.stdout.write(
                f"{name:<32}{percentile(times, 50):>9.1f}{percentile(times, 95):>9.1f}"
                f"{percentile(times, 99):>9.1f}{sum(hits) / len(hits):>11.1f}{cpu:>28}"
            )


def _reaped_cpu(pid: int | None) -> float:
    """CPU seconds of the children `pid` has waited for (ended processes), from /proc; 0 when unknown."""
    if not pid:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
