from django.contrib.postgres.fields import ArrayField
from django.db import models


class VocabularyWord(models.Model):
    """A word seen in entries, messages or files (lower-cased 'simple' lexeme), for typo tolerance.

    Filled by PostgreSQL triggers (migration 0001) on every insert or content change of the searched
    tables, so it can never lag behind a write and needs no call from other apps' services.
    """

    word = models.CharField(max_length=64, primary_key=True)

    class Meta:
        indexes = [
            # Byte-order index for prefix completion (search.query._analyse), whatever the collation.
            models.Index(fields=["word"], name="vocabularyword_prefix", opclasses=["varchar_pattern_ops"])
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
