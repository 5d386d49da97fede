"""The context injection cuts a text to its token budget by UTF-8 bytes: the cut must end where a reader's
character ends, never inside an emoji ZWJ sequence, a flag, a skin-tone emoji or an accented letter."""

import unicodedata

import pytest

from vault import services
from vault.text import token_estimate

pytestmark = pytest.mark.django_db

TECHNOLOGIST = "\U0001f469\u200d\U0001f4bb"  # 👩‍💻: woman, ZWJ, laptop
FLAG = "\U0001f1ef\U0001f1f5"  # 🇯🇵: two regional indicators
THUMB = "\U0001f44d\U0001f3fd"  # 👍🏽: thumbs up and a skin tone
ACCENTED = "e\u0301"  # é as e and a combining acute
ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"  # a black flag and tags
CLUSTERS = (TECHNOLOGIST, FLAG, THUMB, ACCENTED, ENGLAND)
# 11 + 8 + 8 + 3 + 28 + 1 bytes: a budget step of 4 bytes lands the cut on every byte of the run in turn.
RUN = "".join(CLUSTERS) + "a"


def _parts_left(text: str) -> list[str]:
    """The parts of the clusters left in `text` once every whole cluster is taken out: a cut one."""
    for cluster in CLUSTERS:
        text = text.replace(cluster, "")
    parts = {"\u200d", "\U0001f469", "\U0001f4bb", "\U0001f44d", "\u0301", "\U0001f3f4", *ENGLAND}
    return [c for c in text if c in parts or "\U0001f1e6" <= c <= "\U0001f3ff" or unicodedata.combining(c)]


@pytest.mark.parametrize("where", ["handoff", "project", "workspace"])
def test_a_context_cut_to_its_budget_never_splits_a_character(api, token_a, agent_a, make_entry, where):
    """text_prefix_bytes cut at a byte and dropped only a half-encoded code point: a cut inside 👩‍💻 left
    a woman and a lone joiner, inside 🇯🇵 a lone regional indicator (which pairs with the next one it
    meets), inside 👍🏽 or e + U+0301 a base without its modifier or accent, inside England's flag a black
    flag and some of its tag letters. (An entry holding a joiner or tags is held for review as invisible
    characters, so the handoff's run has neither.)"""
    agent_a.files.update(enabled=False)
    if where == "handoff":  # a joiner in an entry holds it for review (an invisible character)
        make_entry(
            agent_a,
            "Last session " + RUN.replace(TECHNOLOGIST, "").replace(ENGLAND, "") * 60,
            category="handoffs",
        )
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
        assert _parts_left(text) == [], (budget, text[-80:])
        cut_seen += FLAG + THUMB in text
    assert cut_seen > 40  # the text was there, cut at many places
