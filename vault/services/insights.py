"""The one writer of what conversations teach: decisions and lessons found in texts, and handoffs.

Sleep (session close), compaction of long sessions and background extraction all store insights here,
with one dedupe rule: an insight whose content hash (vault/trust.py's `text_words`: case, spacing and
punctuation aside, accents kept) is already an entry's of the agent in that category is not stored
again, nor one a curator took back: the text of an earlier version of one of those entries (edited
or deleted since), or of one forgotten (its audit row's hash). A session slept again is read whole
again; without this it stored again every decision edited, deleted or forgotten since. Accents are not folded here: Maße and Masse are two decisions; a restatement that differs in
accents only is left to entry_create's near-duplicate check, which holds it for review."""

from collections.abc import Callable

from django.conf import settings

from vault import trust
from vault.extraction import insights_extract
from vault.models import Agent, Category, DeletionAudit, EntryVersion, VaultEntry
from vault.services.audit import content_sha
from vault.services.entries import entry_create
from vault.text import normalise_fact


def _taken_back(agent: Agent, category: str, texts: list[str]) -> set[str]:
    """Those of `texts` a curator took back from the agent's entries of `category`: an earlier
    version's text (edited or deleted since), or a forgotten entry's (by its audit row's hash)."""
    if not texts:
        return set()
    versions = EntryVersion.objects.filter(agent=agent, category=category).values_list("content", flat=True)
    earlier = {trust.content_hash(content) for content in versions.iterator()}
    forgotten = set(
        DeletionAudit.objects.filter(
            project_id=agent.project_id,
            agent_slug=agent.slug,
            kind="entry",
            category=category,
            reason=DeletionAudit.Reason.FORGET,
            content_sha256__in=[content_sha(text) for text in texts],
        ).values_list("content_sha256", flat=True)
    )
    return {t for t in texts if trust.content_hash(t) in earlier or content_sha(t) in forgotten}


def insights_store(
    *,
    agent: Agent,
    texts: list[str],
    tags: list[str],
    source: str,
    created_by: str,
    source_session_id: int | None = None,
    source_messages: Callable[[], dict[str, int]] | dict[str, int] | None = None,
) -> tuple[list[VaultEntry], int]:
    """Store the decisions and lessons found in `texts`; returns (entries created, duplicates skipped).

    Provenance: `source_session_id`, and `source_messages` (normalised insight text → the id of the
    message it was found in, or a function computing that, called only when there are insights) for
    each entry's source message."""
    insights = insights_extract(
        texts,
        max_per_kind=settings.MEMORY_INSIGHTS_MAX,
        max_chars=settings.MEMORY_INSIGHT_CHARS,
        min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
    )
    created, duplicates = [], 0
    if callable(source_messages):
        source_messages = source_messages() if insights.decisions or insights.lessons else {}
    for category, found in ((Category.DECISIONS, insights.decisions), (Category.LESSONS, insights.lessons)):
        existing = set(
            VaultEntry.objects.filter(agent=agent, category=category).values_list("content_hash", flat=True)
        )
        taken_back = _taken_back(agent, category, [t for t in found if trust.content_hash(t) not in existing])
        for text in found:
            digest = trust.content_hash(text)
            if digest in existing or text in taken_back:
                duplicates += 1
                continue
            existing.add(digest)
            message_id = (source_messages or {}).get(normalise_fact(text))
            created.append(
                entry_create(
                    agent=agent,
                    category=category,
                    content=text,
                    tags=tags,
                    source=source,
                    created_by=created_by,
                    source_session_id=source_session_id,
                    source_message_ids=[message_id] if message_id else [],
                )
            )
    return created, duplicates


def handoff_store(
    *,
    agent: Agent,
    content: str,
    tags: list[str],
    source: str,
    created_by: str,
    source_session_id: int | None = None,
    source_message_ids: list[int] | None = None,
) -> VaultEntry:
    """Store a handoff: what the next session of the agent should pick up."""
    return entry_create(
        agent=agent,
        category=Category.HANDOFFS,
        content=content,
        tags=tags,
        source=source,
        created_by=created_by,
        source_session_id=source_session_id,
        source_message_ids=source_message_ids,
    )
