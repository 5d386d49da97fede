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
