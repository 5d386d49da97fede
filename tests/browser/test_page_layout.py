"""Every curator page, on a phone (390 px) and a laptop (1280 px): nothing wider than the window,
no control cut off, no content clipped inside a box. Runs on the screenshots command's demo data,
which has long diffs, tables and files like a real project."""

import pytest

from memoryproject.management.commands.screenshots import (
    ADMIN_PASSWORD,
    ADMIN_USER,
    DEMO_PASSWORD,
    DEMO_USER,
    demo_seed,
)
from sessions_app.models import Session
from vault.models import CompactionRun, VaultEntry

pytestmark = pytest.mark.django_db(transaction=True)

# Run in the page: a list of what a user would see as broken. Controls are checked against the
# window and against every ancestor that clips or scrolls; any box whose content is wider than
# the box itself (a table scrolled sideways, text cut off) counts too, except code blocks.
LAYOUT_PROBLEMS_JS = """
() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  const name = (el) => {
    const text = String(el.innerText || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 30);
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).join(".") : "") +
      (text ? ` "${text}"` : "");
  };
  const hidden = (el) => el.closest(".skip-link, .visually-hidden, [hidden], details:not([open]) > :not(summary)");
  if (document.documentElement.scrollWidth > width) {
    problems.push(`page is ${document.documentElement.scrollWidth}px wide in a ${width}px window`);
  }
  const controls = "a[href], button, input:not([type=hidden]), select, textarea, summary, meter";
  for (const el of document.querySelectorAll(controls)) {
    const box = el.getBoundingClientRect();
    if (box.width < 2 || box.height < 2 || hidden(el)) continue;
    if (box.left < -1 || box.right > width + 1) {
      problems.push(`${name(el)} reaches ${Math.round(box.left)}..${Math.round(box.right)}px`);
      continue;
    }
    for (let parent = el.parentElement; parent; parent = parent.parentElement) {
      if (getComputedStyle(parent).overflowX === "visible") continue;
      const outer = parent.getBoundingClientRect();
      if (box.left < outer.left - 1 || box.right > outer.right + 1) {
        problems.push(`${name(el)} is cut off by ${name(parent)}`);
        break;
      }
    }
  }
  // Nothing may stick out of the bordered box it sits in (a card, an entry, a queue item).
  const boxes = ".card, .entry, .review-item, .msg, .preview, .confirm, .secret";
  for (const el of document.querySelectorAll(`:is(${boxes}) *`)) {
    const box = el.getBoundingClientRect();
    if (box.width < 2 || box.height < 2 || hidden(el)) continue;
    const scroller = el.parentElement.closest("pre");  // a code block scrolls its own long lines
    if (scroller && getComputedStyle(scroller).overflowX !== "visible") continue;
    const outer = el.parentElement.closest(boxes).getBoundingClientRect();
    if (box.left < outer.left - 1 || box.right > outer.right + 1) {
      problems.push(`${name(el)} sticks out of its box (${Math.round(box.left)}..${Math.round(box.right)}px in ${Math.round(outer.left)}..${Math.round(outer.right)}px)`);
    }
  }
  for (const el of document.querySelectorAll("body *")) {
    if (["INPUT", "TEXTAREA", "SELECT", "PRE", "CODE"].includes(el.tagName) || el.closest("pre") || hidden(el)) continue;
    const style = getComputedStyle(el);
    if (style.overflowX === "visible" || style.display === "inline" || el.clientWidth <= 1) continue;
    if (style.textOverflow === "ellipsis" && el.title) continue;  // clipped on purpose, full text in its title
    if (el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${name(el)} clips its content (${el.scrollWidth}px in ${el.clientWidth}px)`);
    }
  }
  return problems;
}
"""


def curator_pages(demo: dict) -> list[str]:
    project = demo["project"].slug
    agent = f"/projects/{project}/agents/dev"
    run = CompactionRun.objects.filter(project=demo["project"]).latest("pk")
    edited = demo["edited"].pk
    task = VaultEntry.objects.filter(category="tasks", agent__slug="dev").latest("pk").pk
    sessions = Session.objects.filter(agent__project=demo["project"], agent__slug="dev")
    return [
        "/",
        "/search/?q=postgres",
        "/search/?q=postgresql&kind=",
        "/search/?q=release+notes&kind=entries&status=active",
        f"{agent}/",
        *(f"{agent}/?category={c}" for c in ("decisions", "lessons", "tasks", "projects", "handoffs")),
        f"/entries/{edited}/",
        f"/entries/{demo['newer'].pk}/",
        f"/entries/{task}/",
        f"/entries/{edited}/edit/",
        f"/entries/{edited}/delete/",
        f"/projects/{project}/review/",
        f"{agent}/sessions/",
        *(f"{agent}/sessions/{session.pk}/" for session in sessions),
        f"{agent}/files/",
        f"{agent}/files/?path=MEMORY.md",
        f"/projects/{project}/maintenance/",
        f"/projects/{project}/maintenance/runs/{run.pk}/",
        f"/projects/{project}/policies/",
        f"/projects/{project}/settings/",
        f"/projects/{project}/tokens/{demo['project'].tokens.filter(revoked_at__isnull=True).first().pk}/revoke/",
    ]


@pytest.mark.parametrize("width", [390, 1280])
def test_no_curator_page_is_wider_than_the_window_or_cuts_a_control(browser, live_server, settings, width):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    demo = demo_seed()
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
    page = context.new_page()
    problems = []
    try:
        page.goto("/login/")
        problems += [f"/login/: {p}" for p in page.evaluate(LAYOUT_PROBLEMS_JS)]
        page.get_by_label("Username").fill(DEMO_USER)
        page.get_by_label("Password").fill(DEMO_PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")
        for url in curator_pages(demo):
            response = page.goto(url)
            assert response.ok, f"{url} answered {response.status}"
            for details in page.locator("details").all():  # history diffs and editors, opened
                if details.is_visible():
                    details.evaluate("el => el.open = true")
            problems += [f"{url}: {p}" for p in page.evaluate(LAYOUT_PROBLEMS_JS)]
    finally:
        context.close()
    assert problems == [], "\n".join(problems)


def test_the_admin_entry_list_fits_a_laptop_with_one_line_per_entry(browser, live_server, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    demo = demo_seed()
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto("/admin/login/")
        page.get_by_label("Username").fill(ADMIN_USER)
        page.get_by_label("Password").fill(ADMIN_PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.goto("/admin/vault/vaultentry/")
        rows = page.locator("#result_list tbody tr")
        assert rows.count() == VaultEntry.objects.count() > 20
        heights = rows.evaluate_all("rows => rows.map(row => row.getBoundingClientRect().height)")
        assert max(heights) < 2 * min(heights) + 1, heights  # no row wraps its content
        problems = page.evaluate(LAYOUT_PROBLEMS_JS)
        assert problems == [], "\n".join(problems)
        page.goto(f"/admin/vault/vaultentry/{demo['edited'].pk}/change/")
        problems = page.evaluate(LAYOUT_PROBLEMS_JS)
        assert problems == [], "\n".join(problems)
    finally:
        context.close()


LONG_WORD = "unbroken" + "x" * 292
LONG_URL = "https://docs.example.com/" + "a-very-long-path-segment/" * 12 + "?q=" + "y" * 40
LONG_CODE = "SELECT " + ", ".join(f"ledger_column_{n}" for n in range(40)) + " FROM ledger;"
LONG_TEXT = f"Lighthouse note: {LONG_WORD}\n\nSee {LONG_URL}\n\n    {LONG_CODE}\n"


@pytest.mark.parametrize("width", [390, 1366])
def test_long_unbroken_words_urls_and_code_lines_never_widen_a_page(logged_in, agent_a, width):
    from sessions_app import services as session_services
    from vault import services

    session = session_services.messages_append(
        agent=agent_a,
        session_key="long-lines",
        messages=[
            {"role": "user", "text": LONG_TEXT},
            {"role": "assistant", "text": f"Noted. {LONG_TEXT}"},
        ],
    ).session
    session_services.session_close(agent=agent_a, session=session, summary=LONG_TEXT)
    entry = services.entry_create(agent=agent_a, category="lessons", content=LONG_TEXT)
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    problems = []
    for url in [
        f"/projects/acme/agents/agent-a/sessions/{session.pk}/",
        "/projects/acme/agents/agent-a/sessions/",
        "/search/?q=lighthouse&kind=messages",
        "/search/?q=lighthouse&kind=entries",
        "/search/?q=lighthouse",
        "/projects/acme/agents/agent-a/?category=lessons",
        f"/entries/{entry.pk}/",
    ]:
        response = page.goto(url)
        assert response.ok, f"{url} answered {response.status}"
        if not url.endswith(("/sessions/", "kind=entries")):  # these show no text, or a headline
            assert LONG_WORD[:40] in page.content(), url
        for details in page.locator("details").all():
            if details.is_visible():
                details.evaluate("el => el.open = true")
        problems += [f"{url}: {p}" for p in page.evaluate(LAYOUT_PROBLEMS_JS)]
    assert problems == [], "\n".join(problems)


def test_the_admin_pages_name_their_icon_so_the_browser_asks_for_no_missing_favicon(
    browser, live_server, settings
):
    """Without an icon link a browser asks for /favicon.ico, which is a 404 logged in the console
    (headless Chromium does not ask, so the link itself is checked, as base.html has one)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    demo = demo_seed()
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    icons = {}
    try:
        page.goto("/admin/login/")
        icons["/admin/login/"] = page.locator("link[rel~=icon]").count()
        page.get_by_label("Username").fill(ADMIN_USER)
        page.get_by_label("Password").fill(ADMIN_PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/admin/")
        for url in [
            "/admin/",
            "/admin/vault/vaultentry/",
            f"/admin/vault/vaultentry/{demo['edited'].pk}/change/",
        ]:
            page.goto(url)
            icons[url] = page.locator("link[rel~=icon]").count()
        page.goto("/")
        icons["/"] = page.locator("link[rel~=icon]").count()
    finally:
        context.close()
    assert icons == dict.fromkeys(icons, 1)


@pytest.mark.parametrize("width", [390, 1280])
def test_a_token_made_in_the_admin_by_keyboard_shows_its_secret_once_and_it_works(
    browser, live_server, settings, width
):
    """The admin's add form, filled and sent from the keyboard: the page that answers shows the
    secret in a field that fits the window (not in a message the next page would carry in a cookie),
    the secret authenticates against the API, and the next page does not show it again."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    demo_seed()
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto("/admin/login/")
        page.get_by_label("Username").fill(ADMIN_USER)
        page.get_by_label("Password").fill(ADMIN_PASSWORD)
        page.get_by_label("Password").press("Enter")
        page.goto("/admin/vault/apitoken/add/")
        page.get_by_label("Project").focus()
        page.keyboard.press("ArrowDown")  # the first project, Acme
        page.get_by_label("Scope").select_option("read")
        page.get_by_label("Name").focus()
        page.keyboard.type("laptop by keyboard")
        page.keyboard.press("Enter")
        secret_field = page.locator("#new-secret")
        secret_field.wait_for()
        secret = secret_field.input_value()
        assert secret.startswith("mem_"), secret
        assert page.evaluate(LAYOUT_PROBLEMS_JS) == []
        assert all(secret not in cookie["value"] for cookie in context.cookies())
        response = context.request.get(
            f"{live_server.url}/api/v1/agents", headers={"Authorization": f"Bearer {secret}"}
        )
        assert response.status == 200, response.text()
        page.get_by_role("link", name="Back to the tokens").click()
        page.get_by_text("laptop by keyboard").wait_for()
        assert secret not in page.content()
    finally:
        context.close()
