import threading

import pytest
from django.db import connection
from django.utils import timezone

from memoryproject.errors import Conflict, InvalidInput
from tests.conftest import ApiClient
from vault import services
from vault.models import Agent, WorkspaceFile
from vault.workspace_templates import DEFAULT_WORKSPACE_FILES


def test_it_creates_the_four_workspace_files_with_a_new_agent(agent_a):
    files = list(WorkspaceFile.objects.filter(agent=agent_a).order_by("sort_order"))
    assert [(f.path, f.enabled, f.sort_order) for f in files] == [
        ("AGENTS.md", True, 0),
        ("SOUL.md", True, 1),
        ("PROFILE.md", True, 2),
        ("MEMORY.md", True, 3),
    ]
    assert all(f.content.strip() and f.size == len(f.content.encode()) for f in files)


def test_the_default_agents_md_says_a_day_goes_on_in_parts(agent_a):
    """AGENTS.md spoke of memory/YYYY-MM-DD.md only: an agent did not know that a busy day goes on in
    memory/YYYY-MM-DD-2.md, -3.md, ... past MEMORY_DAILY_NOTE_MAX_BYTES, and read a day's first part
    as the whole day."""
    agents_md = WorkspaceFile.objects.get(agent=agent_a, path="AGENTS.md").content
    assert "`memory/YYYY-MM-DD-2.md`, then `-3.md`" in agents_md and "a day is all its parts" in agents_md


def test_it_does_not_recreate_workspace_files_for_an_existing_agent(agent_a):
    services.file_delete(agent=agent_a, path="SOUL.md", deleted_by="t")
    assert services.agent_ensure(project=agent_a.project, slug="agent-a") == agent_a
    assert not WorkspaceFile.objects.filter(agent=agent_a, path="SOUL.md", deleted_at__isnull=True).exists()


@pytest.mark.django_db(transaction=True)
def test_it_creates_workspace_files_once_when_first_uses_race(project):
    errors = []

    def first_use():
        try:
            services.agent_ensure(project=project, slug="racer")
        except Exception as exc:  # noqa: BLE001 - any failure fails the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    agent = Agent.objects.get(project=project, slug="racer")
    assert WorkspaceFile.objects.filter(agent=agent).count() == len(DEFAULT_WORKSPACE_FILES)


def test_a_write_that_changes_nothing_leaves_the_file_and_its_history_alone(agent_a):
    file, _ = services.file_write(agent=agent_a, path="notes/a.md", content="one\n", changed_by="t")
    again, created = services.file_write(agent=agent_a, path="notes/a.md", content="one\n", changed_by="t")
    assert not created and again.updated_at == file.updated_at and not again.versions.exists()
    crlf, _ = services.file_write(agent=agent_a, path="notes/a.md", content="one\r\n", changed_by="t")
    assert crlf.content == "one\r\n" and crlf.versions.get().content == "one\n"  # an API's CRLF is kept
    enabled, _ = services.file_write(
        agent=agent_a, path="notes/a.md", content="one\r\n", changed_by="t", enabled=True
    )
    assert WorkspaceFile.objects.get(pk=enabled.pk).enabled and enabled.versions.count() == 1


def test_it_lists_files_in_sort_order_with_a_prefix_filter(api, agent_a, token_a):
    services.daily_note_append(agent=agent_a, when=timezone.now(), text="- note\n")
    response = api.get("/agents/agent-a/files", token=token_a)
    assert response.status_code == 200
    body = response.json()
    assert [f["path"] for f in body["items"]][:4] == ["AGENTS.md", "SOUL.md", "PROFILE.md", "MEMORY.md"]
    assert body["count"] == 5
    daily = api.get("/agents/agent-a/files", token=token_a, prefix="memory/").json()
    assert daily["count"] == 1 and daily["items"][0]["enabled"] is False
    assert "content" not in daily["items"][0]


def test_it_reads_a_file(api, agent_a, read_token_a):
    response = api.get("/agents/agent-a/files/MEMORY.md", token=read_token_a)
    assert response.status_code == 200
    assert response.json()["content"].startswith("# MEMORY.md")
    assert api.get("/agents/agent-a/files/NOPE.md", token=read_token_a).status_code == 404


def test_it_writes_and_says_created_or_updated(api, agent_a, token_a):
    created = api.put("/agents/agent-a/files/notes/plan.md", {"content": "# Plan\n"}, token=token_a)
    assert created.status_code == 201
    assert created.json()["created"] is True and created.json()["overwritten"] is False
    assert created.json()["enabled"] is False
    updated = api.put(
        "/agents/agent-a/files/notes/plan.md", {"content": "# Plan v2\n", "enabled": True}, token=token_a
    )
    assert updated.status_code == 200
    assert updated.json()["created"] is False and updated.json()["overwritten"] is True
    assert updated.json()["enabled"] is True and updated.json()["size"] == len("# Plan v2\n")
    history = api.get("/agents/agent-a/files/notes/plan.md/history", token=token_a).json()
    assert [v["content"] for v in history] == ["# Plan\n"]


def test_it_keeps_every_previous_content_in_the_history_newest_first(api, agent_a, token_a):
    for text in ("one\n", "two\n", "three\n"):
        api.put("/agents/agent-a/files/log.md", {"content": text}, token=token_a)
    api.post("/agents/agent-a/files/log.md/edit", {"old_text": "three", "new_text": "four"}, token=token_a)
    history = api.get("/agents/agent-a/files/log.md/history", token=token_a).json()
    assert [v["content"] for v in history] == ["three\n", "two\n", "one\n"]
    assert {v["action"] for v in history} == {"edit"}
    assert api.get("/agents/agent-a/files/log.md", token=token_a).json()["content"] == "four\n"


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("notes.txt", "must end in .md"),
        ("a/../b.md", "no '..' segments"),
        ("a\\b.md", "no backslashes"),
        ("a//b.md", "no empty or '.' segments"),
        ("./a.md", "no empty or '.' segments"),
        ("x" * 300 + ".md", "at most 255 characters"),
    ],
)
def test_it_rejects_paths_breaking_a_rule_naming_it(api, agent_a, token_a, path, rule):
    response = api.put(f"/agents/agent-a/files/{path}", {"content": "x"}, token=token_a)
    assert response.status_code == 422, response.content
    assert rule in response.json()["detail"]
    assert not WorkspaceFile.objects.filter(agent=agent_a, path=path).exists()


def test_it_rejects_an_absolute_path_naming_the_rule(agent_a):
    with pytest.raises(InvalidInput, match="relative paths only"):
        services.file_write(agent=agent_a, path="/etc/x.md", content="x", changed_by="t")
    with pytest.raises(InvalidInput, match="relative paths only"):
        services.file_write(agent=agent_a, path="C:/x.md", content="x", changed_by="t")


def test_it_rejects_an_absolute_path_through_the_api(api, agent_a, token_a):
    # "//etc/x.md" reaches the view as "/etc/x.md".
    response = api.put("/agents/agent-a/files//etc/x.md", {"content": "x"}, token=token_a)
    assert response.status_code in (404, 422)
    assert not WorkspaceFile.objects.filter(path__contains="etc").exists()


def test_it_rejects_nul_in_content_and_path(api, agent_a, token_a):
    response = api.put("/agents/agent-a/files/a.md", {"content": "a\x00b"}, token=token_a)
    assert response.status_code == 422 and "NUL" in response.json()["detail"]
    with pytest.raises(InvalidInput, match="no NUL"):
        services.file_write(agent=agent_a, path="a\x00.md", content="x", changed_by="t")


def test_it_allows_any_extension_under_memories(api, agent_a, token_a):
    response = api.put("/agents/agent-a/files/memories/prefs.xml", {"content": "<a/>"}, token=token_a)
    assert response.status_code == 201


def test_it_edits_by_exact_find_and_replace_returning_the_count(api, agent_a, token_a):
    api.put("/agents/agent-a/files/t.md", {"content": "cat dog cat\n"}, token=token_a)
    once = api.post("/agents/agent-a/files/t.md/edit", {"old_text": "dog", "new_text": "cow"}, token=token_a)
    assert once.status_code == 200 and once.json()["replacements"] == 1
    assert once.json()["content"] == "cat cow cat\n"
    every = api.post(
        "/agents/agent-a/files/t.md/edit",
        {"old_text": "cat", "new_text": "fox", "replace_all": True},
        token=token_a,
    )
    assert every.json()["replacements"] == 2 and every.json()["content"] == "fox cow fox\n"


def test_it_refuses_an_edit_whose_text_is_absent(api, agent_a, token_a):
    api.put("/agents/agent-a/files/t.md", {"content": "cat\n"}, token=token_a)
    response = api.post(
        "/agents/agent-a/files/t.md/edit", {"old_text": "dog", "new_text": "x"}, token=token_a
    )
    assert response.status_code == 422 and "not found" in response.json()["detail"]
    assert api.get("/agents/agent-a/files/t.md/history", token=token_a).json() == []


def test_it_refuses_an_ambiguous_edit_without_replace_all(api, agent_a, token_a):
    api.put("/agents/agent-a/files/t.md", {"content": "cat cat\n"}, token=token_a)
    response = api.post(
        "/agents/agent-a/files/t.md/edit", {"old_text": "cat", "new_text": "x"}, token=token_a
    )
    assert response.status_code == 422 and "2 times" in response.json()["detail"]
    assert api.get("/agents/agent-a/files/t.md", token=token_a).json()["content"] == "cat cat\n"


def test_it_refuses_an_empty_old_text(api, agent_a, token_a):
    response = api.post(
        "/agents/agent-a/files/MEMORY.md/edit", {"old_text": "", "new_text": "x"}, token=token_a
    )
    assert response.status_code == 422


def test_it_soft_deletes_a_file_keeping_its_content(api, agent_a, token_a):
    api.put("/agents/agent-a/files/gone.md", {"content": "bye\n"}, token=token_a)
    assert api.delete("/agents/agent-a/files/gone.md", token=token_a).status_code == 204
    assert api.get("/agents/agent-a/files/gone.md", token=token_a).status_code == 404
    row = WorkspaceFile.objects.get(agent=agent_a, path="gone.md")
    assert row.deleted_at is not None and row.versions.get().content == "bye\n"
    assert api.delete("/agents/agent-a/files/gone.md", token=token_a).status_code == 404
    assert api.put("/agents/agent-a/files/gone.md", {"content": "back"}, token=token_a).status_code == 201


def test_it_changes_enabled_and_sort_order(api, agent_a, token_a):
    response = api.patch(
        "/agents/agent-a/files/MEMORY.md", {"enabled": False, "sort_order": 9}, token=token_a
    )
    assert response.status_code == 200
    assert response.json()["enabled"] is False and response.json()["sort_order"] == 9
    paths = [f["path"] for f in api.get("/agents/agent-a/files", token=token_a).json()["items"]]
    assert paths[-1] == "MEMORY.md"
    bad = api.patch("/agents/agent-a/files/MEMORY.md", {"sort_order": 10**9}, token=token_a)
    assert bad.status_code == 422


def test_settings_as_a_form_saw_them_write_only_what_it_changed(agent_a):
    """file_settings_set with the settings a form showed: what the form left as seen is not written
    back over a change made since; the same change made by both is no conflict; a setting both changed
    differently is refused, nothing written; a save that changes nothing leaves the file's date."""
    seen = {"seen_enabled": True, "seen_sort_order": 3}
    services.file_settings_set(agent=agent_a, path="MEMORY.md", enabled=False)
    file = services.file_settings_set(agent=agent_a, path="MEMORY.md", enabled=True, sort_order=5, **seen)
    assert (file.enabled, file.sort_order) == (False, 5)
    file = services.file_settings_set(agent=agent_a, path="MEMORY.md", enabled=False, sort_order=3, **seen)
    assert (file.enabled, file.sort_order) == (False, 5)
    with pytest.raises(Conflict) as refused:
        services.file_settings_set(agent=agent_a, path="MEMORY.md", enabled=True, sort_order=7, **seen)
    assert refused.value.errors == [{"loc": ["seen_sort_order"], "msg": "changed since the form was opened"}]
    assert "now: not in the prompt, order 5" in refused.value.detail
    file = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md")
    assert (file.enabled, file.sort_order) == (False, 5)
    same = services.file_settings_set(agent=agent_a, path="MEMORY.md", enabled=False, sort_order=5)
    assert same.updated_at == file.updated_at


@pytest.mark.django_db(transaction=True)
def test_concurrent_edits_are_all_kept(agent_a, token_a):
    services.file_write(
        agent=agent_a, path="c.md", content="".join(f"<{i}>" for i in range(8)), changed_by="t"
    )
    failures = []

    def edit(i):
        api = ApiClient(token_a)
        try:
            r = api.post("/agents/agent-a/files/c.md/edit", {"old_text": f"<{i}>", "new_text": f"[{i}]"})
            if r.status_code != 200:
                failures.append(r.content)
        finally:
            connection.close()

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    file = WorkspaceFile.objects.get(agent=agent_a, path="c.md")
    assert file.content == "".join(f"[{i}]" for i in range(8))
    assert file.versions.count() == 8


# --- Tenancy: agent A's tokens, agent B's token, another project's admin ------------------------


ENDPOINTS = [
    ("get", "/agents/agent-a/files", None),
    ("get", "/agents/agent-a/files/MEMORY.md", None),
    ("get", "/agents/agent-a/files/MEMORY.md/history", None),
    ("put", "/agents/agent-a/files/MEMORY.md", {"content": "hacked"}),
    ("patch", "/agents/agent-a/files/MEMORY.md", {"enabled": False}),
    ("post", "/agents/agent-a/files/MEMORY.md/edit", {"old_text": "MEMORY", "new_text": "x"}),
    ("delete", "/agents/agent-a/files/MEMORY.md", None),
    ("post", "/agents/agent-a/memory-tool", {"command": "view", "path": "/memories"}),
    (
        "post",
        "/agents/agent-a/memory-tool",
        {"command": "create", "path": "/memories/x.md", "file_text": "x"},
    ),
    ("get", "/agents/agent-a/export", None),
]


def _call(api, method, path, data, token):
    if method in ("get", "delete"):
        return getattr(api, method)(path, token=token)
    return getattr(api, method)(path, data, token=token)


@pytest.mark.parametrize(("method", "path", "data"), ENDPOINTS)
def test_it_hides_agent_a_files_from_agent_b(api, agent_a, token_b, method, path, data):
    before = list(WorkspaceFile.objects.filter(agent=agent_a).values_list("path", "content", "enabled"))
    assert _call(api, method, path, data, token_b).status_code == 404
    assert (
        list(WorkspaceFile.objects.filter(agent=agent_a).values_list("path", "content", "enabled")) == before
    )


@pytest.mark.parametrize(("method", "path", "data"), ENDPOINTS)
def test_another_projects_admin_reaches_only_its_own_agent_a(
    api, agent_a, outsider_token, outsider_agent, method, path, data
):
    services.file_write(agent=agent_a, path="MEMORY.md", content="MEMORY acme-secret\n", changed_by="t")
    services.file_write(
        agent=agent_a, path="memories/x.md", content="acme-secret", changed_by="t", markdown_only=False
    )
    before = list(
        WorkspaceFile.objects.filter(agent=agent_a).values_list("path", "content", "enabled", "deleted_at")
    )
    response = _call(api, method, path, data, outsider_token)
    assert b"acme-secret" not in response.getvalue()
    after = list(
        WorkspaceFile.objects.filter(agent=agent_a).values_list("path", "content", "enabled", "deleted_at")
    )
    assert after == before


@pytest.mark.parametrize("persona", ["token_a", "admin_token"])
@pytest.mark.parametrize(("method", "path", "data"), ENDPOINTS)
def test_it_lets_agent_a_and_the_project_admin_in(api, agent_a, request, persona, method, path, data):
    response = _call(api, method, path, data, request.getfixturevalue(persona))
    assert 200 <= response.status_code < 300, response.content


@pytest.mark.parametrize(
    ("method", "path", "data"), [e for e in ENDPOINTS if e[0] != "get" and "view" not in str(e[2])]
)
def test_it_refuses_writes_with_a_read_token(api, agent_a, read_token_a, method, path, data):
    assert _call(api, method, path, data, read_token_a).status_code == 403


def test_it_requires_a_token(api, agent_a):
    assert api.get("/agents/agent-a/files").status_code == 401
    assert (
        api.post("/agents/agent-a/memory-tool", {"command": "view", "path": "/memories"}).status_code == 401
    )


def test_workspace_files_show_up_in_the_admin(admin_client, agent_a):
    file = WorkspaceFile.objects.get(agent=agent_a, path="MEMORY.md")
    listing = admin_client.get("/admin/vault/workspacefile/", {"q": "MEMORY"})
    assert listing.status_code == 200 and b"MEMORY.md" in listing.content
    assert admin_client.get(f"/admin/vault/workspacefile/{file.pk}/change/").status_code == 200


@pytest.mark.parametrize("path", ["memory/2026-13-45.md", "memory/2026-02-30.md", "memory/2026-13-45-2.md"])
def test_it_refuses_a_daily_note_path_named_by_no_date(api, agent_a, token_a, path):
    """memory/2026-13-45.md was stored as an ordinary file: named as a day's note, it is no day's note
    (consolidation and the context never read it), and an import already reports such a name."""
    response = api.put(f"/agents/agent-a/files/{path}", {"content": "x"}, token=token_a)
    assert response.status_code == 422, response.content
    assert "memory/YYYY-MM-DD.md names a day" in response.json()["detail"]
    assert response.json()["errors"][0]["loc"] == ["path"]
    services.file_write(agent=agent_a, path="notes.md", content="x", changed_by="t")
    with pytest.raises(InvalidInput, match="names a day"):
        services.file_rename(agent=agent_a, old_path="notes.md", new_path=path)
    assert not WorkspaceFile.objects.filter(agent=agent_a, path=path).exists()
    ok = api.put("/agents/agent-a/files/memory/2026-02-28.md", {"content": "x"}, token=token_a)
    assert ok.status_code == 201, ok.content


@pytest.mark.parametrize("path", ["a\r.md", "notes\t.md", "a\x1b[31m.md", "memories/x\x7f", "a\u202egnp.md"])
def test_it_refuses_control_characters_in_a_path(api, agent_a, token_a, path):
    """A newline, a tab, an escape sequence or a right-to-left override was stored in a file's name, and
    shown raw wherever files are listed (the files page, the export's file names, an agent's listing).
    (A newline never reached the API, whose URL pattern stops at one, but MCP's workspace_write and the
    memory tool stored it.)"""
    from urllib.parse import quote

    response = api.put(f"/agents/agent-a/files/{quote(path)}", {"content": "x"}, token=token_a)
    assert response.status_code == 422, response.content
    assert "no control characters" in response.json()["detail"]
    assert not WorkspaceFile.objects.filter(agent=agent_a, path=path).exists()
    with pytest.raises(InvalidInput, match="no control characters"):
        services.file_write(agent=agent_a, path=path.replace("\r", "\n"), content="x", changed_by="t")


def test_a_path_over_255_characters_is_invalid_wherever_a_file_is_named_and_never_echoed_whole(
    api, agent_a, token_a
):
    """No stored file has a path over 255 characters, but a read, a settings change, an edit, a history
    or a delete of one looked it up and answered 404 with the whole path in its detail (a path of
    100,000 characters came back whole). It is an invalid path now, as for a write (422 naming the
    field), and every error quotes at most 80 characters of it."""
    long_path = "x" * 100_000 + ".md"
    answers = [
        api.get(f"/agents/agent-a/files/{long_path}", token=token_a),
        api.get(f"/agents/agent-a/files/{long_path}/history", token=token_a),
        api.patch(f"/agents/agent-a/files/{long_path}", {"enabled": True}, token=token_a),
        api.post(
            f"/agents/agent-a/files/{long_path}/edit", {"old_text": "a", "new_text": "b"}, token=token_a
        ),
        api.delete(f"/agents/agent-a/files/{long_path}", token=token_a),
        api.put(f"/agents/agent-a/files/{long_path}", {"content": "x"}, token=token_a),
    ]
    for response in answers:
        assert response.status_code == 422, response.content[:300]
        body = response.json()
        assert "at most 255 characters" in body["detail"]
        assert len(body["detail"]) < 400
        assert {"loc": ["path"], "msg": "at most 255 characters"} in body["errors"]
    missing = "y" * 255
    response = api.get(f"/agents/agent-a/files/{missing}", token=token_a)
    assert response.status_code == 404
    assert response.json()["detail"] == f"File {missing!r} not found."


def test_an_unknown_agent_is_named_in_at_most_80_characters(api, admin_token):
    response = api.get("/agents/" + "a" * 50_000 + "/entries", token=admin_token)
    assert response.status_code == 404
    assert response.json()["detail"] == f"Agent {'a' * 79 + '…'!r} not found."
