import pytest

from vault import services
from vault.models import WorkspaceFile


def tool(api, token, **command):
    return api.post("/agents/agent-a/memory-tool", command, token=token)


def ok(api, token, **command) -> str:
    response = tool(api, token, **command)
    assert response.status_code == 200, response.content
    return response.json()["result"]


def error(api, token, status, **command) -> str:
    response = tool(api, token, **command)
    assert response.status_code == status, response.content
    return response.json()["detail"]


def test_it_creates_and_views_a_file_with_line_numbers(api, agent_a, token_a):
    assert ok(api, token_a, command="create", path="/memories/notes.md", file_text="one\ntwo\nthree") == (
        "File created successfully at: /memories/notes.md"
    )
    assert WorkspaceFile.objects.get(agent=agent_a, path="memories/notes.md").content == "one\ntwo\nthree"
    assert ok(api, token_a, command="view", path="/memories/notes.md") == (
        "Here's the content of /memories/notes.md with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree"
    )


def test_it_views_a_line_range(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/n.txt", file_text="a\nb\nc\nd")
    assert ok(api, token_a, command="view", path="/memories/n.txt", view_range=[2, 3]).endswith(
        "\n     2\tb\n     3\tc"
    )
    assert ok(api, token_a, command="view", path="/memories/n.txt", view_range=[3, -1]).endswith(
        "\n     3\tc\n     4\td"
    )
    assert "Invalid `view_range`" in error(
        api, token_a, 422, command="view", path="/memories/n.txt", view_range=[9, 10]
    )
    assert "Invalid `view_range`" in error(
        api, token_a, 422, command="view", path="/memories/n.txt", view_range=[3, 2]
    )
    assert error(api, token_a, 422, command="view", path="/memories/n.txt", view_range=[1])


def test_it_views_the_directory_two_levels_deep_without_hidden_items(api, agent_a, token_a):
    assert ok(api, token_a, command="view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories"
    )
    ok(api, token_a, command="create", path="/memories/a.md", file_text="x" * 2048)
    ok(api, token_a, command="create", path="/memories/proj/b.md", file_text="hello")
    ok(api, token_a, command="create", path="/memories/proj/deep/c.md", file_text="c")
    ok(api, token_a, command="create", path="/memories/.hidden.md", file_text="secret")
    listing = ok(api, token_a, command="view", path="/memories")
    assert listing.splitlines() == [
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
        "2.0K\t/memories",
        "2K\t/memories/a.md",
        "6B\t/memories/proj/",
        "5B\t/memories/proj/b.md",
        "1B\t/memories/proj/deep/",
    ]
    sub = ok(api, token_a, command="view", path="/memories/proj/")
    assert sub.splitlines()[1:] == [
        "6B\t/memories/proj",
        "5B\t/memories/proj/b.md",
        "1B\t/memories/proj/deep/",
        "1B\t/memories/proj/deep/c.md",
    ]


def test_it_says_a_missing_path_does_not_exist(api, agent_a, token_a):
    assert error(api, token_a, 404, command="view", path="/memories/nope.md") == (
        "The path /memories/nope.md does not exist. Please provide a valid path."
    )


def test_it_only_sees_memories_files(api, agent_a, token_a):
    # MEMORY.md exists in the workspace but is not under memories/.
    assert "Path must start with /memories" in error(api, token_a, 422, command="view", path="/MEMORY.md")
    assert "0B\t/memories" in ok(api, token_a, command="view", path="/memories")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/memories/../MEMORY.md", "no '..' segments"),
        ("/memories/a\\b.md", "no backslashes"),
        ("/memories/a\x00.md", "no NUL"),
        ("/memoriesX/a.md", "Path must start with /memories"),
        ("memories/a.md", "Path must start with /memories"),
        ("/memories//a.md", "no empty or '.' segments"),
    ],
)
def test_it_rejects_bad_paths(api, agent_a, token_a, path, reason):
    assert reason in error(api, token_a, 422, command="create", path=path, file_text="x")
    assert not WorkspaceFile.objects.filter(agent=agent_a, path__startswith="memories").exists()


def test_it_refuses_to_create_an_existing_file(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/a.md", file_text="first")
    assert error(api, token_a, 409, command="create", path="/memories/a.md", file_text="second") == (
        "File /memories/a.md already exists"
    )
    assert WorkspaceFile.objects.get(agent=agent_a, path="memories/a.md").content == "first"
    ok(api, token_a, command="create", path="/memories/d/x.md", file_text="x")
    assert "is a directory" in error(api, token_a, 409, command="create", path="/memories/d", file_text="y")
    assert "is a file" in error(
        api, token_a, 409, command="create", path="/memories/a.md/z.md", file_text="y"
    )
    assert "Missing `file_text`" in error(api, token_a, 422, command="create", path="/memories/b.md")


def test_it_replaces_a_unique_string_and_shows_a_snippet(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/p.md", file_text="l1\nl2\nl3 coffee\nl4\nl5\nl6")
    result = ok(api, token_a, command="str_replace", path="/memories/p.md", old_str="coffee", new_str="tea")
    assert result == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\tl1\n     2\tl2\n     3\tl3 tea\n     4\tl4\n     5\tl5"
    )
    file = WorkspaceFile.objects.get(agent=agent_a, path="memories/p.md")
    assert "tea" in file.content and file.versions.get().content.count("coffee") == 1


def test_it_refuses_str_replace_when_absent_or_repeated(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/p.md", file_text="x\ny x\nz")
    assert error(
        api, token_a, 422, command="str_replace", path="/memories/p.md", old_str="q", new_str="r"
    ) == ("No replacement was performed, old_str `q` did not appear verbatim in /memories/p.md.")
    assert error(
        api, token_a, 422, command="str_replace", path="/memories/p.md", old_str="x", new_str="r"
    ) == (
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 2. Please ensure it is unique"
    )
    assert error(api, token_a, 404, command="str_replace", path="/memories/no.md", old_str="x", new_str="r")
    ok(api, token_a, command="create", path="/memories/dir/f.md", file_text="f")
    assert "is not a file" in error(
        api, token_a, 422, command="str_replace", path="/memories/dir", old_str="f", new_str="g"
    )
    assert WorkspaceFile.objects.get(agent=agent_a, path="memories/p.md").content == "x\ny x\nz"


def test_it_inserts_at_a_line(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/i.md", file_text="a\nb\n")
    assert ok(api, token_a, command="insert", path="/memories/i.md", insert_line=1, insert_text="NEW\n") == (
        "The file /memories/i.md has been edited."
    )
    ok(api, token_a, command="insert", path="/memories/i.md", insert_line=0, insert_text="TOP")
    ok(api, token_a, command="insert", path="/memories/i.md", insert_line=4, insert_text="END")
    assert WorkspaceFile.objects.get(agent=agent_a, path="memories/i.md").content == "TOP\na\nNEW\nb\nEND\n"
    assert error(
        api, token_a, 422, command="insert", path="/memories/i.md", insert_line=9, insert_text="x"
    ) == ("Invalid `insert_line` parameter: 9. It should be within the range [0, 5].")
    assert "range [0, 5]" in error(
        api, token_a, 422, command="insert", path="/memories/i.md", insert_line=-1, insert_text="x"
    )
    assert error(
        api, token_a, 404, command="insert", path="/memories/none.md", insert_line=0, insert_text="x"
    )
    assert "Missing `insert_line`" in error(
        api, token_a, 422, command="insert", path="/memories/i.md", insert_text="x"
    )


def test_it_deletes_a_file_or_a_directory(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/a.md", file_text="a")
    ok(api, token_a, command="create", path="/memories/d/b.md", file_text="b")
    ok(api, token_a, command="create", path="/memories/d/e/c.md", file_text="c")
    assert ok(api, token_a, command="delete", path="/memories/a.md") == "Successfully deleted /memories/a.md"
    assert ok(api, token_a, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    assert not WorkspaceFile.objects.filter(
        agent=agent_a, path__startswith="memories/", deleted_at__isnull=True
    ).exists()
    assert WorkspaceFile.objects.filter(agent=agent_a, path__startswith="memories/").count() == 3  # soft
    assert (
        error(api, token_a, 404, command="delete", path="/memories/a.md")
        == "The path /memories/a.md does not exist"
    )
    assert (
        error(api, token_a, 422, command="delete", path="/memories")
        == "Cannot delete the /memories directory itself"
    )


def test_it_renames_a_file_keeping_its_history(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/old.md", file_text="v1")
    ok(api, token_a, command="str_replace", path="/memories/old.md", old_str="v1", new_str="v2")
    assert ok(
        api, token_a, command="rename", old_path="/memories/old.md", new_path="/memories/archive/new.md"
    ) == ("Successfully renamed /memories/old.md to /memories/archive/new.md")
    file = WorkspaceFile.objects.get(agent=agent_a, path="memories/archive/new.md", deleted_at__isnull=True)
    assert file.content == "v2" and file.versions.get().content == "v1"
    assert error(api, token_a, 404, command="view", path="/memories/old.md")


def test_it_renames_a_directory(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/a/x.md", file_text="x")
    ok(api, token_a, command="create", path="/memories/a/y/z.md", file_text="z")
    ok(api, token_a, command="rename", old_path="/memories/a", new_path="/memories/b")
    paths = set(
        WorkspaceFile.objects.filter(
            agent=agent_a, deleted_at__isnull=True, path__startswith="memories/"
        ).values_list("path", flat=True)
    )
    assert paths == {"memories/b/x.md", "memories/b/y/z.md"}


def test_it_refuses_bad_renames(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/a.md", file_text="a")
    ok(api, token_a, command="create", path="/memories/b.md", file_text="b")
    ok(api, token_a, command="create", path="/memories/d/c.md", file_text="c")
    assert error(
        api, token_a, 409, command="rename", old_path="/memories/a.md", new_path="/memories/b.md"
    ) == ("The destination /memories/b.md already exists")
    assert error(api, token_a, 409, command="rename", old_path="/memories/a.md", new_path="/memories/d")
    assert error(
        api, token_a, 404, command="rename", old_path="/memories/zz.md", new_path="/memories/q.md"
    ) == ("The path /memories/zz.md does not exist")
    assert "into itself" in error(
        api, token_a, 422, command="rename", old_path="/memories/d", new_path="/memories/d/e"
    )
    assert "no '..'" in error(
        api, token_a, 422, command="rename", old_path="/memories/a.md", new_path="/memories/../x.md"
    )
    assert error(api, token_a, 422, command="rename", old_path="/memories", new_path="/memories/x")
    assert (
        WorkspaceFile.objects.get(agent=agent_a, path="memories/a.md", deleted_at__isnull=True).content == "a"
    )


def test_it_rejects_an_unknown_command(api, agent_a, token_a):
    assert tool(api, token_a, command="format", path="/memories").status_code == 422


def test_memory_tool_files_are_workspace_files_listed_by_the_files_api(api, agent_a, token_a):
    ok(api, token_a, command="create", path="/memories/n.md", file_text="n")
    listed = api.get("/agents/agent-a/files", token=token_a, prefix="memories/").json()
    assert [f["path"] for f in listed["items"]] == ["memories/n.md"]
    assert listed["items"][0]["enabled"] is False


def test_a_read_token_may_view_but_not_write(api, agent_a, read_token_a):
    services.file_write(agent=agent_a, path="memories/r.md", content="r", changed_by="t", markdown_only=False)
    assert "1\tr" in ok(api, read_token_a, command="view", path="/memories/r.md")
    assert tool(api, read_token_a, command="delete", path="/memories/r.md").status_code == 403
