"""`manage.py screenshots` without its dev dependency says what to install."""

import sys

import pytest
from django.core.management import CommandError, call_command

from memoryproject.management.commands import screenshots


def test_it_names_the_missing_dependency_instead_of_a_traceback(monkeypatch, tmp_path):
    monkeypatch.setattr(screenshots, "CHROMIUM", sys.executable)  # present, whatever the machine has
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # as after the README's install
    with pytest.raises(CommandError, match="Playwright is missing.*bin/test"):
        call_command("screenshots", output=str(tmp_path))
