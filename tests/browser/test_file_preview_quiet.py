"""The workspace file editor's live preview is for the eyes: a screen reader user typing in the editor
is not read the whole rendered file at every pause (the preview is no live region)."""

import pytest
from playwright.sync_api import expect

from vault import services

pytestmark = pytest.mark.django_db(transaction=True)


def test_typing_in_the_file_editor_reads_no_preview_aloud(logged_in, agent_a):
    services.file_write(agent=agent_a, path="MEMORY.md", content="# Memory\n", changed_by="t")
    page = logged_in
    page.goto("/projects/acme/agents/agent-a/files/?path=MEMORY.md")
    page.get_by_label("Markdown").fill("# Memory\n\n- the ledger moved to Dublin\n")
    preview = page.locator("#file-preview")
    expect(preview).to_contain_text("the ledger moved to Dublin")
    live = page.locator("[aria-live=polite], [aria-live=assertive], [role=status], [role=alert], [role=log]")
    expect(live.filter(has_text="the ledger moved to Dublin")).to_have_count(0)
