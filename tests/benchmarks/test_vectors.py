import hashlib

import numpy as np
import pytest

from benchmarks.vectors import synthetic_embeddings_copy
from memoryproject.embeddings import embedder_get
from search.embedding_index import embeddings_pending_count, pgvector_installed
from search.models import Embedding
from search.semantic import semantic_search
from vault import services
from vault.models import WorkspaceFile

pytestmark = pytest.mark.django_db


def test_synthetic_vectors_count_as_current_embeddings_and_are_searchable(agent_a):
    if not pgvector_installed():
        pytest.skip("this database has no pgvector")
    WorkspaceFile.objects.all().delete()
    entries = [
        services.entry_create(
            agent=agent_a, category="lessons", content=f"note {i}", created_by="t", dedupe=False
        )
        for i in range(5)
    ]
    embedder = embedder_get()
    pool = np.random.default_rng(0).normal(size=(3, embedder.dimensions)).astype(np.float32)
    rows = [
        ("entry", e.pk, e.project_id, e.agent_id, hashlib.md5(e.content.encode()).hexdigest())
        for e in entries
    ]
    assert synthetic_embeddings_copy(rows, embedder=embedder, pool=pool, batch=2) == 5
    assert Embedding.objects.filter(model=embedder.model_id).count() == 5
    assert embeddings_pending_count() == 0
    hits = semantic_search(
        project_id=agent_a.project_id, agent_id=agent_a.pk, kinds={"entries"}, query="note", limit=10
    )
    assert {hit.object_id for hit in hits} == {e.pk for e in entries}
