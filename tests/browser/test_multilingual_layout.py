"""Memory in Arabic, Hebrew, Chinese, Japanese and Korean, with emoji, markup and a long address, on
every curator page and the admin's entry and file pages, at 360 px (the narrowest phones in use) and
on a laptop: nothing sticks out or widens the page, and nothing in the text runs as script. (Before, at
360 px the session page's context meter widened the page, and the admin's entry and file pages were
3,000 px wide on a laptop, the versions' and the file's text never wrapping.)"""

import pytest
from django.contrib.auth.models import User

from sessions_app import services as session_services
from tests.browser.test_page_layout import LAYOUT_PROBLEMS_JS
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = (
    "<script>window.ran = 1</script> <img src=x onerror='window.ran = 2'> **bold** [x](javascript:alert(3)) "
    + "مرحبا بالعالم هذا نص عربي طويل " * 3
    + "שלום עולם 😀👩\u200d💻🇯🇵 "
    + "日本語のテキストです。" * 30
    + " https://example.com/"
    + "a" * 300
    + " "
    + "한국어텍스트" * 40
    + " #标签 #تاج"
)


@pytest.mark.parametrize("width", [360, 1280])
def test_multilingual_memory_never_widens_a_page(logged_in, agent_a, curator, width):
    entry = services.entry_create(agent=agent_a, category="decisions", content=TEXT, tags=["日本語", "عربي"])
    services.entry_create(agent=agent_a, category="decisions", content="pending " + TEXT, status="pending")
    services.entry_curator_update(
        entry_id=entry.pk,
        changes=services.EntryChanges(
            category="decisions", content=TEXT + " edited", tags=["日本語"], importance=0.5, status="active"
        ),
        changed_by="t",
        seen_updated_at=None,
    )
    file, _ = services.file_write(agent=agent_a, path="MEMORY.md", content=TEXT, changed_by="t")
    services.file_write(agent=agent_a, path="MEMORY.md", content=TEXT + " again", changed_by="t")
    session = session_services.messages_append(
        agent=agent_a,
        session_key="chat-" + "日本" * 20,
        messages=[{"role": "user", "text": TEXT}, {"role": "assistant", "text": TEXT}],
    ).session
    User.objects.filter(pk=curator.pk).update(is_staff=True, is_superuser=True)
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    problems = []
    for url in [
        "/",
        "/projects/acme/agents/agent-a/",
        f"/entries/{entry.pk}/",
        f"/entries/{entry.pk}/edit/",
        f"/entries/{entry.pk}/delete/",
        "/projects/acme/review/",
        "/projects/acme/agents/agent-a/files/?path=MEMORY.md",
        "/projects/acme/agents/agent-a/sessions/",
        f"/projects/acme/agents/agent-a/sessions/{session.pk}/",
        "/search/?q=日本語",
        "/search/?q=عربي",
        f"/admin/vault/vaultentry/{entry.pk}/change/",
        f"/admin/vault/workspacefile/{file.pk}/change/",
    ]:
        assert page.goto(url).ok, url
        problems += [f"{url}: {problem}" for problem in page.evaluate(LAYOUT_PROBLEMS_JS)]
        assert page.evaluate("window.ran") is None, url
    assert problems == [], "\n".join(problems)
