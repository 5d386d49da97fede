"""The system checks `check`, `serve` and every command run at start."""

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

NOT_CALLABLE = "sessions_app.services.common.DEFAULT_SUMMARISER"


@pytest.mark.parametrize("path", ["no.such.func", "sessions_app.compaction.no_such_summary", NOT_CALLABLE])
def test_it_refuses_a_summariser_that_cannot_be_imported_or_called(settings, path):
    """MEMORY_COMPACT_SUMMARISER was accepted and fell back to the heuristic summary at use time, with
    only a warning in the log."""
    settings.MEMORY_COMPACT_SUMMARISER = path
    with pytest.raises(SystemCheckError, match=f"MEMORY_COMPACT_SUMMARISER {path!r}"):
        call_command("check")


def test_it_accepts_the_default_summariser(settings):
    settings.MEMORY_COMPACT_SUMMARISER = "sessions_app.compaction.heuristic_summary"
    call_command("check")
