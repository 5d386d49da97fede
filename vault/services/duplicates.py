"""A new entry's near duplicates (exact by content hash, near by MinHash sketch and word sets) and the live entries whose claims it contradicts."""

import threading
from collections import OrderedDict

from django.db import connection
from django.db.models import F, Q

from memoryproject.prepared import prepared_cursor
from vault import trust
from vault.models import Agent, EntryStatus, ReviewKind, VaultEntry

DUPLICATE_THRESHOLD = 0.9
BORDERLINE_THRESHOLD = 0.7
NEAR_DUPLICATE_WINDOW = 200
NEAR_DUPLICATE_CANDIDATES = 50
SKETCH_SCREEN = 0.3


class _WordSets:
    """The word sets of recently seen entries, by content hash, in this process.

    A text's word set depends on its normalised text only, and the content hash is the hash of that
    text, so a hash always maps to the same set, whichever entry, agent or project it came from and
    however often the entry was edited. The duplicate check compares a new entry with up to 50 earlier
    ones of its agent; they are mostly the same few entries from one write to the next, so their texts
    need not be read and cut into words again on each write.
    """

    SIZE = 4096

    def __init__(self):
        self._sets: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> frozenset[str] | None:
        with self._lock:
            words = self._sets.get(digest)
            if words is not None:
                self._sets.move_to_end(digest)
            return words

    def put(self, digest: str, words: frozenset[str]) -> None:
        with self._lock:
            self._sets[digest] = words
            self._sets.move_to_end(digest)
            while len(self._sets) > self.SIZE:
                self._sets.popitem(last=False)


_word_sets = _WordSets()


def _duplicate_find(agent: Agent, category: str, digest: str, words: frozenset[str], sketch: list[int]):
    """(entry, similarity) of the closest live entry of the same agent and category, or (None, 0).

    One statement finds the newest exact match (same words as written, through the content-hash
    index) and, apart from it, the newest near-match candidates (through a GIN index on a MinHash
    sketch of the words), so the cost does not grow with the vault. Candidates are screened on their sketches before words are compared.
    """
    signature = sketch if len(words) >= trust.NEAR_DUPLICATE_MIN_WORDS else []
    # By hand and prepared: this runs on every write, under the agent's write lock, and the ORM took
    # longer to compile it than PostgreSQL took to run it. The exact match is looked up on its own
    # (the content-hash index), not among the near candidates: behind 50 newer entries sharing a
    # word of its sketch, an exact copy was no candidate and was stored again.
    live = "agent_id = %s AND category = %s AND status IN (%s, %s)"
    live_params = [agent.pk, category, EntryStatus.ACTIVE.value, EntryStatus.PENDING.value]
    statement = (
        f"(SELECT true, id, content_hash, sketch FROM vault_vaultentry WHERE content_hash = %s AND {live}"
        " ORDER BY created_at DESC, id DESC LIMIT 1)"
    )
    params = [digest, *live_params]
    if signature:
        statement += (
            f" UNION ALL (SELECT false, id, content_hash, sketch FROM vault_vaultentry"
            f" WHERE sketch && %s::integer[] AND {live} ORDER BY created_at DESC, id DESC LIMIT %s)"
        )
        params += [signature, *live_params, NEAR_DUPLICATE_CANDIDATES]
    with prepared_cursor() as cursor:
        cursor.execute(statement, params)
        rows = cursor.fetchall()
    exact = next((pk for same, pk, _, _ in rows if same), None)
    if exact is not None:
        return VaultEntry.objects.get(pk=exact), 1.0
    candidates = [(pk, other_digest, other_sketch) for _, pk, other_digest, other_sketch in rows]
    best, best_score = None, 0.0
    similarities = trust.sketch_similarities(signature, [other_sketch for _, _, other_sketch in candidates])
    screened = [
        (pk, other_digest, _word_sets.get(other_digest))
        for (pk, other_digest, _), similarity in zip(candidates, similarities, strict=True)
        if similarity >= SKETCH_SCREEN
    ]
    # The texts of the screened candidates not seen lately, in one round trip (this runs under the
    # agent's write lock).
    unseen = [pk for pk, _, other_words in screened if other_words is None]
    contents = {}
    if unseen:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, content FROM vault_vaultentry WHERE id = ANY(%s)", [unseen])
            contents = dict(cursor.fetchall())
    for pk, other_digest, other_words in screened:
        if other_words is None:
            if pk not in contents:
                continue
            other_words = trust.word_set(contents[pk])
            _word_sets.put(other_digest, other_words)
        score = trust.near_duplicate_score(words, other_words)
        if score > best_score:
            best, best_score = pk, score
    if best is None:
        return None, 0.0
    return VaultEntry.objects.get(pk=best), best_score


def _conflicts_find(agent: Agent, category: str, content: str) -> list[tuple[VaultEntry, str]]:
    """Live entries of the agent that make a different claim about the same subject."""
    claims = trust.claims_find(content)
    if not claims:
        return []
    found = []
    subjects = {claim.subject.split()[0] for claim in claims}
    candidates = VaultEntry.objects.filter(agent=agent, category=category, status=EntryStatus.ACTIVE)
    subject_filter = Q()
    for subject in subjects:
        subject_filter |= Q(content__icontains=subject[:6])
    for other in candidates.filter(subject_filter).order_by("-created_at", "-id")[:NEAR_DUPLICATE_WINDOW]:
        pairs = trust.claims_conflict(claims, trust.claims_find(other.content))
        if pairs:
            new, old = pairs[0]
            found.append((other, f"'{new.subject}': '{new.value}' here, '{old.value}' in entry {other.pk}"))
    return found


def _same_words_as_written(content: str, other: str) -> bool:
    """Whether two texts found near duplicates on their folded words still are on their words as
    written. The folding that lets "nao" match "não" also makes Vietnamese bán (sell) and bạn (friend)
    one word: an accent that tells two texts apart sends the second to review, it is never dropped."""
    if content.isascii() and other.isascii():
        return True  # nothing folded
    score = trust.near_duplicate_score(
        trust.word_set(content, folded=False), trust.word_set(other, folded=False)
    )
    return score >= DUPLICATE_THRESHOLD


def _duplicate_check(
    agent: Agent, category: str, content: str, digest: str, words: frozenset[str], now, sketch: list[int]
):
    """(the existing entry, bumped, when this is a duplicate; else None, and the borderline-duplicate
    review reason or None). `sketch` is trust.sketch(words), which the new row stores too."""
    existing, score = _duplicate_find(agent, category, digest, words, sketch)
    same_text = existing is not None and existing.content_hash == digest
    if same_text or (
        existing is not None
        and score >= DUPLICATE_THRESHOLD
        and not trust.compared_by_pairs(words)
        and _same_words_as_written(content, existing.content)
    ):
        VaultEntry.objects.filter(pk=existing.pk).update(
            access_count=F("access_count") + 1, last_accessed_at=now
        )
        existing.refresh_from_db()
        existing.duplicate_of = existing.pk
        return existing, None
    if existing is not None and score >= BORDERLINE_THRESHOLD:
        return None, (ReviewKind.DUPLICATE, existing, f"{score:.0%} similar to entry {existing.pk}")
    return None, None
