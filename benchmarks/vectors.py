"""Cheap synthetic embeddings for latency benchmarks.

Embedding 100,000 texts with the bundled model takes an hour of CPU on the development machine, so
benchmarks that need many stored vectors derive them from a small pool of real embeddings of corpus
texts: each row gets a random pool vector plus Gaussian noise, normalised. Such vectors have the
real dimension and a realistic, clustered distribution, so scans and HNSW walks cost what they
would; they do NOT represent their row's text, so they say nothing about quality. Queries are
still embedded for real by the benchmarks.
"""

import io
from collections.abc import Iterable

import numpy as np
from django.db import connection, transaction

from benchmarks.corpus import corpus_generate
from memoryproject.embeddings import Embedder

COPY_SQL = (
    "COPY search_embedding (kind, object_id, chunk, project_id, agent_id, model, dimensions, source_hash,"
    " embedded_at, vector) FROM STDIN"
)


def vector_pool(embedder: Embedder, size: int, *, seed: int = 6) -> np.ndarray:
    texts = [row["content"] for row in corpus_generate(size, agents=1, seed=seed)]
    return np.array(embedder.embed_passages(texts), dtype=np.float32)


def synthetic_embeddings_copy(
    rows: Iterable[tuple[str, int, int, int, str]],
    *,
    embedder: Embedder,
    pool: np.ndarray,
    noise: float = 0.35,
    seed: int = 7,
    batch: int = 20_000,
) -> int:
    """COPY one synthetic vector per (kind, object_id, project_id, agent_id, source_hash) row."""
    rng = np.random.default_rng(seed)
    dims = pool.shape[1]
    done = 0
    rows = iter(rows)
    with transaction.atomic(), connection.cursor() as cursor:
        while True:
            chunk = [row for _, row in zip(range(batch), rows, strict=False)]
            if not chunk:
                break
            vectors = pool[rng.integers(0, len(pool), len(chunk))]
            vectors = vectors + rng.normal(0, noise / np.sqrt(dims), vectors.shape).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            buf = io.StringIO()
            for (kind, object_id, project_id, agent_id, source_hash), vector in zip(
                chunk, vectors, strict=True
            ):
                buf.write(
                    f"{kind}\t{object_id}\t0\t{project_id}\t{agent_id}\t{embedder.model_id}\t{dims}\t"
                    f"{source_hash}\tnow\t[" + ",".join(f"{x:.6g}" for x in vector) + "]\n"
                )
            with cursor.cursor.copy(COPY_SQL) as copy:
                copy.write(buf.getvalue())
            done += len(chunk)
    return done
