"""The vault's management commands."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from vault.models import ApiToken, Project


def test_token_create_with_a_name_too_long_creates_neither_agent_nor_project_nor_token(db):
    """The name reached the database: a DataError traceback, and the agent created just before stayed."""
    with pytest.raises(CommandError, match="at most 200 characters"):
        call_command(
            "token_create",
            "--project", "fresh", "--create-project", "--agent", "newagent", "--name", "n" * 201,
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    assert not Project.objects.filter(slug="fresh").exists()
    assert not ApiToken.objects.exists()


def test_token_create_with_a_name_too_long_leaves_an_existing_project_without_the_new_agent(project):
    with pytest.raises(CommandError, match="at most 200 characters"):
        call_command(
            "token_create", "--project", project.slug, "--agent", "newagent", "--name", "n" * 201,
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    assert not project.agents.filter(slug="newagent").exists()
    assert not project.tokens.exists()


@pytest.mark.parametrize("name", ["laptop\nfake log line", "nul\x00here", "\x1b[31mred", "tab\there"])
def test_token_create_refuses_a_name_with_control_characters_in_one_line(project, name):
    """A newline, a NUL or an escape sequence was stored as the token's name (NUL: a traceback), and
    shown raw wherever tokens are listed: the admin, the settings page, this command's own output."""
    with pytest.raises(CommandError) as refused:
        call_command(
            "token_create", "--project", project.slug, "--name", name,
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    message = str(refused.value)
    assert "control character" in message and "\n" not in message and "\x1b" not in message
    assert message.isprintable()
    assert not project.tokens.exists()


def test_token_create_prints_the_secret_of_a_token_bound_to_a_new_agent(project):
    out = io.StringIO()
    call_command(
        "token_create", "--project", project.slug, "--agent", "newagent", "--name", "laptop",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    token = project.tokens.get()
    assert (token.agent.slug, token.name) == ("newagent", "laptop")
    assert out.getvalue().strip().startswith(token.prefix)
