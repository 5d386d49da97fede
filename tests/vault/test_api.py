import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from vault import selectors
from vault.models import EntryVersion, Project, TokenScope, VaultEntry
from vault.principal import Principal

pytestmark = pytest.mark.django_db


# --- auth ---------------------------------------------------------------------------------------


def test_it_rejects_a_missing_token(api):
    response = api.get("/agents")
    assert response.status_code == 401
    assert "bearer token" in response.json()["detail"]


def test_it_rejects_an_unknown_token(api, project):
    assert api.get("/agents", token="mem_not-a-real-token").status_code == 401


def test_it_rejects_a_revoked_token(api, agent_a):
    from vault import services

    token, secret = services.token_create(project=agent_a.project, agent=agent_a)
    assert api.get("/agents", token=secret).status_code == 200
    services.token_revoke(token=token)
    assert api.get("/agents", token=secret).status_code == 401


def test_it_stores_only_a_hash_of_the_token(agent_a, token_a):
    from vault.models import ApiToken

    stored = ApiToken.objects.get(agent=agent_a)
    assert token_a not in (stored.token_hash, stored.prefix)
    assert len(stored.token_hash) == 64


def test_it_records_last_use(api, agent_a, token_a):
    from vault.models import ApiToken

    assert ApiToken.objects.get(agent=agent_a).last_used_at is None
    api.get("/agents", token=token_a)
    assert ApiToken.objects.get(agent=agent_a).last_used_at is not None


def test_healthz_needs_no_token(api, db):
    response = api.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["database"]) == ("ok", "ok")
    assert set(body["embeddings"]) >= {"backend", "model", "pending", "enabled"}


def test_it_serves_the_openapi_schema(api, db):
    response = api.client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/v1/agents/{agent}/entries" in paths
    assert "/api/v1/entries/{entry_id}/history" in paths


# --- agents -------------------------------------------------------------------------------------


def test_agent_list_shows_counts_per_category(api, admin_token, entry_a, entry_b):
    response = api.get("/agents", token=admin_token)
    assert response.status_code == 200
    by_id = {agent["id"]: agent for agent in response.json()}
    assert by_id["agent-a"]["counts"] == {
        "decisions": 1,
        "lessons": 0,
        "tasks": 0,
        "projects": 0,
        "handoffs": 0,
    }
    assert by_id["agent-b"]["counts"]["lessons"] == 1


def test_agent_list_for_an_agent_token_shows_only_that_agent(api, token_a, agent_b):
    assert [agent["id"] for agent in api.get("/agents", token=token_a).json()] == ["agent-a"]


def test_agent_list_of_another_project_shows_nothing_of_this_one(api, outsider_token, entry_a, agent_b):
    ids = [agent["id"] for agent in api.get("/agents", token=outsider_token).json()]
    assert ids == ["agent-a"]  # the other project's own agent-a
    assert api.get("/agents", token=outsider_token).json()[0]["counts"]["decisions"] == 0


def test_archived_entries_are_not_counted(api, admin_token, entry_a):
    api.patch(f"/entries/{entry_a.pk}", {"status": "archived"}, token=admin_token)
    by_id = {agent["id"]: agent for agent in api.get("/agents", token=admin_token).json()}
    assert by_id["agent-a"]["counts"]["decisions"] == 0


# --- create -------------------------------------------------------------------------------------


def test_it_creates_an_entry_with_hashtags_as_tags(api, token_a):
    response = api.post(
        "/agents/agent-a/entries",
        {
            "category": "decisions",
            "content": "Use SSE, not WebSockets #sse #Architecture",
            "tags": ["Infra", "#sse"],
        },
        token=token_a,
    )
    assert response.status_code == 201
    body = response.json()
    assert body["agent"] == "agent-a"
    assert body["tags"] == ["infra", "sse", "architecture"]
    assert body["status"] == "active" and body["source"] == "api" and body["importance"] == 0.5
    assert body["created_by"].startswith("token:mem_")
    assert VaultEntry.objects.get(pk=body["id"]).content.startswith("Use SSE")


def test_an_agent_tokens_write_reads_its_agent_with_the_token(api, token_a):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api.post("/agents/agent-a/entries", {"category": "decisions", "content": "first"}, token=token_a)
    with CaptureQueriesContext(connection) as queries:
        response = api.post(
            "/agents/agent-a/entries", {"category": "decisions", "content": "Use SSE #sse"}, token=token_a
        )
    assert response.status_code == 201 and response.json()["agent"] == "agent-a"
    statements = [query["sql"] for query in queries.captured_queries]
    # The token (and its agent), the rate limit's counter, the project's flags, BEGIN, the write
    # lock, the duplicate candidates, the INSERT, COMMIT: no statement of its own for the agent.
    assert len(statements) == 8, statements


def test_a_project_tokens_request_reads_the_agent_it_names_with_the_token(api, admin_token, agent_a, agent_b):
    """The agent named by the path or by search's `agent=` is read by the token's statement: no
    statement of its own. An agent that does not exist is still looked for, and answered 404."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def agent_reads(method, *args, **kwargs):
        with CaptureQueriesContext(connection) as queries:
            response = method(*args, token=admin_token, **kwargs)
        reads = [q["sql"] for q in queries.captured_queries if "FROM vault_agent WHERE" in q["sql"]]
        return response, reads

    response, reads = agent_reads(api.get, "/search", q="anything", agent="agent-b", kinds="entries")
    assert response.status_code == 200 and reads == []
    response, reads = agent_reads(api.post, "/agents/agent-a/context", {"command": "anything"})
    assert response.status_code == 200 and reads == []
    response, reads = agent_reads(api.get, "/search", q="anything", agent="nobody")
    assert response.status_code == 404 and len(reads) == 1


def test_it_creates_the_agent_on_first_use_with_a_project_token(api, admin_token):
    response = api.post(
        "/agents/new-agent/entries", {"category": "tasks", "content": "- [ ] write docs"}, token=admin_token
    )
    assert response.status_code == 201
    assert "new-agent" in [agent["id"] for agent in api.get("/agents", token=admin_token).json()]


def test_it_keeps_importance(api, token_a):
    response = api.post(
        "/agents/agent-a/entries",
        {"category": "lessons", "content": "x y z", "importance": 0.9},
        token=token_a,
    )
    assert response.json()["importance"] == 0.9


@pytest.mark.parametrize(
    ("payload", "status", "needle"),
    [
        ({"category": "ideas", "content": "x"}, 422, "category"),
        ({"category": "decisions", "content": ""}, 422, "content must not be empty"),
        ({"category": "decisions", "content": "   \n "}, 422, "content must not be empty"),
        ({"category": "decisions"}, 422, "content"),
        ({"category": "decisions", "content": "a\x00b"}, 422, "NUL"),
        ({"category": "decisions", "content": "x" * (64 * 1024 + 1)}, 413, "limit is 65536"),
        ({"category": "decisions", "content": "x", "importance": 1.5}, 422, "importance"),
        ({"category": "decisions", "content": "x", "importance": "high"}, 422, "importance"),
        ({"category": "decisions", "content": "x", "tags": ["no spaces allowed"]}, 422, "Invalid tag"),
        ({"category": "decisions", "content": "x", "tags": "notalist"}, 422, "tags"),
        ({"category": "decisions", "content": 42}, 422, "content"),
    ],
)
def test_it_rejects_bad_entries_with_a_clear_error(api, token_a, payload, status, needle):
    response = api.post("/agents/agent-a/entries", payload, token=token_a)
    assert response.status_code == status, response.content
    assert needle in response.json()["detail"]
    assert VaultEntry.objects.count() == 0


def test_it_accepts_content_exactly_at_the_limit(api, token_a):
    response = api.post(
        "/agents/agent-a/entries", {"category": "lessons", "content": "é" * (32 * 1024)}, token=token_a
    )
    assert response.status_code == 201


def test_it_rejects_malformed_json(api, token_a):
    response = api.post("/agents/agent-a/entries", raw="{not json", token=token_a)
    assert response.status_code == 400
    assert "Malformed JSON" in response.json()["detail"]


@pytest.mark.parametrize("slug", ["UPPER", "has space", "a" * 65, "sl/ash", "ümlaut"])
def test_it_rejects_bad_agent_slugs(api, admin_token, slug):
    from urllib.parse import quote

    response = api.post(
        f"/agents/{quote(slug, safe='')}/entries", {"category": "tasks", "content": "x"}, token=admin_token
    )
    assert response.status_code in (404, 422)
    assert "detail" in response.json()
    assert VaultEntry.objects.count() == 0


def test_a_read_token_cannot_write(api, read_token_a):
    response = api.post("/agents/agent-a/entries", {"category": "tasks", "content": "x"}, token=read_token_a)
    assert response.status_code == 403
    assert "scope" in response.json()["detail"]


def test_an_agent_token_cannot_write_to_another_agent(api, token_a, agent_b):
    response = api.post("/agents/agent-b/entries", {"category": "tasks", "content": "x"}, token=token_a)
    assert response.status_code == 404
    assert not VaultEntry.objects.filter(agent=agent_b).exists()


def test_an_agent_token_cannot_create_new_agents(api, token_a):
    response = api.post("/agents/agent-z/entries", {"category": "tasks", "content": "x"}, token=token_a)
    assert response.status_code == 404


def test_another_projects_admin_writes_only_to_its_own_agent(api, outsider_token, agent_a, outsider_agent):
    response = api.post(
        "/agents/agent-a/entries", {"category": "tasks", "content": "x"}, token=outsider_token
    )
    assert response.status_code == 201
    assert VaultEntry.objects.get().agent == outsider_agent
    assert not VaultEntry.objects.filter(agent=agent_a).exists()


# --- list ---------------------------------------------------------------------------------------


def _make(api, token, agent="agent-a", **fields):
    payload = {"category": "decisions", "content": "entry", **fields}
    response = api.post(f"/agents/{agent}/entries", payload, token=token)
    assert response.status_code == 201, response.content
    return response.json()


def test_it_lists_newest_first_with_filters(api, token_a):
    first = _make(api, token_a, content="first #alpha")
    second = _make(api, token_a, category="lessons", content="second #beta")
    third = _make(api, token_a, content="third #alpha")
    body = api.get("/agents/agent-a/entries", token=token_a).json()
    assert [item["id"] for item in body["items"]] == [third["id"], second["id"], first["id"]]
    assert body["count"] == 3
    assert [
        i["id"]
        for i in api.get("/agents/agent-a/entries", token=token_a, category="decisions").json()["items"]
    ] == [
        third["id"],
        first["id"],
    ]
    assert [
        i["id"] for i in api.get("/agents/agent-a/entries", token=token_a, tag="beta").json()["items"]
    ] == [second["id"]]
    page = api.get("/agents/agent-a/entries", token=token_a, limit=1, offset=1).json()
    assert [i["id"] for i in page["items"]] == [second["id"]] and page["count"] == 3


def test_it_lists_archived_entries_only_when_asked(api, token_a):
    entry = _make(api, token_a)
    api.patch(f"/entries/{entry['id']}", {"status": "archived"}, token=token_a)
    assert api.get("/agents/agent-a/entries", token=token_a).json()["count"] == 0
    assert api.get("/agents/agent-a/entries", token=token_a, status="archived").json()["count"] == 1
    assert api.get("/agents/agent-a/entries", token=token_a, status="all").json()["count"] == 1


@pytest.mark.parametrize(
    "query",
    [{"limit": 0}, {"limit": 501}, {"offset": -1}, {"limit": "ten"}, {"category": "ideas"}, {"status": "x"}],
)
def test_it_rejects_bad_list_parameters(api, token_a, query):
    response = api.get("/agents/agent-a/entries", token=token_a, **query)
    assert response.status_code == 422
    assert response.json()["detail"].startswith("Invalid input")


def test_listing_another_agents_entries_is_not_found(api, token_a, entry_b):
    assert api.get("/agents/agent-b/entries", token=token_a).status_code == 404


def test_listing_an_unknown_agent_is_not_found(api, admin_token):
    assert api.get("/agents/nobody/entries", token=admin_token).status_code == 404


def test_another_project_cannot_list_this_projects_agent(api, outsider_token, entry_a):
    body = api.get("/agents/agent-a/entries", token=outsider_token).json()
    assert body["count"] == 0  # its own agent-a is empty; ours is invisible


# --- get / patch / delete / history -------------------------------------------------------------


def test_it_gets_an_entry(api, token_a, entry_a):
    response = api.get(f"/entries/{entry_a.pk}", token=token_a)
    assert response.status_code == 200
    assert response.json()["content"] == entry_a.content


@pytest.mark.parametrize("entry_id", ["abc", "0", "-1", "99999999999999999999999", "1.5"])
def test_it_rejects_bad_ids(api, token_a, entry_id):
    response = api.get(f"/entries/{entry_id}", token=token_a)
    assert response.status_code in (404, 422)
    assert "detail" in response.json()


@pytest.mark.parametrize("persona", ["token_b", "outsider_token"])
def test_other_personas_cannot_see_change_or_delete_an_entry(api, request, entry_a, persona):
    token = request.getfixturevalue(persona)
    assert api.get(f"/entries/{entry_a.pk}", token=token).status_code == 404
    assert api.patch(f"/entries/{entry_a.pk}", {"content": "hijacked"}, token=token).status_code == 404
    assert api.delete(f"/entries/{entry_a.pk}", token=token).status_code == 404
    assert api.get(f"/entries/{entry_a.pk}/history", token=token).status_code == 404
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use PostgreSQL #database"
    assert not EntryVersion.objects.exists()


def test_the_project_admin_can_change_any_agents_entry(api, admin_token, entry_a):
    response = api.patch(f"/entries/{entry_a.pk}", {"importance": 0.8}, token=admin_token)
    assert response.status_code == 200 and response.json()["importance"] == 0.8


def test_patch_keeps_the_previous_version(api, token_a, entry_a):
    response = api.patch(f"/entries/{entry_a.pk}", {"content": "We decided to use MySQL #db"}, token=token_a)
    assert response.status_code == 200
    assert response.json()["content"] == "We decided to use MySQL #db"
    assert response.json()["tags"] == ["database", "db"]
    history = api.get(f"/entries/{entry_a.pk}/history", token=token_a).json()
    assert len(history) == 1
    assert history[0]["content"] == "We decided to use PostgreSQL #database"
    assert history[0]["action"] == "edit"
    assert history[0]["changed_by"].startswith("token:")


def test_history_is_newest_first(api, token_a, entry_a):
    api.patch(f"/entries/{entry_a.pk}", {"content": "v2"}, token=token_a)
    api.patch(f"/entries/{entry_a.pk}", {"content": "v3"}, token=token_a)
    contents = [v["content"] for v in api.get(f"/entries/{entry_a.pk}/history", token=token_a).json()]
    assert contents == ["v2", "We decided to use PostgreSQL #database"]


def test_patch_that_changes_nothing_stores_no_version(api, token_a, entry_a):
    api.patch(f"/entries/{entry_a.pk}", {"content": entry_a.content}, token=token_a)
    assert api.get(f"/entries/{entry_a.pk}/history", token=token_a).json() == []


def test_tags_in_scripts_with_combining_marks_are_stored_whole_and_found(api, token_a):
    """A tag holding a combining mark (Hindi's vowel signs, an accent typed apart from its letter)
    was a 422 when sent, and a hashtag was cut at the mark (#हिंदी stored as "ह")."""
    response = api.post(
        "/agents/agent-a/entries",
        {"category": "lessons", "content": "UI copy reviewed #हिंदी", "tags": ["cafe\u0301", "ไทย"]},
        token=token_a,
    )
    assert response.status_code == 201, response.content
    entry = response.json()
    assert entry["tags"] == ["café", "ไทย", "हिंदी"]
    for tag in ("café", "cafe\u0301", "#हिंदी"):
        found = api.get("/search", token=token_a, q="copy", tag=tag, agent="agent-a")
        assert found.status_code == 200, found.content
        assert [item["id"] for item in found.json()["results"]] == [entry["id"]], tag


def test_patch_replaces_tags_but_keeps_hashtags(api, token_a, entry_a):
    body = api.patch(f"/entries/{entry_a.pk}", {"tags": ["storage"]}, token=token_a).json()
    assert body["tags"] == ["storage", "database"]


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        ({"content": ""}, 422),
        ({"content": "a\x00"}, 422),
        ({"category": "ideas"}, 422),
        ({"status": "deleted"}, 422),
        ({"importance": -0.1}, 422),
    ],
)
def test_patch_rejects_bad_input_and_changes_nothing(api, token_a, entry_a, payload, status):
    response = api.patch(f"/entries/{entry_a.pk}", payload, token=token_a)
    assert response.status_code == status
    entry_a.refresh_from_db()
    assert entry_a.content == "We decided to use PostgreSQL #database"
    assert not EntryVersion.objects.exists()


def test_a_read_token_cannot_patch_or_delete(api, read_token_a, entry_a):
    assert api.patch(f"/entries/{entry_a.pk}", {"content": "x"}, token=read_token_a).status_code == 403
    assert api.delete(f"/entries/{entry_a.pk}", token=read_token_a).status_code == 403
    assert VaultEntry.objects.filter(pk=entry_a.pk).exists()


def test_delete_keeps_the_last_state_as_a_version(api, token_a, entry_a):
    response = api.delete(f"/entries/{entry_a.pk}", token=token_a)
    assert response.status_code == 204
    assert not VaultEntry.objects.filter(pk=entry_a.pk).exists()
    version = EntryVersion.objects.get(entry_id=entry_a.pk)
    assert version.action == "delete"
    assert version.content == "We decided to use PostgreSQL #database"
    assert api.get(f"/entries/{entry_a.pk}", token=token_a).status_code == 404


# --- project context ----------------------------------------------------------------------------


def test_an_agent_token_reads_the_project_context(api, token_a):
    body = api.get("/project/context", token=token_a).json()
    assert body["content"] == "# Acme\nPayments platform."
    assert body["project"] == "acme"


def test_an_agent_token_cannot_replace_the_project_context(api, token_a):
    assert api.put("/project/context", {"content": "mine now"}, token=token_a).status_code == 403


def test_a_project_token_replaces_the_context_and_keeps_the_old_one(api, admin_token, project):
    response = api.put("/project/context", {"content": "# Acme v2"}, token=admin_token)
    assert response.status_code == 200
    assert response.json()["content"] == "# Acme v2"
    assert response.json()["updated_at"] is not None
    assert project.context_versions.get().content == "# Acme\nPayments platform."


def test_another_project_sees_its_own_context(api, outsider_token):
    assert api.get("/project/context", token=outsider_token).json()["content"] == ""


@pytest.mark.parametrize("payload", [{"content": "a\x00"}, {}, {"content": None}])
def test_project_context_rejects_bad_input(api, admin_token, project, payload):
    response = api.put("/project/context", payload, token=admin_token)
    assert response.status_code == 422
    project.refresh_from_db()
    assert project.context == "# Acme\nPayments platform."


def test_whoami(api, token_a):
    assert api.get("/me", token=token_a).json()["agent"] == "agent-a"


def test_whoami_reads_an_agent_tokens_agent_with_the_token(api, token_a, admin_token):
    api.get("/me", token=token_a)  # the token's last use recorded, the rate counter stored
    with CaptureQueriesContext(connection) as queries:
        body = api.get("/me", token=token_a).json()
    assert body == {"project": "acme", "agent": "agent-a", "scope": "write", "token": body["token"]}
    assert not [q["sql"] for q in queries if 'FROM "vault_agent"' in q["sql"]]
    assert api.get("/me", token=admin_token).json()["agent"] is None


def test_a_principal_whose_project_is_gone_finds_no_project(db):
    with pytest.raises(Project.DoesNotExist):
        selectors.project_for_principal(Principal(project_id=987654, scope=TokenScope.READ, label="gone"))
