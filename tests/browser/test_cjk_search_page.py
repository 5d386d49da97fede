"""Chinese, Japanese and Korean memory on the curator's search page, on a phone and a laptop: the
result is found from the search box, its snippet shows the match even deep inside a text without
spaces, and exactly the words asked for are marked (a run of CJK characters has no spaces around its
words, so a mark may neither stop at one nor run on past the query into the rest of the run)."""

import pytest
from playwright.sync_api import expect

from sessions_app import services as session_services
from tests.browser.test_page_layout import LAYOUT_PROBLEMS_JS
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

DECISION = "我们决定使用Redis作为会话缓存，因为它很快。"
# A long paragraph without a space: the match sits far past the first 240 characters.
LONG = "前面的说明" * 120 + "部署密钥在保险库里" + "后面的说明" * 60


def _marks(page, selector):
    return page.locator(f"{selector} .snippet mark").all_inner_texts()


@pytest.mark.parametrize("width", [360, 1280])
def test_cjk_memory_is_found_and_marked_exactly_from_the_search_box(logged_in, agent_a, width):
    decision = services.entry_create(agent=agent_a, category="decisions", content=DECISION)
    long_entry = services.entry_create(agent=agent_a, category="lessons", content=LONG)
    session_services.messages_append(
        agent=agent_a, session_key="zh", messages=[{"role": "user", "text": "请记住：" + DECISION}]
    )
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/")
    page.get_by_label("Search memory").fill("会话缓存")
    page.get_by_label("Search memory").press("Enter")
    entry = page.locator(".result-entry").filter(has=page.get_by_role("link", name=f"Entry #{decision.pk}"))
    expect(entry).to_have_count(1)
    assert _marks(page, ".result-entry") == ["会话缓存"]
    assert _marks(page, ".result-message") == ["会话缓存"]

    page.goto("/search/?q=Redis")
    assert _marks(page, ".result-entry") == ["Redis"]
    assert _marks(page, ".result-message") == ["Redis"]

    # A question is matched by the pairs of characters it shares with the memory: those are marked.
    page.goto("/search/?q=" + "会话缓存用什么")
    assert _marks(page, ".result-entry") == ["会话缓存"]

    page.goto("/search/?q=部署密钥")
    result = page.locator(".result-entry").filter(
        has=page.get_by_role("link", name=f"Entry #{long_entry.pk}")
    )
    expect(result).to_have_count(1)
    assert result.locator(".snippet mark").all_inner_texts() == ["部署密钥"]
    assert page.evaluate(LAYOUT_PROBLEMS_JS) == []
