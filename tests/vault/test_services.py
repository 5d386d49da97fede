import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput, NotFound
from vault import services
from vault.models import EntryVersion, VaultEntry
from vault.text import hashtags_find, tags_normalise, token_estimate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("We use #react and #TypeScript", ["react", "typescript"]),
        ("## Heading\nno tags here", []),
        ("C# is not a tag, nor page#anchor, nor &#39;", []),
        ("issue #123 is not a topic but #v2 is", ["v2"]),
        ("#dup and #dup again", ["dup"]),
        ("#decisão técnica", ["decisão"]),
        ("#multi-word-tag-", ["multi-word-tag"]),
        # A combining mark belongs to its word: the tag was cut at the first vowel sign or accent.
        ("notes #हिंदी and #ภาษาไทย", ["हिंदी", "ภาษาไทย"]),
        ("#cafe\u0301 typed with the accent apart", ["café"]),
    ],
)
def test_it_finds_hashtags(content, expected):
    assert hashtags_find(content) == expected


def test_it_merges_explicit_tags_and_hashtags():
    assert tags_normalise(["#API", " api ", "Infra"], "see #infra and #ops") == ["api", "infra", "ops"]


def test_it_rejects_too_many_tags(settings):
    settings.MEMORY_MAX_TAGS = 3
    with pytest.raises(InvalidInput, match="MEMORY_MAX_TAGS"):
        tags_normalise(["a", "b", "c", "d"])


def test_token_estimate_is_ceil_chars_over_four():
    assert [token_estimate("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def test_token_estimate_counts_multi_byte_text_by_its_utf8_bytes():
    """At four characters a token, 8,000 CJK characters (8,000 tokens or more in every common
    tokenizer) passed for 2,000 tokens: a context "within" its budget was four times over it."""
    assert token_estimate("数据库决定") == 4  # 15 bytes: 3/4 of a token a character
    assert token_estimate("😀😀") == 2  # 4 bytes each
    assert token_estimate("decisão") == 2  # 8 bytes: accented Latin text barely moves
    assert token_estimate("ab数据") == 2


def test_it_respects_a_configured_size_limit(agent_a, settings):
    settings.MEMORY_MAX_ENTRY_BYTES = 300
    services.entry_create(agent=agent_a, category="lessons", content="x" * 300)
    with pytest.raises(Exception, match="limit is 300"):
        services.entry_create(agent=agent_a, category="lessons", content="x" * 301)


def test_update_and_delete_leave_versions_in_order(agent_a):
    entry = services.entry_create(agent=agent_a, category="decisions", content="v1")
    services.entry_update(entry_id=entry.pk, changes=services.EntryChanges(content="v2"), changed_by="alice")
    services.entry_update(entry_id=entry.pk, changes=services.EntryChanges(importance=0.9), changed_by="bob")
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    versions = list(EntryVersion.objects.filter(entry_id=entry.pk).order_by("id"))
    assert [(v.action, v.content, v.importance, v.changed_by) for v in versions] == [
        ("edit", "v1", 0.5, "alice"),
        ("edit", "v2", 0.5, "bob"),
        ("delete", "v2", 0.9, "carol"),
    ]


def test_restore_brings_back_an_earlier_version_and_is_itself_versioned(agent_a):
    entry = services.entry_create(agent=agent_a, category="decisions", content="original #a")
    services.entry_update(entry_id=entry.pk, changes=services.EntryChanges(content="changed"), changed_by="x")
    first = EntryVersion.objects.get(entry_id=entry.pk)
    restored = services.entry_restore(entry_id=entry.pk, version_id=first.pk, changed_by="y")
    assert restored.content == "original #a"
    assert EntryVersion.objects.filter(entry_id=entry.pk).count() == 2


def test_the_search_vector_follows_edits(agent_a):
    entry = services.entry_create(agent=agent_a, category="decisions", content="we picked kafka")
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="we picked rabbitmq"), changed_by=""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector @@ to_tsquery('english', 'rabbitmq'), search_vector @@ to_tsquery('english', 'kafka')"
            " FROM vault_vaultentry WHERE id = %s",
            [entry.pk],
        )
        assert cursor.fetchone() == (True, False)


def test_the_search_vector_weighs_tags_above_content(agent_a):
    services.entry_create(agent=agent_a, category="decisions", content="nothing relevant", tags=["kafka"])
    services.entry_create(agent=agent_a, category="decisions", content="kafka mentioned in passing")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT content FROM vault_vaultentry ORDER BY ts_rank(search_vector, to_tsquery('simple', 'kafka')) DESC"
        )
        assert cursor.fetchone()[0] == "nothing relevant"


def test_portuguese_content_is_stemmed(agent_a):
    services.entry_create(agent=agent_a, category="decisions", content="Decidimos usar filas para pagamentos")
    assert VaultEntry.objects.extra(where=["search_vector @@ to_tsquery('portuguese', 'pagamento')"]).exists()


def test_concurrent_edits_both_leave_versions(agent_a):
    entry = services.entry_create(agent=agent_a, category="lessons", content="start")
    errors = []

    def edit(n):
        try:
            for i in range(10):
                services.entry_update(
                    entry_id=entry.pk,
                    changes=services.EntryChanges(content=f"writer {n} edit {i}"),
                    changed_by=str(n),
                )
        except Exception as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=edit, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert EntryVersion.objects.filter(entry_id=entry.pk).count() == 20


test_concurrent_edits_both_leave_versions = pytest.mark.django_db(transaction=True)(
    test_concurrent_edits_both_leave_versions
)


def test_agent_ensure_is_idempotent(project):
    first = services.agent_ensure(project=project, slug="x")
    assert services.agent_ensure(project=project, slug="x") == first


def test_admin_tokens_cannot_be_bound_to_an_agent(agent_a):
    with pytest.raises(InvalidInput, match="project-wide"):
        services.token_create(project=agent_a.project, agent=agent_a, scope="admin")


def test_a_token_name_longer_than_its_column_is_refused_before_anything_is_written(project):
    """It reached the database, whose DataError ("value too long for type character varying(200)") every
    caller showed as a traceback or a 500."""
    with pytest.raises(InvalidInput, match="at most 200 characters"):
        services.token_create(project=project, name="n" * 201)
    assert not project.tokens.exists()
    assert services.token_create(project=project, name="n" * 200)[0].name == "n" * 200


def test_a_deleted_entry_is_restored_under_its_own_id_from_its_last_or_a_chosen_version(agent_a):
    entry = services.entry_create(agent=agent_a, category="decisions", content="v1 #db", importance=0.7)
    services.entry_update(entry_id=entry.pk, changes=services.EntryChanges(content="v2"), changed_by="x")
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    restored = services.entry_restore_deleted(entry_id=entry.pk, changed_by="dave")
    assert (restored.pk, restored.content, restored.importance, restored.agent_id) == (
        entry.pk,
        "v2",
        0.7,
        agent_a.pk,
    )
    assert (restored.created_by, restored.source, restored.created_at) == ("", "api", entry.created_at)
    with pytest.raises(Conflict):  # it is live again
        services.entry_restore_deleted(entry_id=entry.pk, changed_by="dave")
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    first = EntryVersion.objects.filter(entry_id=entry.pk).earliest("pk")
    again = services.entry_restore(entry_id=entry.pk, version_id=first.pk, changed_by="erin")
    assert (again.pk, again.content, again.tags) == (entry.pk, "v1 #db", ["db"])
    history = EntryVersion.objects.filter(entry_id=entry.pk).order_by("id")
    assert [(v.action, v.changed_by) for v in history] == [
        ("edit", "x"),
        ("delete", "carol"),
        ("restore", "dave"),
        ("delete", "carol"),
        ("restore", "erin"),
    ]


def test_a_restored_entry_comes_back_as_it_was_not_as_a_new_one(agent_a):
    """It was written again as of now, by the curator, through the UI, with no provenance or use:
    recency ranked it as a new entry, and where it came from was lost."""
    old = services.entry_create(agent=agent_a, category="decisions", content="Use Redis for the cache")
    written = timezone.now() - timedelta(days=40)
    entry = services.entry_create(
        agent=agent_a,
        category="decisions",
        content="Use Memcached for the cache",
        source="extraction",
        created_by="sleep",
        created_at=written,
        legacy_id="decisions.md#3",
        source_session_id=4242,
        source_message_ids=[7, 8],
        confidence=0.8,
        supersedes_id=old.pk,
    )
    used = timezone.now() - timedelta(days=2)
    VaultEntry.objects.filter(pk=entry.pk).update(access_count=5, last_accessed_at=used)
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    restored = services.entry_restore_deleted(entry_id=entry.pk, changed_by="dave")
    restored.refresh_from_db()
    assert (restored.created_at, restored.created_by, restored.source) == (written, "sleep", "extraction")
    assert (restored.source_session_id, restored.source_message_ids) == (4242, [7, 8])
    assert (restored.confidence, restored.access_count, restored.last_accessed_at) == (0.8, 5, used)
    assert (restored.legacy_id, restored.supersedes_id) == ("decisions.md#3", old.pk)
    assert restored.updated_at > written


def test_a_restore_drops_the_links_that_no_longer_hold(agent_a):
    """Its legacy id taken by an entry imported since, or the entry it superseded now superseded by
    another (or live again): the entry comes back without them, rather than not at all."""
    old = services.entry_create(agent=agent_a, category="decisions", content="Deploy on Fridays")
    entry = services.entry_create(
        agent=agent_a,
        category="decisions",
        content="Never deploy on Fridays",
        legacy_id="decisions.md#1",
        supersedes_id=old.pk,
    )
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    services.entry_create(agent=agent_a, category="decisions", content="Deploy any day", supersedes_id=old.pk)
    services.entry_create(agent=agent_a, category="decisions", content="imported", legacy_id="decisions.md#1")
    restored = services.entry_restore_deleted(entry_id=entry.pk, changed_by="dave")
    assert (restored.legacy_id, restored.supersedes_id) == ("", None)


def test_an_entry_deleted_before_deletions_kept_its_state_is_restored_as_written_now(agent_a):
    entry = services.entry_create(agent=agent_a, category="lessons", content="Pin the Python version")
    services.entry_delete(entry_id=entry.pk, deleted_by="carol")
    EntryVersion.objects.filter(entry_id=entry.pk).update(restore_state={})
    before = timezone.now()
    restored = services.entry_restore_deleted(entry_id=entry.pk, changed_by="dave")
    assert (restored.created_by, restored.source) == ("dave", "ui")
    assert restored.created_at >= before


def test_restoring_a_deleted_entry_needs_its_deletion_in_the_history(agent_a, entry_b):
    with pytest.raises(NotFound):
        services.entry_restore_deleted(entry_id=10**9, changed_by="x")
    services.entry_update(entry_id=entry_b.pk, changes=services.EntryChanges(content="B2"), changed_by="t")
    services.entry_delete(entry_id=entry_b.pk, deleted_by="t")
    other = services.entry_create(agent=agent_a, category="decisions", content="other")
    services.entry_delete(entry_id=other.pk, deleted_by="t")
    version_of_b = EntryVersion.objects.filter(entry_id=entry_b.pk).earliest("pk")
    with pytest.raises(InvalidInput):
        services.entry_restore_deleted(entry_id=other.pk, version_id=version_of_b.pk, changed_by="x")
