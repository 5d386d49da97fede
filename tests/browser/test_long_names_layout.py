"""Names agents and curators choose may be long and have no space to break at: a 64-character agent
slug (the most the API takes), a chat id or model id of a hundred characters, a workspace path, a
token name. None of them may widen a page, on a phone or a laptop. (Before, a 64-character slug made
every page of its agent 1117 px wide in a 390 px window.)"""

import pytest

from sessions_app import services as session_services
from tests.browser.test_page_layout import LAYOUT_PROBLEMS_JS
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

SLUG = "a" * 64


@pytest.mark.parametrize("width", [390, 1280])
def test_long_unbroken_names_never_widen_a_page(logged_in, project, width):
    agent = services.agent_ensure(project=project, slug=SLUG)
    services.entry_create(agent=agent, category="decisions", content="We decided to keep long names")
    path = "memories/" + "p" * 120 + ".md"
    services.file_write(agent=agent, path=path, content="long names kept", changed_by="t")
    result = session_services.messages_append(
        agent=agent,
        session_key="chat-" + "c" * 100,
        model_id="model-" + "m" * 100,
        messages=[{"role": "user", "text": "long names kept"}],
    )
    services.token_create(project=project, agent=agent, name="n" * 200)
    base = f"/projects/acme/agents/{SLUG}"
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    problems = []
    for url in [
        "/",
        f"{base}/",
        f"{base}/sessions/",
        f"{base}/sessions/{result.session.pk}/",
        f"{base}/files/",
        f"{base}/files/?path={path}",
        "/search/?q=long+names+kept",
        "/projects/acme/settings/",
    ]:
        assert page.goto(url).ok, url
        problems += [f"{url}: {problem}" for problem in page.evaluate(LAYOUT_PROBLEMS_JS)]
    assert problems == [], "\n".join(problems)
