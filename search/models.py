from django.contrib.postgres.fields import ArrayField
from django.db import models

# Accents folded for accent-insensitive matching (search.query._analyse): users often type Portuguese
# without them ("configuracao", "Joao"), and the stemmers keep them, so a query word also matches the
# vocabulary words that differ from it only by accents. Lower-case letters: vocabulary words are.
FOLD_FROM = "áàâãäåāéèêëēíìîïīóòôõöōúùûüūçñý"
FOLD_TO = "aaaaaaaeeeeeiiiiioooooouuuuucny"
assert len(FOLD_FROM) == len(FOLD_TO)


def folded(expression) -> models.Func:
    """`translate(expression, FOLD_FROM, FOLD_TO)`: the text without its accents (lower-case letters)."""
    return models.Func(
        expression,
        models.Value(FOLD_FROM),
        models.Value(FOLD_TO),
        function="translate",
        output_field=models.CharField(),
    )


class VocabularyWord(models.Model):
    """A word seen in entries, messages or files (lower-cased 'simple' lexeme), for typo tolerance.

    Filled by PostgreSQL triggers (migration 0001) on every insert or content change of the searched
    tables, so it can never lag behind a write and needs no call from other apps' services.
    """

    word = models.CharField(max_length=64, primary_key=True)

    class Meta:
        # Prefix completion (search.query._analyse: `~>=~` / `~<~`, byte order whatever the collation)
        # reads the `..._like` index (word varchar_pattern_ops) that Django creates beside the primary
        # key of a CharField. A second index of that same definition, `vocabularyword_prefix`, was
        # dropped (search migration 0015): every new word was written into both.
        indexes = [
            # The words that differ from a query word only by accents, in one indexed look-up.
            models.Index(folded(models.F("word")), name="vocabularyword_folded"),
        ]

    def __str__(self) -> str:
        return self.word


class VocabularyDeletion(models.Model):
    """SymSpell-style deletion neighbourhood: each vocabulary word under itself and under every
    string made by deleting one of its letters. Two words within one edit (insert, delete,
    substitute, transpose) share a key, so a query word finds its neighbours with one indexed
    lookup of its own deletion keys."""

    pk = models.CompositePrimaryKey("key", "word")
    key = models.CharField(max_length=64)
    word = models.CharField(max_length=64)

    def __str__(self) -> str:
        return f"{self.key} -> {self.word}"


class ContextBuild(models.Model):
    """One context injection: what was asked and which entries were cited (citations count as
    access for ranking)."""

    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="context_builds")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="context_builds")
    command = models.TextField(blank=True)
    budget_tokens = models.PositiveIntegerField()
    token_estimate = models.PositiveIntegerField()
    entry_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    sections = models.JSONField(default=dict, blank=True, help_text="Items per section that made it in.")
    warnings = models.JSONField(default=list, blank=True)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="contextbuild_agent_recent")]

    def __str__(self) -> str:
        return f"context for {self.agent} at {self.created_at:%Y-%m-%d %H:%M}"


class EmbeddingKind(models.TextChoices):
    ENTRY = "entry", "Vault entry"
    MESSAGE = "message", "Session message"
    FILE = "file", "Workspace file"


class Embedding(models.Model):
    """The embedding of one chunk of an entry, a message or a workspace file (short items have one
    chunk). Written by the background job (search.embedding_index), never on the request path.

    The vector itself is the column `vector` (pgvector), added by migration 0004 only where the
    extension exists, so it is not a Django field: it is read and written in SQL. Project and agent
    are copied from the item so that semantic search is cut by tenant in the index. `source_hash` is
    md5 of the embedded text of the whole item and `model` the embedder's id: either differing from
    the item's present text or the configured model marks the item for re-embedding; `chunk_hash` lets
    that re-embedding reuse the vectors of unchanged chunks.
    """

    kind = models.CharField(max_length=8, choices=EmbeddingKind.choices)
    object_id = models.BigIntegerField()
    chunk = models.PositiveSmallIntegerField(default=0)
    project = models.ForeignKey("vault.Project", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("vault.Agent", on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    dimensions = models.PositiveSmallIntegerField()
    source_hash = models.CharField(max_length=32)
    # md5 of this chunk's text: an item re-embedded after an edit keeps the vectors of the chunks the
    # edit left as they were ("" for rows stored before the column existed).
    chunk_hash = models.CharField(max_length=32, blank=True, default="", db_default="")
    embedded_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id", "chunk"], name="embedding_unique_chunk")
        ]
        indexes = [
            models.Index(fields=["agent", "model", "kind"], name="embedding_agent_model"),
            models.Index(fields=["project", "model", "kind"], name="embedding_project_model"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id} chunk {self.chunk} ({self.model})"


class ScopeLength(models.Model):
    """The mean search-vector length of one large scope (an agent's or a project's rows of one table),
    BM25's length normalisation (search/bm25.py), kept between searches and shared by every web
    process. Reading it is part of the scope's count; it is measured again (a sample of about 1,000
    rows, 10-30 ms on a cold cache at 100,000 entries) only when the scope's row count has moved by
    more than a tenth since, or a day has passed, instead of on every process's first search of the
    scope."""

    table_name = models.CharField(max_length=64)
    # No constraint in the database: a row is stored by a search (search/bm25.py), possibly inside the
    # caller's transaction, where a deferred foreign-key check against a scope deleted meanwhile would
    # fail the caller's commit. Deleting a project or an agent through Django still deletes its rows;
    # a row left behind by a raw delete is never read again (ids are not reused).
    project = models.ForeignKey(
        "vault.Project", on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    # None: the whole project.
    agent = models.ForeignKey(
        "vault.Agent", on_delete=models.CASCADE, related_name="+", null=True, db_constraint=False
    )
    rows = models.BigIntegerField(help_text="The scope's row count when the mean was measured.")
    avglen = models.FloatField()
    measured_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["table_name", "project"],
                condition=models.Q(agent__isnull=True),
                name="scopelength_project_unique",
            ),
            models.UniqueConstraint(
                fields=["table_name", "agent"],
                condition=models.Q(agent__isnull=False),
                name="scopelength_agent_unique",
            ),
        ]

    def __str__(self) -> str:
        scope = f"agent {self.agent_id}" if self.agent_id else f"project {self.project_id}"
        return f"{self.table_name} {scope}: {self.avglen:.1f} lexemes over {self.rows} rows"
