import pytest
from playwright.sync_api import expect

from vault import services
from vault.models import EntryStatus, VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_searches_as_you_type_from_the_top_box(logged_in, entry_a):
    page = logged_in
    page.goto("/")
    page.get_by_label("Search memory").press_sequentially("postgre", delay=30)
    results = page.locator("#search-results")
    expect(results.locator("mark")).to_have_text("PostgreSQL")
    assert page.url.endswith("/")  # no navigation: results swapped in place
    results.get_by_role("link", name=f"Entry #{entry_a.pk}").click()
    expect(page.get_by_role("heading", name=f"Entry #{entry_a.pk}")).to_be_visible()


MARK_LIVE_REGIONS = (
    "() => document.querySelectorAll('[aria-live], [role=status]').forEach(el => el.dataset.before = '')"
)


@pytest.mark.parametrize("start", ["/", "/search/"])
def test_a_screen_reader_hears_how_many_results_each_search_found(logged_in, entry_a, start):
    """A live region is announced when its content changes, not when it is swapped in with its content
    already there: the sentence saying how many results were found must change inside a region that was
    on the page before the search (the results list itself is replaced as a whole)."""
    page = logged_in
    page.goto(start)
    page.evaluate(MARK_LIVE_REGIONS)
    box = page.get_by_label("Search memory") if start == "/" else page.locator("#search-q")
    box.fill("postgresql")
    live = page.locator("[aria-live=polite], [aria-live=assertive], [role=status]")
    status = live.filter(has_text="1 result for “postgresql”")
    expect(status).to_have_count(1)
    expect(status).to_have_attribute("data-before", "")
    box.fill("zebra crossing")
    expect(live.filter(has_text="0 results for “zebra crossing”")).to_have_attribute("data-before", "")
    expect(page.locator("#search-results")).to_contain_text("Nothing found")


def test_a_curator_clears_a_queue_of_50_from_the_keyboard(logged_in, project, agent_a):
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=True)
    ids = [
        services.entry_create(
            agent=agent_a, category="lessons", content=f"Queued lesson {i:02d} about retries"
        ).pk
        for i in range(50)
    ]
    page = logged_in
    page.goto("/projects/acme/review/")
    expect(page.locator("#review-count")).to_have_text("50")
    expect(page.locator(f"#review-{ids[0]}")).to_have_class("review-item current")
    # j/k move; x selects; e opens the editor.
    page.keyboard.press("j")
    expect(page.locator(f"#review-{ids[1]}")).to_have_class("review-item current")
    page.keyboard.press("k")
    page.keyboard.press("e")
    editor = page.locator(f"#content-{ids[0]}")
    expect(editor).to_be_focused()
    editor.fill("Edited from the keyboard")
    page.keyboard.press("Escape")
    for i in range(50):
        page.keyboard.press("r" if i % 2 else "a")
        expect(page.locator("#review-count")).to_have_text(str(49 - i))
    statuses = dict(VaultEntry.objects.filter(pk__in=ids).values_list("pk", "status"))
    assert [statuses[pk] for pk in ids] == [
        EntryStatus.REJECTED if i % 2 else EntryStatus.ACTIVE for i in range(50)
    ]
    assert VaultEntry.objects.get(pk=ids[0]).content == "Edited from the keyboard"


def test_it_bulk_rejects_selected_entries(logged_in, project, agent_a):
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=True)
    ids = [
        services.entry_create(agent=agent_a, category="tasks", content=f"Spam task {i}").pk for i in range(3)
    ]
    page = logged_in
    page.goto("/projects/acme/review/")
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_role("status")).to_contain_text("2 entries rejected")
    statuses = [VaultEntry.objects.get(pk=pk).status for pk in ids]
    assert statuses == [EntryStatus.REJECTED, EntryStatus.REJECTED, EntryStatus.PENDING]


def test_it_previews_a_compaction(logged_in, project, agent_a):
    for i in range(3):
        services.entry_create(agent=agent_a, category="handoffs", content=f"Handoff {i} for the weekly sync")
    page = logged_in
    page.goto("/projects/acme/maintenance/")
    page.get_by_role("button", name="Preview compaction").click()
    record = page.locator("#compaction-preview .run-record")
    expect(record).to_contain_text("Preview (dry run): nothing was changed")
    expect(record).to_contain_text("Changes")
    assert page.url.endswith("/projects/acme/maintenance/")
    expect(page.get_by_role("cell", name="No runs recorded yet.")).to_be_visible()
