"""The admin's version tables on a phone, and text previews that never cut what reads as one character.

On a 375 px phone the entry's and the file's version tables (eight and four columns) were wider than
the window and scrolled sideways; they now show each version as a block of labelled fields. Previews
(the admin's entry list, the dashboard, the review queue, an entry's supersede chain) were cut by code
points: an emoji with a skin tone or a joiner, a flag, or a letter and its combining accent lost its
second half (👩 without 💻, e without its accent)."""

import re

import pytest
from django.contrib.auth.models import User

from tests.browser.test_page_layout import LAYOUT_PROBLEMS_JS
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)


def _edited_entry(agent, content):
    entry = services.entry_create(agent=agent, category="decisions", content=content, tags=["deploy"])
    for n in range(2):
        services.entry_curator_update(
            entry_id=entry.pk,
            changes=services.EntryChanges(
                category="decisions", content=f"{content} edit {n}", tags=["deploy", f"v{n}"],
                importance=0.5, status="active",
            ),
            changed_by="user:cora-with-a-long-name",
            seen_updated_at=None,
        )  # fmt: skip
    return entry


@pytest.mark.parametrize("width", [375, 1280])
def test_the_admin_version_tables_fit_a_phone_and_a_laptop(logged_in, agent_a, curator, width):
    entry = _edited_entry(agent_a, "We deploy on Fridays after the checks pass. " * 6)
    file, _ = services.file_write(agent=agent_a, path="MEMORY.md", content="- one fact", changed_by="t")
    services.file_write(agent=agent_a, path="MEMORY.md", content="- one fact\n- two", changed_by="t")
    User.objects.filter(pk=curator.pk).update(is_staff=True, is_superuser=True)
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    problems = []
    for url in [
        f"/admin/vault/vaultentry/{entry.pk}/change/",
        f"/admin/vault/workspacefile/{file.pk}/change/",
    ]:
        assert page.goto(url).ok, url
        problems += [f"{url}: {problem}" for problem in page.evaluate(LAYOUT_PROBLEMS_JS)]
        # Nothing in the page scrolls sideways either (a table in a scrolling box would not widen it).
        wide = page.evaluate(
            """() => [...document.querySelectorAll('#content *')].filter(el => el.scrollWidth >
                 el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible').map(el =>
                 el.tagName + '.' + el.className + ' ' + el.scrollWidth + '>' + el.clientWidth)"""
        )
        problems += [f"{url}: scrolls sideways: {box}" for box in wide]
        if width < 800:  # each version's fields are labelled, the table's heading being hidden
            assert page.locator(".inline-group td.field-changed_by").first.evaluate(
                "td => getComputedStyle(td, '::before').content"
            ) not in ("none", "normal", '""')
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("cluster", ["👩\u200d💻", "👍🏽", "🇯🇵", "e\u0301"])
def test_previews_never_cut_what_reads_as_one_character(logged_in, agent_a, curator, cluster):
    older = services.entry_create(agent=agent_a, category="decisions", content=cluster * 400)
    newer = services.entry_create(
        agent=agent_a, category="decisions", content="We replaced the icons", supersedes_id=older.pk
    )
    User.objects.filter(pk=curator.pk).update(is_staff=True, is_superuser=True)
    page = logged_in
    previews = {
        "/": "ol.activity li a",
        f"/entries/{newer.pk}/": f"li:has(a[href='/entries/{older.pk}/'])",
        "/admin/vault/vaultentry/": "#result_list .entry-preview",
    }
    cut = []
    for url, selector in previews.items():
        assert page.goto(url).ok, url
        texts = page.locator(selector).all_inner_texts()
        if url == "/admin/vault/vaultentry/":
            texts += page.locator(selector).evaluate_all("els => els.map(el => el.title)")
        assert texts, url
        for text in texts:
            body = re.sub(r"[\s…]|#\d+|Superseded|We replaced the icons", "", text)
            if body != cluster * (len(body) // len(cluster)):
                cut.append(f"{url}: {body[-6:]!r}")
    assert cut == []
