from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memoryproject.llm import prompt_tokens
from vault import services
from vault.maintenance.consolidation import consolidation_run, consolidation_run_all
from vault.models import WorkspaceFile, WorkspaceFileVersion
from vault.text import token_estimate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


def note(agent, days_ago, text):
    when = timezone.now() - timedelta(days=days_ago)
    services.daily_note_append(agent=agent, when=when, text=text, changed_by="t")


def memory(agent):
    return WorkspaceFile.objects.get(agent=agent, path="MEMORY.md", deleted_at__isnull=True)


@pytest.fixture
def notes(agent_a):
    services.file_write(agent=agent_a, path="MEMORY.md", content="# MEMORY.md\n- Uses Python\n- uses python\n",
                        changed_by="t")  # fmt: skip
    note(agent_a, 0, "\n## 10:00\n- The user prefers short answers\n- Deploys happen on Fridays\n")
    note(agent_a, 2, "\n## 09:00\n- the user prefers short answers.\n- Uses Python\n")
    note(agent_a, 5, "\n## 11:00\n- Deploys happen on Fridays\n- A one-off question about CSS\n")
    note(agent_a, 9, "\n## 08:00\n- A one-off question about CSS\n")


def test_deterministic_merge_keeps_recurring_facts_and_drops_duplicates(agent_a, notes):
    result = consolidation_run(agent=agent_a)
    assert result["updated"] is True and result["used"] == "heuristic"
    assert len(result["notes_read"]) == 3
    assert memory(agent_a).content == (
        "# MEMORY.md\n- Uses Python\n\n## Recurring facts\n- The user prefers short answers\n"
        "- Deploys happen on Fridays\n"
    )
    # The previous MEMORY.md stays in the file's history.
    # (Newest first: the one before is the default MEMORY.md the agent was created with.)
    assert WorkspaceFileVersion.objects.filter(file=memory(agent_a)).first().content == (
        "# MEMORY.md\n- Uses Python\n- uses python\n"
    )
    assert result["reason"] == "merged 3 daily note(s) into MEMORY.md (duplicates dropped)"
    again = consolidation_run(agent=agent_a)
    assert again["updated"] is False
    assert again["reason"] == "MEMORY.md already holds what the 3 daily note(s) say; nothing to add"
    assert WorkspaceFileVersion.objects.filter(file=memory(agent_a)).count() == 2


def test_the_deterministic_merge_drops_duplicate_facts_only(agent_a, notes):
    """Every repeated line of MEMORY.md was dropped as a duplicate fact: a code block's closing fence
    (the rest of the file became code), repeated lines of code, a second table's separator row, a
    second horizontal rule. Each night's consolidation broke a little more of the file."""
    kept = (
        "# MEMORY.md\n- Uses Python\n\n```python\nx = 1\nx = 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "---\n\n| c | d |\n|---|---|\n| 3 | 4 |\n\n---\n\n```sh\nmake\n```\n"
    )
    services.file_write(agent=agent_a, path="MEMORY.md", content=kept + "- uses python\n", changed_by="t")
    consolidation_run(agent=agent_a)
    assert memory(agent_a).content == (
        kept + "\n## Recurring facts\n- The user prefers short answers\n- Deploys happen on Fridays\n"
    )


def test_llm_consolidation_replaces_memory(agent_a, notes, fake_llm):
    fake_llm.reply_json(
        {"should_update": True, "reason": "patterns", "memory_content": "# MEMORY.md\n- Uses Python 3\n"}
    )
    result = consolidation_run(agent=agent_a)
    assert result["used"] == "llm" and result["updated"] is True
    assert memory(agent_a).content == "# MEMORY.md\n- Uses Python 3\n"
    prompt = fake_llm.requests[0]["json"]["messages"][1]["content"]
    assert "Deploys happen on Fridays" in prompt and "- uses python" in prompt
    assert "A one-off question about CSS" in prompt  # 5 days ago is inside the window


def test_a_malformed_llm_consolidation_falls_back(agent_a, notes, fake_llm):
    fake_llm.reply_json({"should_update": True, "memory_content": ""})
    result = consolidation_run(agent=agent_a)
    assert result["used"] == "heuristic" and "memory_content" in result["llm_error"]
    assert "## Recurring facts" in memory(agent_a).content


def test_the_consolidate_command_says_when_the_llm_answer_was_not_used(agent_a, notes, fake_llm, capsys):
    """With the LLM down the command printed the deterministic merge's line alone: nothing said that the
    configured LLM had failed."""
    fake_llm.reply("Sorry, I cannot help with that.")
    call_command("consolidate", "--project", "acme", "--agent", "agent-a")
    out = capsys.readouterr().out
    assert out.startswith("agent-a: MEMORY.md updated (merged 3 daily note(s)")
    assert (
        "  the LLM's answer was not used, so the deterministic merge ran: the LLM reply is not a JSON" in out
    )


@pytest.mark.parametrize(
    "content, why",
    [("# MEMORY.md\n- a\u0000b\n", "NUL"), ("# MEMORY.md\n" + "x" * 70000, "bytes; the limit")],
    ids=["nul", "too-large"],
)
def test_an_llm_memory_that_cannot_be_stored_falls_back(agent_a, notes, fake_llm, content, why):
    """A reply whose memory_content a file cannot hold (NUL, over MEMORY_MAX_ENTRY_BYTES) failed the
    whole run with the file's 422/413 instead of falling back like any other unusable answer."""
    fake_llm.reply_json({"should_update": True, "reason": "x", "memory_content": content})
    result = consolidation_run(agent=agent_a)
    assert result["used"] == "heuristic" and "memory_content" in result["llm_error"]
    assert why in result["llm_error"]
    assert result["updated"] is True and "## Recurring facts" in memory(agent_a).content


def test_api_consolidates_for_a_project_admin(api, admin_token, token_a, read_token_a, outsider_token, agent_a,
                                              agent_b, notes):  # fmt: skip
    assert api.post("/agents/agent-a/consolidate", token=token_a).status_code == 403
    assert api.post("/agents/agent-a/consolidate", token=read_token_a).status_code == 403
    assert api.post("/agents/agent-b/consolidate", token=token_a).status_code == 404
    assert api.post("/agents/agent-a/consolidate", token=outsider_token).json()["notes_read"] == []
    assert "Recurring" not in memory(agent_a).content
    response = api.post("/agents/agent-a/consolidate", token=admin_token)
    assert response.status_code == 200
    assert response.json()["updated"] is True
    assert api.post("/agents/nobody/consolidate", token=admin_token).status_code == 404


def test_the_consolidate_command_keeps_to_the_project_it_names(agent_a, outsider_agent, capsys):
    """--project without --agent consolidated every project."""
    for days_ago in (0, 2):
        note(agent_a, days_ago, "\n## 10:00\n- acme deploys on Fridays\n")
        note(outsider_agent, days_ago, "\n## 10:00\n- globex deploys on Mondays\n")
    call_command("consolidate", "--project", "globex")
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("agent-a: MEMORY.md updated")
    assert "globex deploys" in memory(outsider_agent).content
    assert "acme deploys" not in memory(agent_a).content
    with pytest.raises(CommandError, match="No project 'nope'"):
        call_command("consolidate", "--project", "nope")
    call_command("consolidate")
    assert "acme deploys" in memory(agent_a).content


def test_the_consolidate_command_over_every_project_says_which_project_each_agent_is_in(
    agent_a, outsider_agent, capsys
):
    """Both projects have an agent-a: the lines were "agent-a: MEMORY.md updated" twice."""
    for agent in (agent_a, outsider_agent):
        for days_ago in (0, 2):
            note(agent, days_ago, f"\n## 10:00\n- {agent.project.slug} deploys on Fridays\n")
    call_command("consolidate")
    lines = capsys.readouterr().out.splitlines()
    assert sorted(line.split(":")[0] for line in lines) == ["acme/agent-a", "globex/agent-a"]


def test_an_agent_without_daily_notes_is_told_so(agent_a, capsys):
    """It was "MEMORY.md already holds what the 0 daily note(s) say"."""
    services.file_write(
        agent=agent_a, path="MEMORY.md", content="# MEMORY.md\n- Uses Python\n", changed_by="t"
    )
    call_command("consolidate", "--project", "acme", "--agent", "agent-a")
    assert capsys.readouterr().out == (
        "agent-a: MEMORY.md unchanged (no daily notes in the last 7 days; nothing to add)\n"
    )


def test_one_agent_that_cannot_be_consolidated_does_not_stop_the_others(agent_a, agent_b, capsys):
    """A MEMORY.md the merge takes over MEMORY_MAX_ENTRY_BYTES raised out of the nightly run: the agents
    after it were not consolidated, and the command ended in a traceback."""
    big = "# MEMORY.md\n" + "".join(f"- fact number {i} of a long memory\n" for i in range(2000))
    big = big[: big.rfind("\n", 0, 65400) + 1]  # just under MEMORY_MAX_ENTRY_BYTES
    services.file_write(agent=agent_a, path="MEMORY.md", content=big, changed_by="t")
    for agent in (agent_a, agent_b):
        for days_ago in (0, 2):
            note(
                agent,
                days_ago,
                "\n## 10:00\n- Deploys happen on Fridays, not on Mondays\n" + "x" * 200 + "\n",
            )
    results = consolidation_run_all()
    assert [(r["agent"], r["updated"]) for r in results] == [("agent-a", False), ("agent-b", True)]
    assert "TooLarge" in results[0]["error"] and memory(agent_a).content == big
    assert "Deploys happen on Fridays" in memory(agent_b).content
    with pytest.raises(CommandError, match="1 agent could not be consolidated: acme/agent-a"):
        call_command("consolidate")
    out = capsys.readouterr().out
    assert "agent-a: MEMORY.md not consolidated (TooLarge: content is " in out
    assert "agent-b: MEMORY.md unchanged" in out
    with pytest.raises(CommandError, match="agent-a: MEMORY.md not consolidated .content is 6"):
        call_command("consolidate", "--project", "acme", "--agent", "agent-a")


def facts_memory(size: int) -> str:
    """A MEMORY.md of about `size` bytes of distinct facts."""
    lines = ["# MEMORY.md", "", "## Facts"]
    n = 0
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(f"- Fact {n}: the service {n} runs on host h{n}.example.com behind the gateway")
        n += 1
    return "\n".join(lines) + "\n"


def test_a_20_kb_memory_md_is_consolidated_by_the_llm(agent_a, notes, fake_llm, settings):
    """The model was asked for the whole new MEMORY.md with LLM_MAX_TOKENS (1,000 tokens, about 4 KB):
    for a MEMORY.md over that its answer was cut, never valid JSON, and the deterministic merge ran
    every night. The call now asks for a budget sized from MEMORY.md and the notes' new facts."""
    current = facts_memory(20 * 1024)
    services.file_write(agent=agent_a, path="MEMORY.md", content=current, changed_by="t")
    answer = current + "\n## Habits\n- Deploys happen on Fridays\n- The user prefers short answers\n"
    fake_llm.reply_json_within_budget(
        {"should_update": True, "reason": "two habits", "memory_content": answer}
    )
    result = consolidation_run(agent=agent_a)
    assert result["used"] == "llm" and result["updated"] is True, result
    assert memory(agent_a).content == answer
    budget = fake_llm.requests[0]["json"]["max_tokens"]
    assert token_estimate(answer) < budget <= settings.LLM_REWRITE_MAX_TOKENS


def test_an_llm_answer_cut_at_the_budget_falls_back_and_keeps_memory(agent_a, notes, fake_llm, settings):
    """A model that writes more than its budget is cut (finish_reason "length"): the run says so and
    the deterministic merge runs, which keeps every line of MEMORY.md."""
    settings.LLM_REWRITE_MAX_TOKENS = 6000
    current = facts_memory(20 * 1024)
    services.file_write(agent=agent_a, path="MEMORY.md", content=current, changed_by="t")
    rambling = "".join(f"- Observation {n} about the week, at length\n" for n in range(400))
    fake_llm.reply_json_within_budget(
        {"should_update": True, "reason": "x", "memory_content": current + rambling}
    )
    result = consolidation_run(agent=agent_a)
    assert fake_llm.requests[0]["json"]["max_tokens"] == 6000
    assert result["used"] == "heuristic" and result["updated"] is True
    assert "cut at max_tokens (6000)" in result["llm_error"]
    assert "LLM_REWRITE_MAX_TOKENS" in result["llm_error"]
    after = memory(agent_a).content
    assert after.startswith(current.rstrip("\n")) and "- Deploys happen on Fridays" in after
    assert "Observation" not in after


def test_a_memory_md_longer_than_the_budget_cap_is_not_sent(agent_a, notes, fake_llm, settings):
    """No answer within LLM_REWRITE_MAX_TOKENS can hold a MEMORY.md over it: the call is not made."""
    settings.LLM_REWRITE_MAX_TOKENS = 2000
    current = facts_memory(20 * 1024)
    services.file_write(agent=agent_a, path="MEMORY.md", content=current, changed_by="t")
    fake_llm.reply_json({"should_update": False, "reason": "x", "memory_content": ""})
    result = consolidation_run(agent=agent_a)
    assert fake_llm.requests == []
    assert result["used"] == "heuristic" and "LLM_REWRITE_MAX_TOKENS (2000)" in result["llm_error"]
    assert memory(agent_a).content.startswith(current.rstrip("\n"))


def busy_week(agent, settings):
    settings.LLM_MAX_INPUT_TOKENS = 2000
    filler = "".join(
        f"- day detail {n}: a long line of the day's work, noted as it happened\n" for n in range(25)
    )
    for days_ago in (6, 5, 4, 3, 2, 1, 0):
        note(agent, days_ago, f"\n## 10:00\n- Note of {days_ago} days ago\n{filler}")
    for days_ago in (6, 5):
        note(agent, days_ago, "\n## 11:00\n- The staging database is restored every Monday\n")


def test_a_week_of_notes_over_the_input_budget_sends_the_newest_and_merges_the_rest(
    agent_a, fake_llm, settings
):
    """Every daily note of the window (every part of a busy day) went into one prompt: a busy week is
    hundreds of thousands of tokens, beyond any model's context, so the call failed and the
    deterministic merge ran every night. The prompt now holds the newest notes within
    LLM_MAX_INPUT_TOKENS; the older ones are merged deterministically into the model's MEMORY.md."""
    busy_week(agent_a, settings)
    fake_llm.reply_json(
        {"should_update": True, "reason": "newest days", "memory_content": "# MEMORY.md\n- From the model\n"}
    )
    result = consolidation_run(agent=agent_a)
    assert result["used"] == "llm" and result["updated"] is True, result
    messages = fake_llm.requests[0]["json"]["messages"]
    assert prompt_tokens(messages) <= 2000
    prompt = messages[1]["content"]
    assert "Note of 0 days ago" in prompt and "Note of 6 days ago" not in prompt
    over = result["notes_over_budget"]
    assert over and len(over) < 7 and over == result["notes_read"][: len(over)]
    assert all(f"### {path}" not in prompt for path in over)  # named as left out, not sent
    assert "merged deterministically" in result["reason"]
    content = memory(agent_a).content
    assert content.startswith("# MEMORY.md\n- From the model\n")
    assert "- The staging database is restored every Monday" in content  # recurring in the older notes


def test_when_not_even_the_newest_note_fits_the_model_is_not_asked(agent_a, notes, fake_llm, settings):
    settings.LLM_MAX_INPUT_TOKENS = 1000
    services.file_write(agent=agent_a, path="MEMORY.md", content=facts_memory(4000), changed_by="t")
    fake_llm.reply_json({"should_update": False, "reason": "x", "memory_content": ""})
    result = consolidation_run(agent=agent_a)
    assert fake_llm.requests == []
    assert result["used"] == "heuristic" and "LLM_MAX_INPUT_TOKENS (1000)" in result["llm_error"]
    assert "- Deploys happen on Fridays" in memory(agent_a).content


def test_the_api_and_the_command_say_which_notes_were_over_the_budget(
    api, admin_token, agent_a, fake_llm, settings, capsys
):
    busy_week(agent_a, settings)
    fake_llm.reply_json({"should_update": False, "reason": "nothing new", "memory_content": ""})
    body = api.post("/agents/agent-a/consolidate", token=admin_token).json()
    assert body["used"] == "llm" and body["notes_over_budget"]
    assert body["notes_over_budget"] == body["notes_read"][: len(body["notes_over_budget"])]
    call_command("consolidate", "--project", "acme", "--agent", "agent-a")
    out = capsys.readouterr().out
    assert "older note(s) did not fit LLM_MAX_INPUT_TOKENS beside the newest" in out


def _days_ago(n: int) -> str:
    return f"{timezone.localtime() - timedelta(days=n):%Y-%m-%d}"


def test_the_prompt_names_the_days_it_holds_not_the_last_n_days(agent_a, notes, fake_llm):
    """The prompt said "Daily notes of the last 7 days" when it held three days' notes: the model
    summarised "this week" from days it was never shown. It now names the days it holds and says that
    the other days of the window have no notes."""
    fake_llm.reply_json({"should_update": False, "reason": "nothing new", "memory_content": ""})
    consolidation_run(agent=agent_a)
    prompt = fake_llm.requests[0]["json"]["messages"][1]["content"]
    assert "last 7 days" not in prompt
    held = f"These are all the daily notes you are given: {_days_ago(5)}, {_days_ago(2)}, {_days_ago(0)}."
    assert held in prompt
    assert f"No other day from {_days_ago(6)} to {_days_ago(0)} has a daily note." in prompt
    assert _days_ago(9) not in prompt  # the note older than the window is neither sent nor named


def test_the_prompt_names_the_notes_left_out_for_the_input_budget(agent_a, fake_llm, settings):
    """With the older notes over LLM_MAX_INPUT_TOKENS the prompt still spoke of "the last 7 days", so
    the model's reason claimed a week it had not read. It now names the notes left out."""
    busy_week(agent_a, settings)
    fake_llm.reply_json({"should_update": False, "reason": "nothing new", "memory_content": ""})
    result = consolidation_run(agent=agent_a)
    prompt = fake_llm.requests[0]["json"]["messages"][1]["content"]
    over = result["notes_over_budget"]
    assert over and "last 7 days" not in prompt
    assert f"Left out for lack of room (not shown to you): {', '.join(over)}." in prompt
    sent_days = sorted({path[7:17] for path in result["notes_read"][len(over) :]})
    assert f"These are all the daily notes you are given: {', '.join(sent_days)}." in prompt
