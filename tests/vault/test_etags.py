"""Compare-and-set over HTTP: ETags on the responses of an entry and of the project context, and
If-Match on their writes (412 when the resource changed since the tag was read)."""

import threading

import pytest
from django.db import connection, transaction

from tests.conftest import ApiClient, until_another_connection_waits_for_a_lock
from vault import services
from vault.etags import if_match_expected
from vault.models import EntryVersion, VaultEntry

pytestmark = pytest.mark.django_db


def _etag(api, entry_id, token) -> str:
    response = api.get(f"/entries/{entry_id}", token=token)
    assert response.status_code == 200
    return response["ETag"]


def _edited_meanwhile(entry) -> None:
    services.entry_update(
        entry_id=entry.pk, changes=services.EntryChanges(content="Edited by another agent"), changed_by="b"
    )


def test_it_sends_an_etag_that_changes_with_each_edit(api, token_a, agent_a, entry_a):
    first = _etag(api, entry_a.pk, token_a)
    assert first.startswith('"') and first.endswith('"') and first == _etag(api, entry_a.pk, token_a)
    patched = api.patch(f"/entries/{entry_a.pk}", {"content": "Use PostgreSQL 16"}, token=token_a)
    assert patched.status_code == 200 and patched["ETag"] not in ("", first)
    assert patched["ETag"] == _etag(api, entry_a.pk, token_a)
    created = api.post(
        "/agents/agent-a/entries", {"category": "lessons", "content": "A new one"}, token=token_a
    )
    assert created.status_code == 201 and created["ETag"] == _etag(api, created.json()["id"], token_a)


def test_it_applies_a_patch_whose_if_match_is_current(api, token_a, entry_a):
    etag = _etag(api, entry_a.pk, token_a)
    response = api.patch(
        f"/entries/{entry_a.pk}", {"content": "Use PostgreSQL 16"}, token=token_a, headers={"If-Match": etag}
    )
    assert response.status_code == 200
    assert VaultEntry.objects.get(pk=entry_a.pk).content == "Use PostgreSQL 16"


def test_it_refuses_a_stale_if_match_with_412_and_changes_nothing(api, token_a, entry_a):
    stale = _etag(api, entry_a.pk, token_a)
    _edited_meanwhile(entry_a)
    current = _etag(api, entry_a.pk, token_a)
    versions = list(EntryVersion.objects.filter(entry_id=entry_a.pk).values_list("pk", flat=True))
    response = api.patch(
        f"/entries/{entry_a.pk}", {"content": "Mine"}, token=token_a, headers={"If-Match": stale}
    )
    assert response.status_code == 412
    body = response.json()
    entry = VaultEntry.objects.get(pk=entry_a.pk)
    assert body["current"]["etag"] == current == response["ETag"]
    assert (
        body["current"]["updated_at"] == api.get(f"/entries/{entry_a.pk}", token=token_a).json()["updated_at"]
    )
    assert f"Entry {entry_a.pk} has changed since it was read" in body["detail"]
    assert entry.content == "Edited by another agent"
    assert list(EntryVersion.objects.filter(entry_id=entry_a.pk).values_list("pk", flat=True)) == versions


def test_it_accepts_a_star_and_any_one_of_several_etags(api, token_a, entry_a):
    stale = _etag(api, entry_a.pk, token_a)
    _edited_meanwhile(entry_a)
    current = _etag(api, entry_a.pk, token_a)
    url = f"/entries/{entry_a.pk}"
    response = api.patch(
        url, {"importance": 0.9}, token=token_a, headers={"If-Match": f'{stale}, "x,y", {current}'}
    )
    assert response.status_code == 200
    response = api.patch(url, {"importance": 0.8}, token=token_a, headers={"If-Match": "*"})
    assert response.status_code == 200
    # A weak tag never matches (If-Match compares strongly), nor does another entry's or a stale one.
    for header in (f"W/{response['ETag']}", f'{current}, "e1-0"'):
        assert (
            api.patch(url, {"importance": 0.1}, token=token_a, headers={"If-Match": header}).status_code
            == 412
        )
    assert VaultEntry.objects.get(pk=entry_a.pk).importance == 0.8


MALFORMED_IF_MATCH = ["", "e42-1", '"unterminated', "*, *", '"a" "b"', '"in"side"', '"a b"']


@pytest.mark.parametrize("header", MALFORMED_IF_MATCH)
def test_it_refuses_a_malformed_if_match_with_422(api, token_a, entry_a, header):
    before = VaultEntry.objects.get(pk=entry_a.pk).content
    for method, data in (("patch", {"content": "Mine"}), ("delete", None)):
        response = api.request(
            method, f"/entries/{entry_a.pk}", data, token=token_a, headers={"If-Match": header}
        )
        assert response.status_code == 422, (method, header)
        assert "Malformed If-Match header" in response.json()["detail"]
    assert VaultEntry.objects.get(pk=entry_a.pk).content == before


def test_it_keeps_an_entry_deleted_with_a_stale_if_match(api, token_a, entry_a):
    stale = _etag(api, entry_a.pk, token_a)
    _edited_meanwhile(entry_a)
    response = api.delete(f"/entries/{entry_a.pk}", token=token_a, headers={"If-Match": stale})
    assert response.status_code == 412 and response["ETag"] == _etag(api, entry_a.pk, token_a)
    assert VaultEntry.objects.filter(pk=entry_a.pk).exists()
    assert not EntryVersion.objects.filter(entry_id=entry_a.pk, action="delete").exists()
    response = api.delete(f"/entries/{entry_a.pk}", token=token_a, headers={"If-Match": response["ETag"]})
    assert response.status_code == 204 and not VaultEntry.objects.filter(pk=entry_a.pk).exists()


def test_it_answers_404_not_412_for_another_agents_entry(api, token_a, entry_b):
    response = api.patch(
        f"/entries/{entry_b.pk}", {"content": "x"}, token=token_a, headers={"If-Match": '"x"'}
    )
    assert response.status_code == 404


def test_the_project_context_has_an_etag_and_honours_if_match(api, admin_token, project):
    got = api.get("/project/context", token=admin_token)
    etag = got["ETag"]
    response = api.put("/project/context", {"content": "v1"}, token=admin_token, headers={"If-Match": etag})
    assert response.status_code == 200 and response["ETag"] != etag
    response = api.put("/project/context", {"content": "v2"}, token=admin_token, headers={"If-Match": etag})
    assert response.status_code == 412
    assert (
        response.json()["current"]["etag"]
        == response["ETag"]
        == api.get("/project/context", token=admin_token)["ETag"]
    )
    project.refresh_from_db()
    assert project.context == "v1" and project.context_versions.count() == 1
    assert (
        api.put(
            "/project/context", {"content": "v3"}, token=admin_token, headers={"If-Match": "bad"}
        ).status_code
        == 422
    )


def test_without_if_match_the_last_write_wins_as_before(api, token_a, entry_a):
    _etag(api, entry_a.pk, token_a)
    _edited_meanwhile(entry_a)
    assert api.patch(f"/entries/{entry_a.pk}", {"content": "Mine"}, token=token_a).status_code == 200
    assert VaultEntry.objects.get(pk=entry_a.pk).content == "Mine"


def test_the_openapi_document_declares_if_match_and_the_412(api):
    paths = api.client.get("/api/v1/openapi.json").json()["paths"]
    for path, method in (
        ("/api/v1/entries/{entry_id}", "patch"),
        ("/api/v1/entries/{entry_id}", "delete"),
        ("/api/v1/project/context", "put"),
    ):
        operation = paths[path][method]
        assert "If-Match" in [p["name"] for p in operation["parameters"] if p["in"] == "header"], path
        assert operation["responses"]["412"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/PreconditionFailedOut"
        }
    assert "ETag" in paths["/api/v1/entries/{entry_id}"]["get"]["responses"]["200"]["headers"]
    assert "ETag" in paths["/api/v1/agents/{agent}/entries"]["post"]["responses"]["201"]["headers"]
    assert "412" not in paths["/api/v1/entries/{entry_id}"]["get"]["responses"]


def test_the_if_match_pattern_of_the_document_is_the_rule_the_server_applies(api):
    """So that a client generating headers from the schema (schemathesis) sends what the server reads."""
    import re

    from memoryproject.errors import InvalidInput

    operation = api.client.get("/api/v1/openapi.json").json()["paths"]["/api/v1/entries/{entry_id}"]["patch"]
    [header] = [p for p in operation["parameters"] if p["in"] == "header"]
    pattern = re.compile(header["schema"]["pattern"])
    for value in ["*", " * ", '"e1-2"', 'W/"x"', '"a", "b,c" ,W/"d"', '""']:
        assert pattern.match(value), value
        if_match_expected(value)
    for value in MALFORMED_IF_MATCH:
        assert not pattern.match(value), value
        with pytest.raises(InvalidInput):
            if_match_expected(value)


@pytest.mark.django_db(transaction=True)
def test_of_two_clients_that_read_the_same_state_exactly_one_writes(token_a, entry_a):
    """Both read, then both PATCH with the ETag they read: the second, waiting for the row lock the
    first holds, finds the entry changed and gets 412, whatever the timing."""
    etag = _etag(ApiClient(), entry_a.pk, token_a)
    held, release, statuses = threading.Event(), threading.Event(), {}

    def first():
        try:
            with transaction.atomic():
                # The first client's edit, its row lock held until the second one waits for it.
                services.entry_update(
                    entry_id=entry_a.pk,
                    changes=services.EntryChanges(content="first"),
                    changed_by="first",
                    expected=if_match_expected(etag),
                )
                held.set()
                release.wait(10)
            statuses["first"] = 200
        finally:
            held.set()
            connection.close()

    def second():
        try:
            response = ApiClient(token_a).patch(
                f"/entries/{entry_a.pk}", {"content": "second"}, headers={"If-Match": etag}
            )
            statuses["second"] = response.status_code
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert held.wait(10)
    two = threading.Thread(target=second)
    two.start()
    until_another_connection_waits_for_a_lock()
    release.set()
    one.join(10)
    two.join(10)
    assert statuses == {"first": 200, "second": 412}
    assert VaultEntry.objects.get(pk=entry_a.pk).content == "first"
    assert EntryVersion.objects.filter(entry_id=entry_a.pk).count() == 1


@pytest.mark.django_db(transaction=True)
def test_of_two_clients_patching_at_once_exactly_one_wins(token_a, entry_a):
    etag = _etag(ApiClient(), entry_a.pk, token_a)
    start, statuses = threading.Barrier(2), []

    def client(content):
        try:
            start.wait(10)
            response = ApiClient(token_a).patch(
                f"/entries/{entry_a.pk}", {"content": content}, headers={"If-Match": etag}
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert sorted(statuses) == [200, 412]
    assert VaultEntry.objects.get(pk=entry_a.pk).content in ("one", "two")
    assert EntryVersion.objects.filter(entry_id=entry_a.pk).count() == 1
