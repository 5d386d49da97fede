import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.conftest import HTMX
from vault import services
from vault.models import EntryVersion, ProjectMembership, TokenScope, VaultEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def task_entry(agent_a):
    return services.entry_create(
        agent=agent_a,
        category="tasks",
        content="# Release\n\n- [ ] write notes\n- [x] tag build\n",
        created_by="t",
    )


@pytest.fixture
def token(project):
    return services.token_create(project=project, scope=TokenScope.READ, name="ci")[0]


def pages(entry, agent, project, token, version=None):
    """Every page and action of the curator UI for project A, as (method, url)."""
    yield "get", reverse("dashboard")
    yield "get", reverse("search") + "?q=postgresql"
    yield "get", reverse("vault-agent", args=[project.slug, agent.slug])
    yield "post", reverse("vault-entry-create", args=[project.slug, agent.slug])
    yield "get", reverse("vault-entry-detail", args=[entry.pk])
    yield "get", reverse("vault-entry-card", args=[entry.pk])
    yield "get", reverse("vault-entry-edit", args=[entry.pk])
    yield "post", reverse("vault-entry-edit", args=[entry.pk])
    yield "get", reverse("vault-entry-delete", args=[entry.pk])
    yield "post", reverse("vault-entry-delete", args=[entry.pk])
    yield "post", reverse("vault-entry-task-toggle", args=[entry.pk])
    if version:
        yield "post", reverse("vault-entry-restore", args=[entry.pk, version.pk])
    yield "get", reverse("vault-project-settings", args=[project.slug])
    yield "post", reverse("vault-project-context", args=[project.slug])
    yield "post", reverse("vault-token-create", args=[project.slug])
    yield "get", reverse("vault-token-revoke", args=[project.slug, token.pk])
    yield "post", reverse("vault-token-revoke", args=[project.slug, token.pk])


@pytest.fixture
def edited_entry(entry_a):
    services.entry_update(
        entry_id=entry_a.pk, changes=services.EntryChanges(content="We use PostgreSQL 18"), changed_by="t"
    )
    return entry_a


# --- permissions: the three personas on every page ------------------------------------------------


def test_it_sends_anonymous_users_to_the_login_page(edited_entry, agent_a, project, token):
    version = EntryVersion.objects.get(entry_id=edited_entry.pk)
    client = Client()
    for method, url in pages(edited_entry, agent_a, project, token, version):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login") + "?next="), url
    assert VaultEntry.objects.filter(pk=edited_entry.pk).exists()


def test_it_sends_anonymous_htmx_requests_to_login_with_hx_redirect(entry_a):
    response = Client().get(reverse("vault-entry-card", args=[entry_a.pk]), **HTMX)
    assert response.status_code == 204
    assert response["HX-Redirect"].startswith(reverse("login"))


def test_it_refuses_logged_in_users_who_are_not_curators(client_nc, edited_entry, agent_a, project, token):
    version = EntryVersion.objects.get(entry_id=edited_entry.pk)
    for method, url in pages(edited_entry, agent_a, project, token, version):
        response = getattr(client_nc, method)(url)
        assert response.status_code == 403, url
    assert VaultEntry.objects.filter(pk=edited_entry.pk).exists()


def test_it_hides_another_projects_pages_from_its_curator(client_b, edited_entry, agent_a, project, token):
    version = EntryVersion.objects.get(entry_id=edited_entry.pk)
    for method, url in pages(edited_entry, agent_a, project, token, version):
        if url.startswith((reverse("dashboard") + "?", reverse("search"))) or url == "/":
            continue
        response = getattr(client_b, method)(
            url, {"content": "x", "category": "decisions", "line": 2, "done": 1}
        )
        assert response.status_code == 404, url
    edited_entry.refresh_from_db()
    assert edited_entry.content == "We use PostgreSQL 18"
    token.refresh_from_db()
    assert token.revoked_at is None
    project.refresh_from_db()
    assert project.context.startswith("# Acme")


def test_it_shows_another_curator_nothing_of_this_project_on_dashboard_and_search(client_b, entry_a):
    dashboard = client_b.get(reverse("dashboard")).content.decode()
    assert "Acme" not in dashboard and "PostgreSQL" not in dashboard
    assert "globex" in dashboard.lower()
    search = client_b.get(reverse("search"), {"q": "postgresql"}).content.decode()
    assert "PostgreSQL" not in search
    assert "0 results for “postgresql”" in search


def test_it_lets_staff_without_memberships_see_every_project(project, other_project, entry_a):
    staff = User.objects.create_user("sam", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("dashboard")).content.decode()
    assert "Acme" in page and "Globex" in page
    ProjectMembership.objects.create(user=staff, project=other_project)
    page = client.get(reverse("dashboard")).content.decode()
    assert "Acme" not in page and "Globex" in page


def test_it_lets_superusers_see_every_project(project, other_project):
    admin = User.objects.create_superuser("root", password="x")
    ProjectMembership.objects.create(user=admin, project=other_project)
    client = Client()
    client.force_login(admin)
    page = client.get(reverse("dashboard")).content.decode()
    assert "Acme" in page and "Globex" in page


def test_it_shows_a_curator_without_memberships_no_project(db, project, entry_a):
    from django.contrib.auth.models import Group

    user = User.objects.create_user("carl")
    user.groups.add(Group.objects.create(name="curator"))
    client = Client()
    client.force_login(user)
    page = client.get(reverse("dashboard"))
    assert page.status_code == 200
    assert "not a curator of any project" in page.content.decode()
    assert client.get(reverse("vault-entry-detail", args=[entry_a.pk])).status_code == 404


def test_the_admin_api_and_health_still_answer(client_a, api, admin_token):
    assert Client().get("/admin/").status_code == 302
    assert api.get("/agents", token=admin_token).status_code == 200
    assert Client().get("/healthz").status_code == 200


# --- login -------------------------------------------------------------------------------------------


def test_it_logs_a_curator_in_with_our_template(curator_a):
    client = Client()
    page = client.get(reverse("login"))
    assert b'name="username"' in page.content and b"htmx.min.js" in page.content
    response = client.post(reverse("login"), {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard")
    assert client.get(reverse("dashboard")).status_code == 200


# --- dashboard ---------------------------------------------------------------------------------------


def test_the_dashboard_counts_entries_per_category_and_storage(
    client_a, agent_a, agent_b, entry_a, task_entry
):
    services.file_write(agent=agent_a, path="MEMORY.md", content="x" * 1000, changed_by="t")
    page = client_a.get(reverse("dashboard"))
    assert page.status_code == 200
    html = page.content.decode()
    row = re.search(
        r'<tr>\s*<th scope="row"><a href="[^"]+">agent-a</a>.*?</th>(.*?)</tr>', html, re.S
    ).group(1)
    assert re.findall(r">(\d+)</a></td>", row) == ["1", "0", "1", "0", "0"]
    files = sum(len(f.content.encode()) for f in agent_a.files.filter(deleted_at__isnull=True))
    stored = len(entry_a.content.encode()) + len(task_entry.content.encode()) + files
    assert f'value="{stored}"' in row
    assert "<svg" in html and "2 entries created in the last 30 days" in html
    assert "write notes" in html  # recent activity


def test_the_dashboard_chart_has_a_bar_per_day(client_a, agent_a):
    from datetime import timedelta

    from django.utils import timezone

    for n, days_ago in enumerate((0, 0, 3, 40)):
        services.entry_create(
            agent=agent_a,
            category="lessons",
            content=f"lesson number {n}",
            created_at=timezone.now() - timedelta(days=days_ago),
        )
    chart = client_a.get(reverse("dashboard")).context["chart"]
    assert len(chart.bars) == 30
    assert [bar.count for bar in chart.bars][-1] == 2
    assert [bar.count for bar in chart.bars][-4] == 1
    assert chart.total == 3 and chart.top == 2


# --- agent vault ---------------------------------------------------------------------------------


def test_the_vault_lists_a_category_newest_first_with_counts(client_a, agent_a, entry_a):
    services.entry_create(agent=agent_a, category="decisions", content="Second decision")
    services.entry_create(agent=agent_a, category="lessons", content="A lesson")
    page = client_a.get(reverse("vault-agent", args=["acme", "agent-a"]))
    html = page.content.decode()
    assert html.index("Second decision") < html.index("We decided to use PostgreSQL")
    assert "A lesson" not in html
    assert re.search(r"Decisions <span class=\"count\">2</span>", html)
    assert re.search(r"Lessons <span class=\"count\">1</span>", html)
    lessons = client_a.get(reverse("vault-agent", args=["acme", "agent-a"]), {"category": "lessons"})
    assert "A lesson" in lessons.content.decode()


def test_the_vault_paginates(client_a, agent_a, settings):
    settings.MEMORY_UI_PAGE_SIZE = 2
    for n in range(5):
        services.entry_create(agent=agent_a, category="decisions", content=f"decision number {n}")
    first = client_a.get(reverse("vault-agent", args=["acme", "agent-a"])).content.decode()
    assert "decision number 4" in first and "decision number 2" not in first
    assert "Page 1 of 3" in first
    third = client_a.get(reverse("vault-agent", args=["acme", "agent-a"]), {"page": 3}).content.decode()
    assert "decision number 0" in third and "decision number 1" not in third


def test_the_vault_filters_by_tag_and_source(client_a, agent_a, entry_a):
    services.entry_create(agent=agent_a, category="decisions", content="Imported one #infra", source="import")
    url = reverse("vault-agent", args=["acme", "agent-a"])
    by_tag = client_a.get(url, {"tag": "database"}).content.decode()
    assert "PostgreSQL" in by_tag and "Imported one" not in by_tag
    by_source = client_a.get(url, {"source": "import"}).content.decode()
    assert "Imported one" in by_source and "PostgreSQL" not in by_source


def test_the_vault_answers_htmx_with_the_panel_only(client_a, entry_a):
    response = client_a.get(reverse("vault-agent", args=["acme", "agent-a"]), **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="vault-panel">')
    assert "<html" not in html


def test_the_vault_renders_markdown_without_any_html_from_content(client_a, agent_a):
    services.entry_create(
        agent=agent_a,
        category="decisions",
        content='**bold** <script>alert(1)</script> <img src=x onerror="alert(2)"> [x](javascript:alert(3))',
    )
    html = client_a.get(reverse("vault-agent", args=["acme", "agent-a"])).content.decode()
    assert "<strong>bold</strong>" in html
    assert "<script>alert" not in html and "<img" not in html and "javascript:" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_entry_nested_too_deep_for_the_markdown_parser_still_shows(client_a, agent_a, api, token_a):
    """One small write ("+ " repeated: a list in a list in a list...) made every page showing the
    entry a 500 (RecursionError in the parser): its agent's page, its own page, the review queue."""
    response = api.post(
        "/agents/agent-a/entries", {"category": "lessons", "content": "+ " * 1000 + "end"}, token=token_a
    )
    entry_id = response.json()["id"]
    for url in [
        reverse("vault-agent", args=["acme", "agent-a"]),
        reverse("vault-entry-detail", args=[entry_id]),
    ]:
        response = client_a.get(url)
        assert response.status_code == 200
        assert "+ + + end" in response.content.decode()


def test_the_vault_is_404_for_an_unknown_agent(client_a, project):
    assert client_a.get(reverse("vault-agent", args=["acme", "nobody"])).status_code == 404


def test_it_creates_an_entry_from_the_page(client_a, agent_a):
    url = reverse("vault-entry-create", args=["acme", "agent-a"])
    data = {
        "category": "lessons",
        "content": "Check the cache #perf",
        "tags": "ops, Infra",
        "importance": "0.8",
        "status": "active",
    }
    response = client_a.post(url, data)
    assert response.status_code == 302
    entry = VaultEntry.objects.get(agent=agent_a)
    assert (entry.category, entry.source, entry.importance) == ("lessons", "ui", 0.8)
    assert entry.tags == ["ops", "infra", "perf"]
    assert entry.created_by == "user:alice"


def test_it_shows_create_errors_without_storing(client_a, agent_a):
    url = reverse("vault-entry-create", args=["acme", "agent-a"])
    response = client_a.post(
        url,
        {"category": "lessons", "content": "x", "tags": "bad tag!", "importance": "0.5", "status": "active"},
    )
    assert response.status_code == 422
    assert "Invalid tag" in response.content.decode()
    response = client_a.post(url, {"category": "nope", "content": "x", "importance": "2", "status": "active"})
    assert response.status_code == 422
    assert not VaultEntry.objects.exists()


# --- entry: edit, delete, tasks, history, restore ---------------------------------------------------------


def test_it_edits_inline_and_keeps_a_version(client_a, entry_a):
    url = reverse("vault-entry-edit", args=[entry_a.pk])
    form = client_a.get(url, **HTMX).content.decode()
    assert "<textarea" in form and "We decided to use PostgreSQL" in form and "<html" not in form
    data = {
        "category": "decisions",
        "content": "We use PostgreSQL 18",
        "tags": "database",
        "importance": "0.9",
        "status": "active",
    }
    response = client_a.post(url, data, **HTMX)
    assert response.status_code == 200
    assert (
        "We use PostgreSQL 18" in response.content.decode() and "<textarea" not in response.content.decode()
    )
    entry_a.refresh_from_db()
    assert (entry_a.content, entry_a.importance) == ("We use PostgreSQL 18", 0.9)
    version = EntryVersion.objects.get(entry_id=entry_a.pk)
    assert version.content == "We decided to use PostgreSQL #database"
    assert version.changed_by == "user:alice"


def test_an_entry_written_in_its_textarea_keeps_newlines_not_the_browsers_crlf(client_a, entry_a):
    """A browser submits a textarea's line breaks as CRLF; stored as such, an entry's lines no longer
    matched what agents write and search (the files' and project context's pages had the same fault)."""
    data = {"category": "decisions", "content": "Line one\r\nLine two\r\n", "tags": "", "importance": "0.5"}
    client_a.post(reverse("vault-entry-edit", args=[entry_a.pk]), {**data, "status": "active"}, **HTMX)
    entry_a.refresh_from_db()
    assert entry_a.content == "Line one\nLine two\n"
    url = reverse("vault-entry-create", args=["acme", "agent-a"])
    client_a.post(url, {**data, "content": "Another\r\nentry", "status": "active"})
    assert VaultEntry.objects.filter(content="Another\nentry").exists()


def test_it_edits_without_javascript_and_redirects_to_the_entry(client_a, entry_a):
    data = {
        "category": "lessons",
        "content": "Changed",
        "tags": "",
        "importance": "0.5",
        "status": "archived",
    }
    response = client_a.post(reverse("vault-entry-edit", args=[entry_a.pk]), data)
    assert response.status_code == 302 and response["Location"] == reverse(
        "vault-entry-detail", args=[entry_a.pk]
    )
    entry_a.refresh_from_db()
    assert (entry_a.category, entry_a.status) == ("lessons", "archived")


def _hidden_inputs(html: str) -> dict:
    """The hidden inputs of a page's form, as a browser sends them back (the CSRF token aside)."""
    found = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))
    found.pop("csrfmiddlewaretoken", None)
    return found


def test_a_stale_edit_form_does_not_overwrite_an_agents_newer_edit(client_a, entry_a, api, token_a):
    """A curator opens the edit form, an agent then changes the entry through the API, and the curator
    saves: the agent's text was silently replaced (kept only in the history). The save is refused with
    the newer text shown, and a second save, made knowing it, goes through."""
    url = reverse("vault-entry-edit", args=[entry_a.pk])
    seen = _hidden_inputs(client_a.get(url, **HTMX).content.decode())
    agents = api.patch(
        f"/entries/{entry_a.pk}", {"content": "We moved to PostgreSQL 17 #database"}, token=token_a
    )
    assert agents.status_code == 200
    data = {"category": "decisions", "content": "We use PostgreSQL", "tags": "", "importance": "0.5"}
    response = client_a.post(url, {**data, "status": "active", **seen}, **HTMX)
    assert response.status_code == 422
    page = response.content.decode()
    assert "changed since" in page and "We moved to PostgreSQL 17" in page and "We use PostgreSQL" in page
    entry_a.refresh_from_db()
    assert entry_a.content == "We moved to PostgreSQL 17 #database"
    again = client_a.post(url, {**data, "status": "active", **_hidden_inputs(page)}, **HTMX)
    assert again.status_code == 200
    entry_a.refresh_from_db()
    assert entry_a.content == "We use PostgreSQL"


def test_it_returns_the_form_with_errors_on_a_bad_edit(client_a, entry_a, settings):
    settings.MEMORY_MAX_ENTRY_BYTES = 256
    data = {
        "category": "decisions",
        "content": "x" * 300,
        "tags": "",
        "importance": "0.5",
        "status": "active",
    }
    response = client_a.post(reverse("vault-entry-edit", args=[entry_a.pk]), data, **HTMX)
    assert response.status_code == 422
    assert "the limit is 256 bytes" in response.content.decode()
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use PostgreSQL #database"
    assert not EntryVersion.objects.exists()


def test_it_asks_before_deleting_and_deletes_with_a_version(client_a, entry_a):
    url = reverse("vault-entry-delete", args=[entry_a.pk])
    confirm = client_a.get(url, **HTMX).content.decode()
    assert "Yes, delete" in confirm
    assert VaultEntry.objects.filter(pk=entry_a.pk).exists()
    assert "Yes, delete" in client_a.get(url).content.decode()  # the no-JavaScript confirmation page
    response = client_a.post(url, **HTMX)
    assert response.status_code == 200 and "deleted" in response.content.decode()
    assert not VaultEntry.objects.filter(pk=entry_a.pk).exists()
    assert EntryVersion.objects.get(entry_id=entry_a.pk).action == "delete"


def test_it_ticks_and_unticks_a_task(client_a, task_entry):
    html = client_a.get(reverse("vault-entry-detail", args=[task_entry.pk])).content.decode()
    assert html.count('role="checkbox"') == 2
    url = reverse("vault-entry-task-toggle", args=[task_entry.pk])
    response = client_a.post(url, {"line": 2, "done": "1"}, **HTMX)
    assert response.status_code == 200
    assert response.content.decode().count('aria-checked="true"') == 2
    task_entry.refresh_from_db()
    assert task_entry.content == "# Release\n\n- [x] write notes\n- [x] tag build\n"
    client_a.post(url, {"line": 3, "done": "0"})
    task_entry.refresh_from_db()
    assert task_entry.content == "# Release\n\n- [x] write notes\n- [ ] tag build\n"
    assert EntryVersion.objects.filter(entry_id=task_entry.pk).count() == 2


def test_a_stale_page_does_not_tick_another_task_than_the_one_clicked(client_a, task_entry):
    """The page shows "write notes" on line 2; an agent then adds a task above it, and the curator ticks
    "write notes": the line number alone ticked the agent's new task instead, and left "write notes"
    open. The tick is refused with a note to reload, and nothing changes."""
    html = client_a.get(reverse("vault-entry-detail", args=[task_entry.pk])).content.decode()
    toggle = re.search(r'<form class="task-toggle".*?</form>', html, re.S).group(0)
    clicked = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', toggle))
    clicked.pop("csrfmiddlewaretoken", None)
    assert clicked["line"] == "2"
    newer = "# Release\n\n- [ ] ship the fix\n- [ ] write notes\n- [x] tag build\n"
    services.entry_update(
        entry_id=task_entry.pk, changes=services.EntryChanges(content=newer), changed_by="a"
    )
    response = client_a.post(reverse("vault-entry-task-toggle", args=[task_entry.pk]), clicked, **HTMX)
    assert response.status_code == 422
    assert "reload" in response.content.decode()
    task_entry.refresh_from_db()
    assert task_entry.content == newer


def test_it_refuses_to_tick_a_line_that_is_no_task(client_a, task_entry):
    response = client_a.post(
        reverse("vault-entry-task-toggle", args=[task_entry.pk]), {"line": 0, "done": "1"}, **HTMX
    )
    assert response.status_code == 422
    assert "not a task" in response.content.decode()
    response = client_a.post(reverse("vault-entry-task-toggle", args=[task_entry.pk]), {"line": "x"}, **HTMX)
    assert response.status_code == 422
    task_entry.refresh_from_db()
    assert "- [ ] write notes" in task_entry.content


def test_the_detail_shows_history_with_an_escaped_diff(client_a, entry_a):
    services.entry_update(
        entry_id=entry_a.pk,
        changes=services.EntryChanges(content="We use <b>PostgreSQL</b> 18"),
        changed_by="user:x",
    )
    html = client_a.get(reverse("vault-entry-detail", args=[entry_a.pk])).content.decode()
    assert 'class="diff"' in html
    assert "&lt;b&gt;PostgreSQL&lt;/b&gt;" in html and "<b>PostgreSQL</b>" not in html
    assert "by user:x" in html


def test_history_numbers_versions_per_entry_and_names_the_fields_that_changed(client_a, entry_a, entry_b):
    for n in range(3):  # other entries' versions must not shift this entry's numbers
        services.entry_update(
            entry_id=entry_b.pk, changes=services.EntryChanges(content=f"B{n}"), changed_by="t"
        )
    services.entry_update(
        entry_id=entry_a.pk, changes=services.EntryChanges(content="Edited"), changed_by="t"
    )
    services.entry_update(
        entry_id=entry_a.pk, changes=services.EntryChanges(importance=0.9, tags=["db"]), changed_by="t"
    )
    html = client_a.get(reverse("vault-entry-detail", args=[entry_a.pk])).content.decode()
    assert re.findall(r"version (\d+) ·", html) == ["2", "1"]
    assert "Text unchanged; changed: importance, tags." in html
    oldest = EntryVersion.objects.filter(entry_id=entry_a.pk).earliest("pk")
    response = client_a.post(reverse("vault-entry-restore", args=[entry_a.pk, oldest.pk]), follow=True)
    assert "Restored version 1;" in response.content.decode()


def test_the_agent_page_opens_the_first_category_with_entries(client_a, agent_a):
    services.entry_create(agent=agent_a, category="lessons", content="Retry with backoff")
    html = client_a.get(reverse("vault-agent", args=["acme", "agent-a"])).content.decode()
    assert "Retry with backoff" in html
    assert re.search(r'aria-current="page" class="tab active"[^>]*>Lessons', html)


def test_it_restores_a_version(client_a, entry_a):
    services.entry_update(entry_id=entry_a.pk, changes=services.EntryChanges(content="Wrong"), changed_by="t")
    version = EntryVersion.objects.get(entry_id=entry_a.pk)
    response = client_a.post(reverse("vault-entry-restore", args=[entry_a.pk, version.pk]))
    assert response.status_code == 302
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use PostgreSQL #database"
    assert EntryVersion.objects.filter(entry_id=entry_a.pk).count() == 2


def test_it_will_not_restore_a_version_of_another_entry(client_a, entry_a, entry_b):
    services.entry_update(entry_id=entry_b.pk, changes=services.EntryChanges(content="B2"), changed_by="t")
    other = EntryVersion.objects.get(entry_id=entry_b.pk)
    assert client_a.post(reverse("vault-entry-restore", args=[entry_a.pk, other.pk])).status_code == 404


def test_a_deleted_entrys_history_page_shows_its_versions_and_restores_it(client_a, client_b, entry_a):
    services.entry_update(
        entry_id=entry_a.pk, changes=services.EntryChanges(content="Edited"), changed_by="t"
    )
    services.entry_delete(entry_id=entry_a.pk, deleted_by="user:alice")
    url = reverse("vault-entry-detail", args=[entry_a.pk])
    assert client_b.get(url).status_code == 404  # the same project rules as for the live entry
    response = client_a.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert f"Entry #{entry_a.pk} (deleted)" in html
    assert "This entry was deleted" in html and "by user:alice; agents no longer see it" in html
    assert re.findall(r"version (\d+) ·", html) == ["2", "1"]
    oldest = EntryVersion.objects.filter(entry_id=entry_a.pk).earliest("pk")
    restore = reverse("vault-entry-restore", args=[entry_a.pk, oldest.pk])
    assert f'action="{restore}"' in html
    assert client_b.post(restore).status_code == 404
    response = client_a.post(restore, follow=True)
    assert f"Entry #{entry_a.pk} restored from version 1" in response.content.decode()
    assert VaultEntry.objects.get(pk=entry_a.pk).content == "We decided to use PostgreSQL #database"


# --- search ------------------------------------------------------------------------------------------


def test_search_finds_and_highlights_entries(client_a, entry_a, entry_b):
    html = client_a.get(reverse("search"), {"q": "postgresql"}).content.decode()
    assert "<mark>PostgreSQL</mark>" in html and reverse("vault-entry-detail", args=[entry_a.pk]) in html
    assert "Cache keys" not in html
    partial = client_a.get(reverse("search"), {"q": "cache"}, **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="search-results"') and "<mark>Cache</mark> keys" in partial


def test_every_page_has_the_search_box(client_a, entry_a):
    for url in (reverse("dashboard"), reverse("vault-entry-detail", args=[entry_a.pk])):
        assert 'role="search"' in client_a.get(url).content.decode()


# --- project settings ------------------------------------------------------------------------------


def test_it_edits_the_project_context_with_a_version(client_a, project):
    page = client_a.get(reverse("vault-project-settings", args=["acme"])).content.decode()
    assert "Payments platform." in page
    response = client_a.post(reverse("vault-project-context", args=["acme"]), {"content": "# Acme\nNew text"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.context == "# Acme\nNew text"
    assert project.context_versions.get().content == "# Acme\nPayments platform."


def test_a_stale_project_context_form_does_not_overwrite_a_newer_context(client_a, project, api, admin_token):
    """The project's context was set by the project's orchestrator (PUT /project/context) while a curator
    had its settings page open, never set before (written when the project was created): saving the page
    put back the text it had shown, silently. Refused now with the current text shown; saving again,
    knowingly, replaces it."""
    page = client_a.get(reverse("vault-project-settings", args=["acme"])).content.decode()
    form = re.search(r'<form method="post" action="[^"]*/context/?".*?</form>', page, re.S).group(0)
    seen = _hidden_inputs(form)
    assert (
        api.put("/project/context", {"content": "# Acme\nPayments, now in EU"}, token=admin_token).status_code
        == 200
    )
    url = reverse("vault-project-context", args=["acme"])
    response = client_a.post(url, {**seen, "content": "# Acme\nPayments platform, edited"})
    assert response.status_code == 422
    page = response.content.decode()
    assert "changed since" in page and "Payments, now in EU" in page and "Payments platform, edited" in page
    project.refresh_from_db()
    assert project.context == "# Acme\nPayments, now in EU"
    form = re.search(r'<form method="post" action="[^"]*/context/?".*?</form>', page, re.S).group(0)
    assert (
        client_a.post(
            url, {**_hidden_inputs(form), "content": "# Acme\nPayments platform, edited"}
        ).status_code
        == 302
    )
    project.refresh_from_db()
    assert project.context == "# Acme\nPayments platform, edited"


def test_it_stores_the_project_context_with_the_browsers_line_endings_made_newlines(client_a, project):
    url = reverse("vault-project-context", args=["acme"])
    assert client_a.post(url, {"content": "# Acme\r\nPayments platform."}).status_code == 302
    project.refresh_from_db()
    assert project.context == "# Acme\nPayments platform." and not project.context_versions.exists()
    client_a.post(url, {"content": "# Acme\r\nNew\r\ntext\r\n"})
    project.refresh_from_db()
    assert project.context == "# Acme\nNew\ntext\n"


def test_it_rejects_a_bad_project_context(client_a, project):
    response = client_a.post(reverse("vault-project-context", args=["acme"]), {"content": "bad\x00"})
    assert response.status_code == 422
    assert "Null characters are not allowed" in response.content.decode()
    project.refresh_from_db()
    assert project.context == "# Acme\nPayments platform."


def test_it_creates_a_token_and_shows_the_secret_once(client_a, project, agent_a):
    response = client_a.post(
        reverse("vault-token-create", args=["acme"]), {"name": "laptop", "agent": "agent-a", "scope": "write"}
    )
    assert response.status_code == 201
    secret = re.search(r'value="(mem_[^"]+)"', response.content.decode()).group(1)
    assert "no-store" in response["Cache-Control"]
    assert not [name for name, morsel in response.cookies.items() if secret in morsel.value]
    token = project.tokens.get(name="laptop")
    assert token.agent == agent_a and token.scope == "write"
    assert secret not in client_a.get(reverse("vault-project-settings", args=["acme"])).content.decode()
    from vault.authentication import token_authenticate

    assert token_authenticate(secret).agent_id == agent_a.pk


def test_it_refuses_an_agent_bound_admin_token(client_a, project, agent_a):
    response = client_a.post(
        reverse("vault-token-create", args=["acme"]), {"agent": "agent-a", "scope": "admin"}
    )
    assert response.status_code == 422
    assert "Admin tokens are project-wide" in response.content.decode()
    assert not project.tokens.exists()


def test_it_will_not_bind_a_token_to_another_projects_agent(client_a, project, outsider_agent):
    other = services.agent_ensure(project=outsider_agent.project, slug="only-there")
    response = client_a.post(
        reverse("vault-token-create", args=["acme"]), {"agent": other.slug, "scope": "read"}
    )
    assert response.status_code == 422
    assert not project.tokens.exists()


def test_it_asks_before_revoking_a_token(client_a, token):
    url = reverse("vault-token-revoke", args=["acme", token.pk])
    settings_html = client_a.get(reverse("vault-project-settings", args=["acme"])).content.decode()
    assert f'href="{url}"' in settings_html and f'<form method="post" action="{url}"' not in settings_html
    for response in (client_a.get(url, **HTMX), client_a.get(url)):  # the partial, the no-JavaScript page
        html = response.content.decode()
        assert response.status_code == 200
        assert f"Revoke token {token.prefix}…?" in html and "Yes, revoke" in html
    token.refresh_from_db()
    assert token.revoked_at is None  # asking revoked nothing


def test_it_revokes_a_token(client_a, token):
    response = client_a.post(reverse("vault-token-revoke", args=["acme", token.pk]))
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_it_will_not_revoke_another_projects_token_through_this_project(
    client_a, outsider_token, other_project
):
    token = other_project.tokens.get()
    assert client_a.post(reverse("vault-token-revoke", args=["acme", token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_search_matches_word_prefixes_and_survives_odd_input(client_a, entry_a):
    assert "<mark>PostgreSQL</mark>" in client_a.get(reverse("search"), {"q": "postgres"}).content.decode()
    for odd in ['"unclosed', "a & | ! (", ":*", "-", "'"]:
        response = client_a.get(reverse("search"), {"q": odd})
        assert response.status_code in (200, 422), odd  # a query with no words is explained, never a 500


@pytest.mark.parametrize("action", ["delete", "tick"])
def test_an_entry_deleted_by_another_request_meanwhile_is_a_404_not_a_500(
    client_a, task_entry, monkeypatch, action
):
    """The page checked the entry, then another request (an agent's DELETE, another curator) deleted it
    before the service locked it: the service's .get() raised DoesNotExist, a 500."""
    from vault.views import entries as entry_views

    found = entry_views.selectors.entry_get_for_user

    def deleted_right_after(user, entry_id):
        entry = found(user, entry_id)
        services.entry_delete(entry_id=entry_id, deleted_by="agent")
        return entry

    monkeypatch.setattr(entry_views.selectors, "entry_get_for_user", deleted_right_after)
    if action == "delete":
        response = client_a.post(reverse("vault-entry-delete", args=[task_entry.pk]), **HTMX)
    else:
        response = client_a.post(
            reverse("vault-entry-task-toggle", args=[task_entry.pk]), {"line": 2, "done": "1"}, **HTMX
        )
    assert response.status_code == 404
    assert not VaultEntry.objects.filter(pk=task_entry.pk).exists()


def test_an_anonymous_htmx_request_logs_in_back_to_the_page_with_its_query(entry_a):
    """The login's next= was the partial htmx asked for, unencoded: after the first "&" the query
    string was lost, and the curator landed on a fragment instead of the page."""
    from urllib.parse import parse_qs, urlsplit

    page = "/search/?q=postgres&kind=entries&agent=agent-a"
    response = Client().get(
        reverse("vault-entry-card", args=[entry_a.pk]), HTTP_HX_CURRENT_URL=f"http://testserver{page}", **HTMX
    )
    target = urlsplit(response["HX-Redirect"])
    assert target.path == reverse("login")
    assert parse_qs(target.query)["next"] == [page]
    elsewhere = Client().get(
        reverse("vault-entry-card", args=[entry_a.pk]),
        HTTP_HX_CURRENT_URL="http://evil.example/x?a=1&b=2",
        **HTMX,
    )
    assert parse_qs(urlsplit(elsewhere["HX-Redirect"]).query)["next"] == [
        reverse("vault-entry-card", args=[entry_a.pk])
    ]
