"""The context injection cuts a text to its token budget by UTF-8 bytes: the cut must end where a reader's
character ends, never inside an emoji ZWJ sequence, a flag, a skin-tone emoji or an accented letter."""

import pytest

from tests.clusters import ENTRY_RUN, FLAG, RUN, THUMB, parts_left
from vault import services
from vault.text import token_estimate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("where", ["handoff", "project", "workspace"])
def test_a_context_cut_to_its_budget_never_splits_a_character(api, token_a, agent_a, make_entry, where):
    """text_prefix_bytes cut at a byte and dropped only a half-encoded code point: a cut inside 👩‍💻 left
    a woman and a lone joiner, inside 🇯🇵 a lone regional indicator (which pairs with the next one it
    meets), inside 👍🏽 or e + U+0301 a base without its modifier or accent, inside England's flag a black
    flag and some of its tag letters. (An entry holding a joiner or tags is held for review as invisible
    characters, so the handoff's run has neither.)"""
    agent_a.files.update(enabled=False)
    if where == "handoff":
        make_entry(agent_a, "Last session " + ENTRY_RUN * 60, category="handoffs")
    elif where == "project":
        agent_a.project.context = "The ledger " + RUN * 60
        agent_a.project.save()
    else:
        services.file_write(agent=agent_a, path="AGENTS.md", content="Be kind " + RUN * 60, changed_by="t",
                            enabled=True, sort_order=1)  # fmt: skip
    cut_seen = 0
    for budget in range(160, 160 + 59):
        response = api.post("/agents/agent-a/context", {"command": "ledger", "budget_tokens": budget},
                            token=token_a)  # fmt: skip
        assert response.status_code == 200, response.content
        text = response.json()["text"]
        assert len(text.encode("utf-8")) <= budget * 4 and token_estimate(text) <= budget
        assert parts_left(text) == [], (budget, text[-80:])
        cut_seen += FLAG + THUMB in text
    assert cut_seen > 40  # the text was there, cut at many places
