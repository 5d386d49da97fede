"""Curator pages: search over every kind, review queue, sessions, files, maintenance,
policies, provenance. Every page with the three personas."""

import re
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from memoryproject import maintenance
from sessions_app import services as session_services
from tests.conftest import HTMX
from vault import services
from vault.models import CompactionRun, EntryStatus, Project, ReviewItem, VaultEntry, WorkspaceFile

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending(project, agent_a):
    """Three entries held by the project's review policy."""
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=True)
    return [
        services.entry_create(agent=agent_a, category="lessons", content=f"Lesson number {i} about queues")
        for i in range(3)
    ]


@pytest.fixture
def session(agent_a):
    result = session_services.messages_append(
        agent=agent_a,
        session_key="chat-1",
        messages=[
            {"role": "user", "text": "Where do we deploy the payments worker?"},
            {"role": "assistant", "text": "The payments worker deploys to Frankfurt."},
            {"role": "assistant", "text": "internal reasoning about kubernetes", "internal": True},
        ],
    )
    return result.session


@pytest.fixture
def run(project):
    return maintenance.compaction_run(project=project, dry_run=False, trigger="admin")


def pages(project, agent, entry, session, run):
    p, a = project.slug, agent.slug
    yield "get", reverse("vault-review", args=[p])
    yield "post", reverse("vault-review-act", args=[p, entry.pk])
    yield "post", reverse("vault-review-bulk", args=[p])
    yield "get", reverse("session-list", args=[p, a])
    yield "get", reverse("session-detail", args=[p, a, session.pk])
    yield "get", reverse("vault-file", args=[p, a]) + "?path=MEMORY.md"
    yield "post", reverse("vault-file", args=[p, a]) + "?path=MEMORY.md"
    yield "post", reverse("vault-file-preview", args=[p, a])
    yield "post", reverse("vault-file-settings", args=[p, a])
    yield "get", reverse("maintenance", args=[p])
    yield "get", reverse("maintenance-run", args=[p, run.pk])
    yield "post", reverse("maintenance-compaction-start", args=[p])
    yield "get", reverse("vault-project-policies", args=[p])
    yield "post", reverse("vault-project-policies", args=[p])


def test_it_sends_anonymous_users_to_login(project, agent_a, pending, session, run):
    client = Client()
    for method, url in pages(project, agent_a, pending[0], session, run):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login") + "?next="), url


def test_it_refuses_non_curators(client_nc, project, agent_a, pending, session, run):
    for method, url in pages(project, agent_a, pending[0], session, run):
        assert getattr(client_nc, method)(url).status_code == 403, url


def test_it_hides_this_project_from_another_projects_curator(
    client_b, project, agent_a, pending, session, run
):
    data = {
        "action": "approve",
        "ids": [pending[0].pk],
        "content": "hacked",
        "path": "MEMORY.md",
        "enabled": "1",
        "sort_order": "1",
        "dry_run": "0",
        "hold_agent_writes": "",
        "redaction": "0",
    }
    runs_before = CompactionRun.objects.count()
    for method, url in pages(project, agent_a, pending[0], session, run):
        response = getattr(client_b, method)(url, data) if method == "post" else client_b.get(url)
        assert response.status_code == 404, url
    assert all(VaultEntry.objects.get(pk=e.pk).status == EntryStatus.PENDING for e in pending)
    assert "hacked" not in WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").content
    assert CompactionRun.objects.count() == runs_before
    assert Project.objects.get(pk=project.pk).redaction_enabled is True


def test_the_merge_box_starts_at_the_duplicate_even_after_another_reason(client_a, project, agent_a):
    original = services.entry_create(
        agent=agent_a,
        category="lessons",
        content="The card network sandbox returns 200 with an error body; check `status` #payments",
    )
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=True)
    held = services.entry_create(
        agent=agent_a,
        category="lessons",
        content="The sandbox returns 200 with an error body; always check status #payments",
    )
    kinds = [item.kind for item in held.review_items.order_by("pk")]
    assert kinds[0] == "policy" and "duplicate" in kinds
    html = client_a.get(reverse("vault-review", args=["acme"])).content.decode()
    assert f'id="into-{held.pk}" name="into" value="{original.pk}"' in html


def test_it_hides_another_projects_entry_from_this_projects_review_action(client_b, project, pending):
    other = Project.objects.get(slug="globex")
    response = client_b.post(
        reverse("vault-review-act", args=[other.slug, pending[0].pk]), {"action": "approve"}
    )
    assert response.status_code == 404
    assert VaultEntry.objects.get(pk=pending[0].pk).status == EntryStatus.PENDING


# --- search ----------------------------------------------------------------------------------------


def test_search_finds_entries_messages_and_files_with_links(client_a, agent_a, entry_a, session):
    services.file_write(
        agent=agent_a, path="notes/deploy.md", content="Frankfurt region runbook", changed_by="t"
    )
    html = client_a.get(reverse("search"), {"q": "frankfurt"}).content.decode()
    message = session.messages.get(text__contains="deploys to Frankfurt")
    assert reverse("session-detail", args=["acme", "agent-a", session.pk]) + f"#message-{message.pk}" in html
    assert reverse("vault-file", args=["acme", "agent-a"]) + "?path=notes/deploy.md" in html
    assert "<mark>Frankfurt</mark>" in html
    internal = client_a.get(reverse("search"), {"q": "kubernetes"}, **HTMX).content.decode()
    assert "0 results" in internal  # internal messages are never search results
    only_files = client_a.get(reverse("search"), {"q": "frankfurt", "kind": "files"}).content.decode()
    assert "notes/deploy.md" in only_files and f"#message-{message.pk}" not in only_files


def test_search_filters_by_agent_category_and_status(client_a, agent_a, agent_b, entry_a):
    services.entry_create(agent=agent_b, category="lessons", content="PostgreSQL vacuum lesson")
    archived = services.entry_create(agent=agent_a, category="lessons", content="Old PostgreSQL 12 notes")
    services.entry_update(
        entry_id=archived.pk, changes=services.EntryChanges(status=EntryStatus.ARCHIVED), changed_by="t"
    )
    url = reverse("search")
    by_agent = client_a.get(url, {"q": "postgresql", "agent": "agent-b"}, **HTMX).content.decode()
    assert "vacuum" in by_agent and f"Entry #{entry_a.pk}<" not in by_agent
    by_category = client_a.get(url, {"q": "postgresql", "category": "decisions"}, **HTMX).content.decode()
    assert f"Entry #{entry_a.pk}<" in by_category and "vacuum" not in by_category
    assert "Old <mark>PostgreSQL</mark> 12" not in by_category
    arch = client_a.get(url, {"q": "postgresql", "status": "archived"}, **HTMX).content.decode()
    assert "Old <mark>PostgreSQL</mark> 12" in arch and "vacuum" not in arch


def test_search_filters_by_one_projects_agent_and_keeps_the_choice(
    client_a, client_b, project, other_project
):
    from vault.models import ProjectMembership

    ProjectMembership.objects.create(user=User.objects.get(username="alice"), project=other_project)
    here = services.entry_create(
        agent=services.agent_ensure(project=project, slug="dev"), category="lessons", content="database here"
    )
    there = services.entry_create(
        agent=services.agent_ensure(project=other_project, slug="dev"),
        category="lessons",
        content="database there",
    )
    url = reverse("search")
    html = client_a.get(url, {"q": "database", "agent": "globex/dev"}).content.decode()
    assert f"Entry #{there.pk}<" in html and f"Entry #{here.pk}<" not in html
    assert '<option value="globex/dev" selected>' in html and '<option value="acme/dev">' in html
    html = client_a.get(url, {"q": "database", "agent": "acme/dev"}).content.decode()
    assert f"Entry #{here.pk}<" in html and f"Entry #{there.pk}<" not in html
    assert '<option value="acme/dev" selected>' in html and '<option value="globex/dev">' in html
    outsider = client_b.get(url, {"q": "database", "agent": "acme/dev"}).content.decode()
    assert "0 results" in outsider and "database here" not in outsider


def test_search_shows_entry_snippets_as_rendered_markdown(client_a, agent_a):
    services.entry_create(
        agent=agent_a, category="tasks", content="**Never** deploy on Friday\n\n- [ ] tell the team"
    )
    html = client_a.get(reverse("search"), {"q": "deploy"}, **HTMX).content.decode()
    assert "<strong>Never</strong> <mark>deploy</mark>" in html and "☐" in html
    assert "**Never**" not in html and "- [ ]" not in html


def test_search_rejects_bad_filters_with_422(client_a, entry_a):
    response = client_a.get(reverse("search"), {"q": "x", "category": "nope"})
    assert response.status_code == 422
    assert "category" in response.content.decode()


def test_search_takes_queries_as_long_as_the_api_does(client_a, api, token_a, entry_a):
    from search.query import MAX_QUERY_CHARS

    long = " OR ".join(["postgresql"] + [f"unmatched{i:02d}" + "q" * 60 for i in range(12)])
    assert len(long) > 500 and api.get("/search", token=token_a, q=long).status_code == 200
    html = client_a.get(reverse("search"), {"q": long}).content.decode()
    assert f"Entry #{entry_a.pk}<" in html
    too_long = client_a.get(reverse("search"), {"q": "x" * (MAX_QUERY_CHARS + 1)})
    assert (
        too_long.status_code == 422
        and api.get("/search", token=token_a, q="x" * (MAX_QUERY_CHARS + 1)).status_code == 422
    )


def test_search_never_shows_another_projects_memory(client_b, entry_a, session):
    html = client_b.get(reverse("search"), {"q": "frankfurt postgresql"}).content.decode()
    assert "Frankfurt" not in html and "PostgreSQL" not in html


def test_the_search_box_searches_as_you_type(client_a, entry_a):
    html = client_a.get(reverse("dashboard")).content.decode()
    assert 'hx-trigger="input changed delay:300ms, search"' in html
    assert 'id="search-results"' in html


# --- review queue ----------------------------------------------------------------------------------


def test_the_queue_lists_pending_entries_with_why_and_both_sides(
    client_a, project, agent_a, entry_a, pending
):
    ReviewItem.objects.create(entry=pending[0], kind="conflict", other_entry=entry_a, detail="says otherwise")
    html = client_a.get(reverse("vault-review", args=["acme"])).content.decode()
    for entry in pending:
        assert f'id="review-{entry.pk}"' in html
    assert "Held by the project&#x27;s review policy" in html or "Held by the project's review policy" in html
    assert "says otherwise" in html and reverse("vault-entry-detail", args=[entry_a.pk]) in html
    assert "<kbd>j</kbd>" in html and "js/review.js" in html
    assert html.index(f"review-{pending[0].pk}") < html.index(f"review-{pending[2].pk}")  # oldest first


def test_it_approves_edits_rejects_and_merges(client_a, entry_a, pending):
    url = lambda e: reverse("vault-review-act", args=["acme", e.pk])  # noqa: E731
    assert client_a.post(url(pending[0]), {"action": "approve"}, **HTMX).status_code == 200
    assert (
        client_a.post(url(pending[1]), {"action": "approve", "content": "Edited lesson"}).status_code == 302
    )
    assert client_a.post(url(pending[2]), {"action": "reject", "reason": "wrong"}, **HTMX).status_code == 200
    statuses = {e.pk: VaultEntry.objects.get(pk=e.pk) for e in pending}
    assert statuses[pending[0].pk].status == EntryStatus.ACTIVE
    assert statuses[pending[1].pk].status == EntryStatus.ACTIVE
    assert statuses[pending[1].pk].content == "Edited lesson"
    assert statuses[pending[2].pk].status == EntryStatus.REJECTED
    again = client_a.post(url(pending[2]), {"action": "approve"}, **HTMX)
    assert again.status_code == 422 and "not pending" in again.content.decode()


def test_it_merges_into_an_entry_and_refuses_a_missing_target(client_a, entry_a, pending):
    url = reverse("vault-review-act", args=["acme", pending[0].pk])
    assert client_a.post(url, {"action": "merge"}, **HTMX).status_code == 422
    missing = client_a.post(url, {"action": "merge", "into": 999999}, **HTMX)
    assert missing.status_code == 422 and "not found" in missing.content.decode()
    zero = client_a.post(url, {"action": "merge", "into": 0}, **HTMX)
    assert zero.status_code == 422 and "Cannot merge into #0: not a valid entry id" in zero.content.decode()
    assert client_a.post(url, {"action": "merge", "into": entry_a.pk}, **HTMX).status_code == 200
    entry_a.refresh_from_db()
    assert "Lesson number 0" in entry_a.content
    assert VaultEntry.objects.get(pk=pending[0].pk).status == EntryStatus.SUPERSEDED


def test_bulk_approves_only_pending_entries_of_this_project(client_a, entry_a, pending):
    response = client_a.post(
        reverse("vault-review-bulk", args=["acme"]),
        {"action": "reject", "ids": [pending[0].pk, pending[1].pk, entry_a.pk]},
        follow=True,
    )
    html = response.content.decode()
    assert "2 entries rejected" in html and f"#{entry_a.pk}: not pending" in html
    assert VaultEntry.objects.get(pk=pending[0].pk).status == EntryStatus.REJECTED
    assert VaultEntry.objects.get(pk=pending[2].pk).status == EntryStatus.PENDING
    assert VaultEntry.objects.get(pk=entry_a.pk).status == EntryStatus.ACTIVE


def test_a_decision_on_a_stale_queue_page_does_not_take_an_agents_newer_text(client_a, api, token_a, pending):
    """The queue shows what a held entry says; its agent then rewrites it (an agent may edit its held
    entry, which stays held). Approving from the page loaded before wrote the old text back over the
    agent's (the edit box always sends it), and a bulk approval made the new text active unseen. Both
    are refused now, and the entry stays held with the agent's text for a second look."""
    html = client_a.get(reverse("vault-review", args=["acme"])).content.decode()
    url = reverse("vault-review-act", args=["acme", pending[0].pk])
    form = re.search(rf'<form class="review-form"[^>]*action="{url}".*?</form>', html, re.S).group(0)
    single = dict(re.findall(r'<input type="hidden" name="([\w-]+)" value="([^"]*)"', form))
    single["content"] = unescape(re.search(r"<textarea[^>]*>(.*?)</textarea>", form, re.S).group(1))
    bulk = dict(
        re.findall(r'<input type="hidden" name="([\w-]+)" value="([^"]*)"[^>]*form="bulk-form"', html)
    )
    for entry in pending[:2]:
        edit = api.patch(
            f"/entries/{entry.pk}", {"content": f"Rewritten lesson {entry.pk} about queues"}, token=token_a
        )
        assert edit.status_code == 200 and edit.json()["status"] == "pending"
    approved = client_a.post(url, {**single, "action": "approve"}, **HTMX)
    assert approved.status_code == 422 and "changed since" in approved.content.decode()
    bulk_approved = client_a.post(
        reverse("vault-review-bulk", args=["acme"]),
        {**bulk, "action": "approve", "ids": [pending[1].pk]},
        follow=True,
    )
    assert "changed since" in bulk_approved.content.decode()
    for entry in pending[:2]:
        entry.refresh_from_db()
        assert (entry.status, entry.content) == ("pending", f"Rewritten lesson {entry.pk} about queues")


def test_the_dashboard_shows_pending_counts_and_the_last_compaction(client_a, pending, run):
    html = client_a.get(reverse("dashboard")).content.decode()
    assert 'data-pending="3"' in html
    assert f"run #{run.pk}" in html


# --- entry detail: provenance, supersede chain, review items ----------------------------------------


def test_the_entry_page_shows_provenance_and_the_chain_both_ways(client_a, agent_a, entry_a, session):
    message = session.messages.first()
    newer = services.entry_create(
        agent=agent_a,
        category="decisions",
        content="We moved to CockroachDB",
        source="extraction",
        source_session_id=session.pk,
        source_message_ids=[message.pk],
        confidence=0.8,
        supersedes_id=entry_a.pk,
    )
    html = client_a.get(reverse("vault-entry-detail", args=[newer.pk])).content.decode()
    assert "0.80" in html and f"#message-{message.pk}" in html
    assert f'href="{reverse("vault-entry-detail", args=[entry_a.pk])}"' in html
    old = client_a.get(reverse("vault-entry-detail", args=[entry_a.pk])).content.decode()
    assert "was replaced by" in old and reverse("vault-entry-detail", args=[newer.pk]) in old


# --- sessions ----------------------------------------------------------------------------------------


def test_sessions_list_and_conversation(client_a, agent_a, session):
    html = client_a.get(reverse("session-list", args=["acme", "agent-a"])).content.decode()
    assert "chat-1" in html and ">3<" in html
    page = client_a.get(reverse("session-detail", args=["acme", "agent-a", session.pk])).content.decode()
    assert "role-user" in page and "role-assistant" in page
    assert 'class="msg role-assistant internal"' in page and ">internal<" in page
    assert client_a.get(reverse("session-detail", args=["acme", "agent-a", 999999])).status_code == 404


def test_the_conversation_follows_the_chosen_branch(client_a, agent_a, session):
    first = session.messages.order_by("id").first()
    session_services.branch_create(session=session, name="alt", message=first)
    session_services.branch_checkout(session=session, name="alt")
    session_services.messages_append(
        agent=agent_a, session=session, messages=[{"role": "user", "text": "Branch question about Lisbon"}]
    )
    url = reverse("session-detail", args=["acme", "agent-a", session.pk])
    alt = client_a.get(url, {"branch": "alt"}).content.decode()
    assert "Lisbon" in alt and "Frankfurt" not in alt
    main = client_a.get(url, {"branch": "main"}).content.decode()
    assert "Frankfurt" in main and "Lisbon" not in main


# --- workspace files ---------------------------------------------------------------------------------


def test_it_edits_a_file_with_history_and_previews_markdown(client_a, agent_a):
    url = reverse("vault-file", args=["acme", "agent-a"]) + "?path=MEMORY.md"
    response = client_a.post(url, {"path": "MEMORY.md", "content": "# Memory\n\n- likes **tea**"})
    assert response.status_code == 302
    file = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md")
    assert file.content == "# Memory\n\n- likes **tea**"
    page = client_a.get(url).content.decode()
    assert "<strong>tea</strong>" in page and "version" in page and 'class="diff' in page
    preview = client_a.post(
        reverse("vault-file-preview", args=["acme", "agent-a"]),
        {"content": "**bold** <script>alert(1)</script>"},
        **HTMX,
    ).content.decode()
    assert "<strong>bold</strong>" in preview and "<script>" not in preview


def test_a_stale_file_form_does_not_overwrite_what_the_agent_appended_since(client_a, agent_a):
    """A curator opens today's daily note, the agent's next exchange is appended to it, and the curator
    saves: the appended exchange vanished from the note (appends are not versioned, so it was only in
    the version this save made). The save is refused with the current text shown; saving again, knowingly,
    replaces it."""
    path = "memory/2026-03-01.md"
    services.file_write(agent=agent_a, path=path, content="# Daily Notes\n\n- first\n", changed_by="t")
    url = reverse("vault-file", args=["acme", "agent-a"]) + f"?path={path}"
    page = client_a.get(url).content.decode()
    seen = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    seen.pop("csrfmiddlewaretoken", None)
    services.file_append(agent=agent_a, path=path, text="- appended by the agent\n", changed_by="agent")
    mine = {"path": path, "content": "# Daily Notes\n\n- first, corrected\n"}
    response = client_a.post(url, {**seen, **mine})
    assert response.status_code == 422
    page = response.content.decode()
    assert "changed since" in page and "appended by the agent" in page and "first, corrected" in page
    assert "appended by the agent" in WorkspaceFile.objects.get(agent=agent_a, path=path).content
    seen = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    assert client_a.post(url, {**seen, **mine}).status_code == 302
    assert WorkspaceFile.objects.get(agent=agent_a, path=path).content == mine["content"]


@pytest.mark.parametrize(
    ("path", "encoded"),
    [
        ("notes/q&a.md", "notes/q%26a.md"),
        ("notes/c# sharp.md", "notes/c%23%20sharp.md"),
        ("notes/a+b.md", "notes/a%2Bb.md"),
    ],
)
def test_links_and_redirects_to_a_file_encode_its_path(client_a, agent_a, path, encoded):
    services.file_write(agent=agent_a, path=path, content="quokka notes", changed_by="t")
    url = reverse("vault-file", args=["acme", "agent-a"])
    saved = client_a.post(f"{url}?path={encoded}", {"path": path, "content": "quokka notes, saved"})
    assert saved.status_code == 302 and saved["Location"] == f"{url}?path={encoded}"
    assert f"Edit {escape(path)}<" in client_a.get(saved["Location"]).content.decode()
    settings_url = reverse("vault-file-settings", args=["acme", "agent-a"])
    back = client_a.post(settings_url, {"path": path, "sort_order": "3", "back": "file"})
    assert back["Location"] == f"{url}?path={encoded}"
    html = client_a.get(reverse("search"), {"q": "quokka", "kind": "files"}).content.decode()
    assert f'href="{url}?path={encoded}"' in html


def test_it_toggles_enabled_and_sort_order(client_a, agent_a):
    url = reverse("vault-file-settings", args=["acme", "agent-a"])
    assert client_a.post(url, {"path": "MEMORY.md", "sort_order": "7"}).status_code == 302
    file = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md")
    assert file.enabled is False and file.sort_order == 7
    client_a.post(url, {"path": "MEMORY.md", "sort_order": "x", "enabled": "1"})
    file.refresh_from_db()
    assert file.sort_order == 7 and file.enabled is False
    assert client_a.post(url, {"path": "nope.md", "sort_order": "1"}).status_code == 404


def test_a_sort_order_out_of_range_is_refused_saying_the_range(client_a, agent_a):
    """99999999 was refused as "Sort order must be a whole number", which it is."""
    url = reverse("vault-file-settings", args=["acme", "agent-a"])
    page = client_a.post(url, {"path": "MEMORY.md", "sort_order": "99999999"}, follow=True).content.decode()
    assert "MEMORY.md: not saved: the sort order must be a whole number from -1000000 to 1000000." in page
    assert WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md").sort_order != 99999999


def _settings_form(page: str, path: str) -> dict:
    """What the files table's settings form of `path` sends, as a browser would (an unticked checkbox
    sends nothing)."""
    forms = re.findall(r'<form method="post" action="[^"]*/files/settings/".*?</form>', page, re.S)
    form = next(f for f in forms if f'name="path" value="{path}"' in f)
    data = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))
    data.pop("csrfmiddlewaretoken", None)
    data["sort_order"] = re.search(r'name="sort_order" value="([^"]*)"', form).group(1)
    if re.search(r'name="enabled" value="1" checked', form):
        data["enabled"] = "1"
    return data


def test_a_stale_settings_form_keeps_the_other_setting_changed_since(client_a, agent_a, api, token_a):
    """The files page opened, then the agent takes MEMORY.md out of the prompt; the curator moves it to
    order 5 with the form as it was (still ticked): it stays out of the prompt, at order 5. The form
    wrote every setting it showed, putting it back in."""
    services.file_write(agent=agent_a, path="MEMORY.md", content="# Memory", changed_by="t", enabled=True)
    form = _settings_form(
        client_a.get(reverse("vault-file", args=["acme", "agent-a"])).content.decode(), "MEMORY.md"
    )
    assert form["enabled"] == "1"
    assert api.patch("/agents/agent-a/files/MEMORY.md", {"enabled": False}, token=token_a).status_code == 200
    response = client_a.post(
        reverse("vault-file-settings", args=["acme", "agent-a"]), {**form, "sort_order": "5"}
    )
    assert response.status_code == 302
    file = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md")
    assert (file.enabled, file.sort_order) == (False, 5)


def test_a_stale_settings_form_does_not_overwrite_the_same_setting_changed_since(
    client_a, agent_a, api, token_a
):
    """Both the agent and the stale form change the sort order: the save is refused with the current
    order and a note, the curator's order kept in the form; saving that again applies it knowingly."""
    services.file_write(agent=agent_a, path="MEMORY.md", content="# Memory", changed_by="t", enabled=True)
    url = reverse("vault-file-settings", args=["acme", "agent-a"])
    form = _settings_form(
        client_a.get(reverse("vault-file", args=["acme", "agent-a"])).content.decode(), "MEMORY.md"
    )
    assert api.patch("/agents/agent-a/files/MEMORY.md", {"sort_order": 4}, token=token_a).status_code == 200
    response = client_a.post(url, {**form, "sort_order": "5"})
    assert response.status_code == 422
    page = response.content.decode()
    assert "changed since" in page and "order 4" in page
    file = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md")
    assert (file.enabled, file.sort_order) == (True, 4)
    again = _settings_form(page, "MEMORY.md")
    assert (again["sort_order"], again.get("enabled")) == ("5", "1")
    assert client_a.post(url, again).status_code == 302
    file.refresh_from_db()
    assert (file.enabled, file.sort_order) == (True, 5)


# --- maintenance and policies ------------------------------------------------------------------------


def test_compaction_preview_changes_nothing_and_run_now_records_a_run(client_a, project, run):
    url = reverse("maintenance-compaction-start", args=["acme"])
    before = CompactionRun.objects.count()
    preview = client_a.post(url, {"dry_run": "1"}, **HTMX)
    assert preview.status_code == 200 and "Preview (dry run)" in preview.content.decode()
    assert CompactionRun.objects.count() == before
    response = client_a.post(url, {"dry_run": "0"})
    assert CompactionRun.objects.count() == before + 1
    new = CompactionRun.objects.latest("started_at")
    assert response["Location"] == reverse("maintenance-run", args=["acme", new.pk])
    page = client_a.get(reverse("maintenance", args=["acme"])).content.decode()
    assert f"#{new.pk}" in page and "Deletion audit" in page
    assert client_a.get(reverse("maintenance-run", args=["acme", 999999])).status_code == 404


def test_the_maintenance_page_lists_every_schedule(client_a, project):
    from django.core.management import call_command

    call_command("setup_schedules")
    page = client_a.get(reverse("maintenance", args=["acme"])).content.decode()
    assert "sessions: lifecycle" in page and "consolidat" in page


def test_it_sets_review_policies_and_redaction(client_a, project):
    url = reverse("vault-project-policies", args=["acme"])
    assert client_a.post(url, {"category": "lessons", "hold_agent_writes": "1"}).status_code == 302
    policy = project.review_policies.get(category="lessons")
    assert policy.hold_agent_writes and not policy.hold_extracted
    assert client_a.post(url, {"category": "bogus"}).status_code == 422
    assert client_a.post(url, {"redaction": "0"}).status_code == 302
    project.refresh_from_db()
    assert project.redaction_enabled is False
    assert not project.review_policies.filter(category="").exists()
    assert "Retention" in client_a.get(url).content.decode()


def test_the_entry_page_shows_a_long_reject_reason_whole(client_a, pending):
    reason = "Contains a prompt-injection attempt copied from a scraped web page; see incident 42"
    url = reverse("vault-review-act", args=["acme", pending[0].pk])
    assert client_a.post(url, {"action": "reject", "reason": reason}, **HTMX).status_code == 200
    html = client_a.get(reverse("vault-entry-detail", args=[pending[0].pk])).content.decode()
    assert f"rejected: {reason}" in html
