"""Arabic and Hebrew memory reads right to left on the curator pages: each paragraph, list item and
message takes its direction from its own text, so a sentence mixing Arabic with a Latin name keeps its
word order (shown left to right, "استخدم Redis للتخزين" put its first word at the left, where a reader of
Arabic reads it last), while an English paragraph beside it stays left to right."""

import pytest

from sessions_app import services as session_services
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

ARABIC = "استخدم Redis للتخزين المؤقت."
HEBREW = "השתמש ב-Postgres לגיבוי."

# The x of the middle of `word` in the innermost paragraph (or item, or message) under `selector` whose
# text holds `text` (a marked word is a text node of its own).
WORD_X_JS = """([selector, text, word]) => {
  const blocks = [...document.querySelectorAll(selector)].flatMap(
    (el) => [el, ...el.querySelectorAll("p, li")]).filter((el) => el.textContent.includes(text));
  const block = blocks[blocks.length - 1];
  if (!block) return null;
  const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(word);
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + word.length);
    const box = range.getBoundingClientRect();
    return box.left + box.width / 2;
  }
  return null;
}"""


def _reads_right_to_left(page, selector, text, first, latin):
    first_x = page.evaluate(WORD_X_JS, [selector, text, first])
    latin_x = page.evaluate(WORD_X_JS, [selector, text, latin])
    assert first_x is not None and latin_x is not None, (page.url, selector)
    return first_x > latin_x


@pytest.mark.parametrize("width", [360, 1280])
def test_arabic_and_hebrew_read_right_to_left(logged_in, agent_a, width):
    entry = services.entry_create(
        agent=agent_a, category="decisions", content=f"{ARABIC}\n\n- {HEBREW}\n\nUse Redis for the cache."
    )
    session = session_services.messages_append(
        agent=agent_a, session_key="rtl", messages=[{"role": "user", "text": ARABIC}]
    ).session
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    for url, selector in [
        ("/projects/acme/agents/agent-a/", ".entry .markdown"),
        (f"/entries/{entry.pk}/", ".markdown"),
        (f"/projects/acme/agents/agent-a/sessions/{session.pk}/", ".msg-text"),
        ("/search/?q=Redis&kind=entries", ".snippet"),
        ("/search/?q=Redis&kind=messages", ".snippet"),
    ]:
        page.goto(url)
        assert _reads_right_to_left(page, selector, ARABIC, "استخدم", "Redis"), url
        if "kind=messages" not in url and "sessions" not in url:
            assert _reads_right_to_left(page, selector, HEBREW, "השתמש", "Postgres"), url
            assert not _reads_right_to_left(page, selector, "Use Redis for", "Use", "cache"), url


def test_arabic_is_typed_right_to_left_in_the_editor_and_the_search_box(logged_in, agent_a):
    entry = services.entry_create(agent=agent_a, category="decisions", content=ARABIC)
    page = logged_in
    page.goto(f"/entries/{entry.pk}/edit/")
    direction = "(el) => getComputedStyle(el).direction"
    assert page.get_by_label("Content").evaluate(direction) == "rtl"
    page.get_by_label("Content").fill("Use Redis")
    assert page.get_by_label("Content").evaluate(direction) == "ltr"
    page.get_by_label("Search memory").fill(HEBREW)
    assert page.get_by_label("Search memory").evaluate(direction) == "rtl"
