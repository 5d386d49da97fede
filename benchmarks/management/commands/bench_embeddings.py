"""Embedding throughput, query-embedding latency, background-refresh speed and semantic_search
latency (exact scan against the HNSW index) at several agent sizes.

- throughput: the configured embedder on corpus texts (benchmarks/corpus.py) at several batch sizes;
- query: embed_query over corpus queries;
- refresh: `embeddings_refresh` over --refresh-entries real corpus entries of a fresh project (model
  calls and database writes), the basis of the backfill estimate for 100,000 entries;
- search: one agent per size in --sizes, holding that many embeddings. These vectors are made
  cheaply: a pool of real embeddings of corpus texts, each row its pool vector plus Gaussian noise,
  normalised. They time the scan and the index honestly (real dimension, realistic clustering), but
  they do not stand for the rows' text, so this part measures speed, not quality. The query
  embedding is computed for real and included in the time. HNSW recall@10 against the exact answer
  is printed beside the times.
The projects made here (slugs bench-embed-*) are deleted at the end unless --keep.
"""

import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from benchmarks.corpus import corpus_generate, corpus_queries
from benchmarks.vectors import synthetic_embeddings_copy, vector_pool
from memoryproject.embeddings import embedder_get
from search import semantic
from search.embedding_index import embeddings_refresh, vector_indexes_ensure, vector_storage_ensure
from vault.models import Agent, Project, VaultEntry


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class Command(BaseCommand):
    help = "Measure embedding throughput, query latency, refresh speed and semantic search latency."

    def add_arguments(self, parser):
        parser.add_argument("--texts", type=int, default=128, help="texts per throughput measurement")
        parser.add_argument("--batch-sizes", default="1,8,32,64")
        parser.add_argument("--queries", type=int, default=100, help="timed queries per measurement")
        parser.add_argument("--refresh-entries", type=int, default=300)
        parser.add_argument("--sizes", default="1000,10000,100000", help="embeddings per agent")
        parser.add_argument(
            "--pool", type=int, default=256, help="real embeddings the search vectors derive from"
        )
        parser.add_argument("--noise", type=float, default=0.35, help="Gaussian noise added to pool vectors")
        parser.add_argument(
            "--skip", default="", help="comma list of parts to skip: throughput,query,refresh,search"
        )
        parser.add_argument("--ef-search", default="100", help="comma list of hnsw.ef_search values to time")
        parser.add_argument("--keep", action="store_true", help="keep the bench-embed-* projects")

    def handle(self, *args, **options):
        embedder = embedder_get()
        if embedder is None:
            raise CommandError("MEMORY_EMBEDDINGS is off")
        if not vector_storage_ensure():
            raise CommandError(semantic.NO_PGVECTOR)
        skip = set(filter(None, options["skip"].split(",")))
        self.embedder = embedder
        self.stdout.write(f"model {embedder.model_id} ({embedder.dimensions} dimensions)")
        texts = [row["content"] for row in corpus_generate(options["texts"], agents=1, seed=3)]
        self.queries = corpus_queries(options["queries"] + 10, seed=4)
        embedder.embed_passages(texts[:2])  # load the model
        try:
            if "throughput" not in skip:
                self._throughput(texts, [int(b) for b in options["batch_sizes"].split(",")])
            if "query" not in skip:
                self._query_latency()
            if "refresh" not in skip:
                self._refresh(options["refresh_entries"])
            if "search" not in skip:
                self._search(
                    [int(s) for s in options["sizes"].split(",")],
                    options["pool"],
                    options["noise"],
                    [int(e) for e in options["ef_search"].split(",")],
                )
        finally:
            if not options["keep"]:
                Project.objects.filter(slug__startswith="bench-embed-").delete()

    def _throughput(self, texts: list[str], batch_sizes: list[int]) -> None:
        chars = statistics.mean(len(t) for t in texts)
        self.stdout.write(f"\nthroughput: {len(texts)} corpus texts, mean {chars:.0f} characters")
        for size in batch_sizes:
            started, cpu = time.perf_counter(), time.process_time()
            for i in range(0, len(texts), size):
                self.embedder.embed_passages(texts[i : i + size])
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            # CPU seconds per text depend far less on other processes' load than wall time does.
            self.stdout.write(
                f"  batch {size:>4}: {len(texts) / elapsed:7.1f} texts/s, {cpu / len(texts) * 1000:6.1f} CPU ms a text"
            )

    def _query_latency(self) -> None:
        times, cpu = [], time.process_time()
        for query in self.queries:
            started = time.perf_counter()
            self.embedder.embed_query(query)
            times.append((time.perf_counter() - started) * 1000)
        cpu = (time.process_time() - cpu) / len(times) * 1000
        self.stdout.write(
            f"\nquery embedding ({len(times)} corpus queries): p50 {_percentile(times, 50):.1f} ms, "
            f"p95 {_percentile(times, 95):.1f} ms, {cpu:.1f} CPU ms a query"
        )

    def _refresh(self, n: int) -> None:
        project = Project.objects.create(slug="bench-embed-refresh", name="bench refresh")
        agent = Agent.objects.create(project=project, slug="agent-00")
        rows = corpus_generate(n, agents=1, seed=5)
        VaultEntry.objects.bulk_create(
            VaultEntry(
                project=project,
                agent=agent,
                category=row["category"],
                content=row["content"],
                created_at=project.created_at,
                updated_at=project.created_at,
            )
            for row in rows
        )
        outcome = embeddings_refresh()
        rate = outcome.embedded / outcome.seconds if outcome.seconds else 0.0
        self.stdout.write(
            f"\nrefresh: {outcome.embedded} entries ({outcome.chunks} chunks) in {outcome.seconds:.1f} s = "
            f"{rate:.1f} entries/s (every pending item of the database was included); "
            f"100,000 entries at this rate: {100_000 / rate / 60:.0f} min"
            if rate
            else "\nrefresh: nothing embedded"
        )

    def _search_corpus_load(self, sizes: list[int], pool_size: int, noise: float):
        """One agent per size holding that many synthetic vectors, and the HNSW index over them."""
        dims = self.embedder.dimensions
        pool = vector_pool(self.embedder, pool_size)
        project = Project.objects.create(slug="bench-embed-search", name="bench semantic search")
        agents = {}
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS search_embedding_hnsw_{dims}")
            cursor.execute(f"DROP INDEX IF EXISTS search_embedding_scope_{dims}")
        for size in sizes:
            agent = Agent.objects.create(project=project, slug=f"agent-{size}")
            agents[size] = agent
            # Object ids of no entry: nothing is ever hydrated from these rows.
            synthetic_embeddings_copy(
                (
                    ("entry", 10**12 + agent.pk * 10**7 + i, project.pk, agent.pk, "0" * 32)
                    for i in range(size)
                ),
                embedder=self.embedder,
                pool=pool,
                noise=noise,
                seed=size,
            )
        filled = time.perf_counter() - started
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
        vector_indexes_ensure(dims)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) search_embedding")
        self.stdout.write(
            f"\nsearch: {sum(sizes)} synthetic vectors loaded in {filled:.1f} s, HNSW index built in "
            f"{time.perf_counter() - started:.1f} s"
        )
        return project, agents

    def _search(self, sizes: list[int], pool_size: int, noise: float, ef_values: list[int]) -> None:
        project, agents = self._search_corpus_load(sizes, pool_size, noise)
        self.stdout.write(
            "times with the query embedded for real, and (sql) with query vectors computed first"
        )
        self.stdout.write(
            f"{'agent holds':>12}{'scan':>9}{'p50 ms':>9}{'p95 ms':>9}{'sql p50':>9}{'sql p95':>9}"
            f"{'recall@10 vs exact':>20}"
        )
        vectors = {query: self.embedder.embed_query(query) for query in self.queries}
        embed_query = self.embedder.embed_query
        saved = semantic.EXACT_SCAN_MAX_ROWS, semantic.HNSW_EF_SEARCH
        try:
            for size, agent in agents.items():
                answers = {}
                strategies = [("exact", 10**9, semantic.HNSW_EF_SEARCH)]
                strategies += [(f"hnsw{ef}", -1, ef) for ef in ef_values]
                for strategy, threshold, ef in strategies:
                    semantic.EXACT_SCAN_MAX_ROWS = threshold
                    semantic.HNSW_EF_SEARCH = ef
                    times, sql_times, answers[strategy] = [], [], []
                    for timings, precomputed in ((times, False), (sql_times, True)):
                        if precomputed:
                            self.embedder.embed_query = vectors.__getitem__
                        try:
                            for i, query in enumerate(self.queries):
                                began = time.perf_counter()
                                hits = semantic.semantic_search(
                                    project_id=project.pk,
                                    agent_id=agent.pk,
                                    kinds={"entries"},
                                    query=query,
                                    limit=10,
                                )
                                if i >= 10:  # the first ten warm caches
                                    timings.append((time.perf_counter() - began) * 1000)
                                    if precomputed:
                                        answers[strategy].append({hit.object_id for hit in hits})
                        finally:
                            self.embedder.embed_query = embed_query
                    recall = ""
                    if strategy != "exact":
                        overlaps = [
                            len(a & e) / max(len(e), 1)
                            for a, e in zip(answers[strategy], answers["exact"], strict=True)
                        ]
                        recall = f"{statistics.mean(overlaps):.3f}"
                    self.stdout.write(
                        f"{size:>12}{strategy:>9}{_percentile(times, 50):>9.1f}{_percentile(times, 95):>9.1f}"
                        f"{_percentile(sql_times, 50):>9.1f}{_percentile(sql_times, 95):>9.1f}{recall:>20}"
                    )
        finally:
            semantic.EXACT_SCAN_MAX_ROWS, semantic.HNSW_EF_SEARCH = saved
