"""A consolidation run's refusal lists the facts the model's rewrite would have dropped. They were
joined with "; " into one line of a <pre>, which scrolled sideways on a phone; each is now a line of
its own, and a long one wraps (as does the reason, which names a long setting)."""

import pytest
from django.utils import timezone

from tests.browser.test_page_layout import LAYOUT_PROBLEMS_JS
from tests.fake_llm import fake_llm  # noqa: F401
from vault import services
from vault.maintenance.consolidation import consolidation_run_one
from vault.models import CompactionRun, RunTrigger

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = [f"Service number {n} runs on host h{n}.internal.example.com behind the gateway" for n in range(8)]


def test_a_refusals_dropped_facts_fit_a_phone_one_a_line(logged_in, agent_a, fake_llm):  # noqa: F811
    services.file_write(
        agent=agent_a, path="MEMORY.md", content="".join(f"- {fact}\n" for fact in FACTS), changed_by="t"
    )
    services.daily_note_append(agent=agent_a, when=timezone.now(), text="\n- Uses Go\n", changed_by="t")
    fake_llm.reply_json(
        {
            "should_update": True,
            "reason": "weekly consolidation",
            "memory_content": "# MEMORY.md\n- Uses Go\n",
        }
    )
    assert consolidation_run_one(agent=agent_a, trigger=RunTrigger.API)["refused"] is True
    run = CompactionRun.objects.get(kind="consolidation")
    page = logged_in
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.goto(f"/projects/acme/maintenance/runs/{run.pk}/").ok
    page.get_by_text("details").click()
    details = page.locator(".changes details")
    assert details.get_by_role("listitem").all_inner_texts() == FACTS
    problems = page.evaluate(LAYOUT_PROBLEMS_JS)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("width", [390, 1280], ids=["phone", "desktop"])
def test_a_changes_lists_of_ids_are_shown_one_item_a_line(logged_in, agent_a, settings, width):
    """A change's list values (the merged_entry_ids of a category cap) were shown as one Python list,
    "[1, 2, 3, ...]", wrapping wherever the line ran out. Each item is a line of its own, as a text's
    lines are, on a phone and on a desktop; an empty list says so."""
    from memoryproject import maintenance

    settings.MEMORY_VAULT_CAP, settings.MEMORY_VAULT_KEEP = 3, 1
    for n in range(40):
        services.entry_create(agent=agent_a, category="lessons", content=f"Lesson {n}: pin the base image")
    run = maintenance.compaction_run(project=agent_a.project, dry_run=False, trigger=RunTrigger.ADMIN)
    [merge] = [c for c in run.changes if c["action"] == "merge-entries"]
    merged = merge["details"]["merged_entry_ids"]
    assert len(merged) == 39
    run.changes.append({"step": "T", "action": "trim", "target": "x", "reason": "r", "details": {"ids": []}})
    run.save(update_fields=["changes"])
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    assert page.goto(f"/projects/acme/maintenance/runs/{run.pk}/").ok
    row = page.locator(".changes tbody tr", has_text="merge-entries")
    row.get_by_text("details").click()
    listed = row.locator("dt:text-is('merged_entry_ids') + dd li")
    assert listed.all_inner_texts() == [str(pk) for pk in merged]
    tops = [box["y"] for box in (item.bounding_box() for item in listed.all())]
    assert tops == sorted(tops) and len(set(tops)) == len(tops)  # one a line
    assert row.locator("dt:text-is('summary_entry_id') + dd").inner_text() == str(
        merge["details"]["summary_entry_id"]
    )
    empty = page.locator(".changes tbody tr", has_text="trim")
    empty.get_by_text("details").click()
    assert empty.locator("dt:text-is('ids') + dd").inner_text() == "(none)"
    problems = page.evaluate(LAYOUT_PROBLEMS_JS)
    assert problems == [], "\n".join(problems)
