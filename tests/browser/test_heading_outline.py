"""The headings a screen reader lists, page by page: one h1, the page's own, and no level skipped, with
markdown headings in memory ("# Memory", "## Rollout") ranked below the page's headings they sit under,
not as the page's title."""

import pytest

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

OUTLINE_JS = """
() => [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")]
  .filter(h => !h.closest("[hidden], details:not([open]) > :not(summary)"))
  .map(h => Number(h.tagName[1]) + " " + h.innerText.trim().slice(0, 30))
"""


def problems(outline: list[str], *, skips_allowed: bool = False) -> list[str]:
    found, last = [], 0
    levels = [int(item.split(" ", 1)[0]) for item in outline]
    if levels.count(1) != 1 or levels[0] != 1:
        found.append(f"the page's title is not its one h1: {outline}")
    for level, item in zip(levels, outline, strict=True):
        if level > last + 1 and not skips_allowed:
            found.append(f"h{last} then {item}")
        last = level
    return found


@pytest.mark.parametrize("width", [390, 1366])
def test_memory_headings_rank_below_the_pages_and_every_page_has_one_h1(logged_in, agent_a, width):
    entry = services.entry_create(
        agent=agent_a, category="projects", content="# Ledger rollout\n\n## Steps\n\nMove the ledger #ledger"
    )
    services.file_write(
        agent=agent_a,
        path="MEMORY.md",
        content="# Memory\n\n## Ledger\n\nThe ledger moved.\n",
        changed_by="t",
    )
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    found = []
    for url, skips_allowed in [
        ("/projects/acme/agents/agent-a/?category=projects", False),
        (f"/entries/{entry.pk}/", False),
        (f"/entries/{entry.pk}/edit/", False),
        ("/projects/acme/agents/agent-a/files/?path=MEMORY.md", False),
        (
            "/search/?q=ledger",
            True,
        ),  # results are a list, not sections: an excerpt's heading sits under the h1
    ]:
        page.goto(url)
        found += [f"{url}: {p}" for p in problems(page.evaluate(OUTLINE_JS), skips_allowed=skips_allowed)]
    assert found == [], "\n".join(found)
