"""Consolidation: the last days of daily notes folded into MEMORY.md, by an LLM when one is configured,
by a deterministic merge of recurring facts otherwise."""

import logging
import time
from contextlib import nullcontext
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from memoryproject.errors import Conflict, DomainError
from memoryproject.llm import (
    LLMAnswerCut,
    LLMError,
    LLMPromptTooLong,
    llm_configured,
    llm_deadline,
    llm_json,
    llm_time_left,
    newest_within,
    prompt_messages,
    prompt_room,
)
from memoryproject.resilience import connection_recover, failure_detail
from vault import selectors, services
from vault.maintenance.facts import (
    fact_clean,
    fact_key,
    fact_lines,
    instructions_added,
    model_text_reported,
    rewrite_review,
)
from vault.maintenance.runs import ACTOR, UNFINISHED, agent_lock_try, run_change, run_count
from vault.models import Agent, AgentMaintenance, CompactionRun, Project, RunKind, RunTrigger, WorkspaceFile
from vault.text import text_check, token_estimate

logger = logging.getLogger(__name__)


def file_content(agent: Agent, path: str) -> str | None:
    return selectors.file_content(agent.pk, path)


CORE_FILE_ORDER = {"PROFILE.md": 2, "MEMORY.md": 3}


def file_replace_if_unchanged(*, agent: Agent, path: str, expected: str | None, content: str) -> bool:
    """Replace a core file unless someone changed it since we read it (then keep theirs: no lost update)."""
    current = (
        WorkspaceFile.objects.select_for_update(of=("self",))
        .filter(agent=agent, path=path, deleted_at__isnull=True)
        .first()
    )
    if (current.content if current else None) != expected:
        logger.info("%s of %s changed while it was being rewritten; left as it is", path, agent)
        return False
    services.file_write(
        agent=agent,
        path=path,
        content=content,
        changed_by=ACTOR,
        enabled=True if current is None else None,
        sort_order=CORE_FILE_ORDER.get(path) if current is None else None,
    )
    return True


# --- Extraction after a conversation ------------------------------------------------------------


RECURRING_HEADING = "## Recurring facts"


def daily_notes_recent(agent: Agent, now: datetime, days: int) -> list[tuple[str, str]]:
    """(path, content) of the agent's daily notes of the last `days` days, every part of a day's note
    (memory/YYYY-MM-DD.md, then -2.md, -3.md, ...), oldest first, as stored (the caller writes their
    queued exchanges first, services.daily_notes_flush)."""
    today = timezone.localtime(now).date()
    first = today - timedelta(days=days - 1)
    notes = []
    for file in WorkspaceFile.objects.filter(
        agent=agent, path__startswith="memory/", deleted_at__isnull=True
    ):
        part = selectors.daily_note_part(file.path)
        if part and first.isoformat() <= part[0] <= today.isoformat():
            notes.append((part, file.path, file.content))
    return [(path, content) for _, path, content in sorted(notes)]


def memory_merge_deterministic(memory: str, notes: list[tuple[str, str]]) -> str:
    """MEMORY.md without duplicate facts, plus the facts seen on at least two different days.

    A fact is a line of prose or a list item (fact_lines), without bullets and times; facts are
    compared case- and space-insensitively, and every other line of MEMORY.md is kept as it is. Facts
    already in MEMORY.md are not added again, so running it twice changes nothing.
    """
    kept, seen = [], set()
    for line, fact in fact_lines(memory):
        key = fact_key(fact_clean(line))
        if fact and key:
            if key in seen:
                continue
            seen.add(key)
        kept.append(line)
    days_by_fact: dict[str, set[str]] = {}
    text_by_fact: dict[str, str] = {}
    for path, content in reversed(notes):  # newest first: the latest wording of a fact wins
        day = (selectors.daily_note_part(path) or (path,))[0]  # the parts of a day's note are one day
        for line, is_fact in fact_lines(content):
            if not is_fact:
                continue
            fact = fact_clean(line)
            key = fact_key(fact)
            if len(key) < 4:
                continue
            days_by_fact.setdefault(key, set()).add(day)
            text_by_fact.setdefault(key, fact)
    recurring = [
        (key, sorted(days)) for key, days in days_by_fact.items() if len(days) >= 2 and key not in seen
    ]
    result = "\n".join(kept).rstrip()
    if not result:
        result = "# MEMORY.md"
    if recurring:
        if RECURRING_HEADING not in result:
            result += f"\n\n{RECURRING_HEADING}\n"
        else:
            result += "\n"
        result += "\n".join(f"- {text_by_fact[key]}" for key, _ in recurring)
    return result + "\n"


def llm_text_storable(field: str, text: str) -> str:
    """`text` of the model's answer, checked as a file write would check it. A model can answer a NUL
    or more than MEMORY_MAX_ENTRY_BYTES; that is an unusable answer (LLMError, so the caller falls back
    to its heuristics), not a failure of the run found only when the file is written."""
    try:
        return text_check(text, field=field, allow_empty=True)
    except DomainError as exc:
        raise LLMError(f"'{field}' cannot be stored: {exc.detail}") from None


def llm_json_rewrite(messages: list[dict], *, files: dict[str, str], added: str = "") -> dict:
    """llm_json for an answer that gives whole `files` ({name: current content}) back, rewritten,
    plus `added` (what the answer is expected to add to them).

    Its max_tokens is what that takes: the files and `added` by token_estimate, a third more (a
    tokenizer spends more than a token per four bytes on markdown, hostnames and numbers, and JSON
    escapes every newline), plus LLM_MAX_TOKENS for the rest of the answer; never less than
    LLM_MAX_TOKENS, never more than LLM_REWRITE_MAX_TOKENS. With files over that cap no answer can hold
    them, so the model is not asked (LLMError, as for an answer cut at the budget: the caller falls
    back)."""
    cap = settings.LLM_REWRITE_MAX_TOKENS
    size = sum(token_estimate(content) for content in files.values())
    if size > cap:
        raise LLMError(
            f"{' and '.join(files)} take about {size} tokens, more than LLM_REWRITE_MAX_TOKENS ({cap}) "
            "lets the model write back; the model was not asked"
        )
    need = -(-(size + token_estimate(added)) * 4 // 3) + settings.LLM_MAX_TOKENS
    budget = max(settings.LLM_MAX_TOKENS, min(need, cap))
    try:
        return llm_json(messages, max_tokens=budget)
    except LLMAnswerCut as exc:
        if budget == cap:
            raise LLMAnswerCut(f"{exc} (the most LLM_REWRITE_MAX_TOKENS allows)") from None
        raise


def _facts_new(memory: str, notes: list[tuple[str, str]]) -> str:
    """The notes' facts that MEMORY.md does not hold yet, once each: what consolidation may add."""
    known = {fact_key(fact_clean(line)) for line, fact in fact_lines(memory) if fact}
    new: dict[str, str] = {}
    for _, content in notes:
        for line, is_fact in fact_lines(content):
            fact = fact_clean(line)
            key = fact_key(fact)
            if is_fact and key and key not in known:
                new.setdefault(key, f"- {fact}\n")
    return "".join(new.values())


def _consolidation_contract(reply: dict) -> tuple[bool, str, str, list]:
    if not isinstance(reply.get("should_update"), bool):
        raise LLMError(f"'should_update' must be true or false, got {reply.get('should_update')!r}")
    content = reply.get("memory_content") or ""
    if not isinstance(content, str):
        raise LLMError("'memory_content' must be a string")
    if reply["should_update"] and not content.strip():
        raise LLMError("'should_update' is true but 'memory_content' is empty")
    content = llm_text_storable("memory_content", content.strip() + "\n")
    removed = reply.get("removed") or []
    if not isinstance(removed, list):
        raise LLMError(f'\'removed\' must be a list of {{"fact", "why"}} objects, got {removed!r:.100}')
    # The reason goes into the run's record (jsonb): a NUL or lone surrogate in it failed the run after
    # MEMORY.md was written (the API answered 400, the nightly job stopped), and any length was kept.
    return reply["should_update"], model_text_reported(str(reply.get("reason") or "")), content, removed


def _notes_scope(now: datetime, sent: list[tuple[str, str]], held: list[tuple[str, str]]) -> str:
    """What the prompt says about its notes: the days it holds, the notes left out for lack of room,
    and that no other day of the window has a note, so the model claims no coverage it does not have
    (it was told "the last N days" when it had been given two of them)."""
    today = timezone.localtime(now).date()
    first = today - timedelta(days=settings.MEMORY_CONSOLIDATE_DAYS - 1)
    days = sorted({(selectors.daily_note_part(path) or (path,))[0] for path, _ in sent})
    scope = f"These are all the daily notes you are given: {', '.join(days)}."
    if held:
        scope += f" Left out for lack of room (not shown to you): {', '.join(path for path, _ in held)}."
    return (
        f"{scope} No other day from {first.isoformat()} to {today.isoformat()} has a daily note. Speak "
        "only of what these notes say; do not claim to cover days you were not given."
    )


def _notes_prompt(agent: Agent, now: datetime, memory: str | None, notes: list[tuple[str, str]]):
    """The consolidation prompt for the newest notes it can hold within LLM_MAX_INPUT_TOKENS, and the
    older notes left out of it. Raises LLMPromptTooLong when not even the newest note fits."""

    def messages(notes_text: str, scope: str) -> list[dict]:
        return prompt_messages(
            "consolidation",
            date=f"{timezone.localtime(now):%Y-%m-%d}",
            agent=agent.slug,
            memory=memory or "(empty)",
            notes_scope=scope,
            notes=notes_text,
        )

    blocks = [f"### {path}\n{content}" for path, content in notes]
    # Room is measured with the longest scope these notes can get (every note named twice), so the
    # scope actually written never takes more than was kept for it.
    longest = _notes_scope(now, notes, notes)
    count = newest_within(blocks, prompt_room(messages("", longest)))
    if not count:
        raise LLMPromptTooLong(
            f"MEMORY.md and the newest daily note ({notes[-1][0]}) take more than LLM_MAX_INPUT_TOKENS "
            f"({settings.LLM_MAX_INPUT_TOKENS}); the model was not asked"
        )
    held, sent = notes[: len(notes) - count], notes[len(notes) - count :]
    return messages("\n\n".join(blocks[-count:]), _notes_scope(now, sent, held)), held


def _consolidate_with_llm(
    agent: Agent, now: datetime, memory: str | None, notes: list[tuple[str, str]]
) -> tuple[str | None, str, list[tuple[str, str]], tuple[dict | None, list[dict]]]:
    """The model's MEMORY.md (None: no change), its reason, the older notes that did not fit the
    prompt (those the caller merges deterministically into the model's MEMORY.md), and its review:
    why the answer is refused (None: it is not) and the facts it removes saying why (rewrite_review)."""
    messages, held = _notes_prompt(agent, now, memory, notes)
    sent = notes[len(held) :]
    should, reason, content, removed = _consolidation_contract(
        llm_json_rewrite(messages, files={"MEMORY.md": memory or ""}, added=_facts_new(memory or "", sent))
    )
    if not should:
        return None, reason, held, (None, [])
    findings = instructions_added(memory, content)
    if findings:  # MEMORY.md is in every context of the agent: as extraction's answers, not used
        raise LLMError(
            f"the model's MEMORY.md adds text that looks like instructions ({', '.join(findings)})"
        )
    return content, reason, held, rewrite_review(path="MEMORY.md", old=memory, new=content, removed=removed)


def consolidation_run(*, agent: Agent, now: datetime | None = None) -> dict:
    """Fold the last MEMORY_CONSOLIDATE_DAYS days of daily notes into MEMORY.md (emergence).

    With an LLM its JSON answer is used; without one, or when its answer is unusable (logged), a
    deterministic merge keeps recurring facts and drops duplicates. The model is sent the newest
    notes its prompt holds within LLM_MAX_INPUT_TOKENS; older ones ("notes_over_budget") are merged
    deterministically into its MEMORY.md (they were the newest on earlier nights' runs). A model's
    MEMORY.md that drops more than MEMORY_CONSOLIDATE_MAX_SILENT_DROP of the facts without naming them
    in its "removed" list is refused ("refused", "facts_dropped_silently"): MEMORY.md is kept as it is;
    the facts one it writes removes saying why are listed ("removed": fact, why). The previous MEMORY.md stays in the file's history (file_write versions it). Raises Conflict when a
    job for this agent is running.
    """
    now = now or timezone.now()
    # The notes' queued exchanges written and committed before the transaction: written inside it, each
    # note's row stayed locked while the model thought, and the agent's appends and reads waited for it.
    services.daily_notes_flush(agent=agent)
    with transaction.atomic():
        if not agent_lock_try(agent.pk):
            raise Conflict(f"An extraction or consolidation for agent {agent.slug!r} is running; try later.")
        notes = daily_notes_recent(agent, now, settings.MEMORY_CONSOLIDATE_DAYS)
        memory = file_content(agent, "MEMORY.md")
        result = {"agent": agent.slug, "path": "MEMORY.md", "notes_read": [path for path, _ in notes]}
        result |= {"refused": False, "facts_dropped_silently": [], "removed": []}
        new_content, reason, used = None, "", "heuristic"
        if llm_configured() and notes:
            try:
                new_content, reason, held, (refusal, removed) = _consolidate_with_llm(
                    agent, now, memory, notes
                )
                result["removed"] = [] if refusal else removed
                used = "llm"
                if held:
                    result["notes_over_budget"] = [path for path, _ in held]
                if refusal:
                    logger.warning("consolidation of %s: %s", agent, refusal["reason"])
                    result |= {"refused": True, "facts_dropped_silently": refusal["facts_dropped_silently"]}
                    new_content, reason = None, refusal["reason"]
                elif held:
                    new_content = memory_merge_deterministic(new_content or memory or "", held)
                    reason = (
                        f"{reason}; {len(held)} older note(s) over LLM_MAX_INPUT_TOKENS merged "
                        "deterministically"
                    ).lstrip("; ")
            except LLMError as exc:
                logger.warning(
                    "LLM consolidation failed for %s, using the deterministic merge: %s", agent, exc
                )
                result["llm_error"] = str(exc)
        if used == "heuristic":
            if not notes and memory is None:
                reason = "no daily notes and no MEMORY.md"
            else:
                new_content = memory_merge_deterministic(memory or "", notes)
        updated = bool(new_content) and new_content != memory
        if updated:
            updated = file_replace_if_unchanged(
                agent=agent, path="MEMORY.md", expected=memory, content=new_content
            )
            if not updated:
                reason = "MEMORY.md was edited meanwhile; left as it is, run again"
        if not updated:
            result["removed"] = []
        if used == "heuristic" and new_content is not None and not reason:
            # Say what happened, not how: the caller sees "updated" beside this.
            if updated:
                reason = f"merged {len(notes)} daily note(s) into MEMORY.md (duplicates dropped)"
            elif not notes:
                reason = f"no daily notes in the last {settings.MEMORY_CONSOLIDATE_DAYS} days; nothing to add"
            else:
                reason = f"MEMORY.md already holds what the {len(notes)} daily note(s) say; nothing to add"
        state, _ = AgentMaintenance.objects.get_or_create(agent=agent)
        AgentMaintenance.objects.filter(pk=state.pk).update(last_consolidation_at=now)
    return {**result, "used": used, "updated": updated, "reason": reason or "no change needed"}


def consolidation_run_all(
    *,
    now: datetime | None = None,
    project: Project | None = None,
    trigger: str = RunTrigger.SCHEDULE,
    time_shared: bool = False,
) -> list[dict]:
    """Consolidate every agent (of `project`, else of every project) that has daily notes in the
    window (what the daily schedule runs). An agent whose run fails gets a result with `error`; the
    agents after it are still consolidated. Each project's results are recorded as its consolidation
    run (the maintenance page lists it): agents, updated, refused and failed counted.

    The agents tried longest ago go first (then those consolidated longest ago), and each project's run
    is stored after each agent, marked unfinished until the end: a run its worker's timeout stopped
    (Q_TIMEOUT, a slow model and many agents) says what it did, and the next run begins with the agents
    it did not reach. So an agent on which the worker is killed or times out every time (recorded as
    interrupted by the next run, which counts its failures in a row for /healthz) is tried after the
    others, and cannot starve them run after run.

    `time_shared` (the scheduled task, within llm_job_deadline): an agent's model calls get at most
    half the time left while others come after it, and no agent is started with less than
    AGENT_MIN_SECONDS left; those are left to the next run, which begins with them."""
    now = now or timezone.now()
    results = []
    by_project: dict[int, tuple[list[dict], list[float], CompactionRun | None]] = {}
    interrupted = _agents_interrupted(project)
    agents = _agents_ordered(project)
    not_reached: list[Agent] = []
    for index, agent in enumerate(agents):
        left = llm_time_left() if time_shared else None
        if left is not None and left < AGENT_MIN_SECONDS:
            not_reached = agents[index:]
            break
        if not daily_notes_recent(agent, now, settings.MEMORY_CONSOLIDATE_DAYS):
            continue
        started = time.monotonic()
        result = _agent_consolidate(
            agent, now, None if left is None or index == len(agents) - 1 else left / 2
        )
        if agent.pk in interrupted:
            result["interrupted"] = interrupted[agent.pk]
        results.append(result)
        project_results, took, run = by_project.get(agent.project_id, ([], [], None))
        project_results.append(result)
        took.append(time.monotonic() - started)
        run = _consolidation_record(agent.project_id, project_results, now=now, trigger=trigger,
                                    seconds=sum(took), run=run, finished=False)  # fmt: skip
        by_project[agent.project_id] = (project_results, took, run)
    for agent in not_reached:
        by_project.setdefault(agent.project_id, ([], [], None))
    for project_id, (project_results, took, run) in by_project.items():
        left_out = [agent.slug for agent in not_reached if agent.project_id == project_id]
        _consolidation_record(project_id, project_results, now=now, trigger=trigger, seconds=sum(took),
                              run=run, not_reached=left_out)  # fmt: skip
    return results


# A scheduled run starts no agent with less time than this left before its task's deadline.
AGENT_MIN_SECONDS = 10.0


def _agents_ordered(project: Project | None) -> list[Agent]:
    """The agents with daily notes, the one whose consolidation was tried longest ago first (a rotation:
    one that failed or was interrupted goes after those not tried since), then consolidated longest
    ago."""
    agents = Agent.objects.filter(files__path__startswith="memory/")
    if project is not None:
        agents = agents.filter(project=project)
    return list(
        agents.distinct().order_by(
            F("maintenance__consolidation_started_at").asc(nulls_first=True),
            F("maintenance__last_consolidation_at").asc(nulls_first=True),
            "pk",
        )
    )


def _agents_interrupted(project: Project | None) -> dict[int, str]:
    """The agents whose last consolidation began and never ended (its worker killed, or stopped by
    Q_TIMEOUT, on it), each counted as failed once more; returns why, by agent. One that a job is
    consolidating now (its lock held) is left alone."""
    interrupted = {}
    marked = AgentMaintenance.objects.filter(consolidation_started_at__isnull=False).filter(
        Q(consolidation_ended_at__isnull=True) | Q(consolidation_ended_at__lt=F("consolidation_started_at"))
    )
    if project is not None:
        marked = marked.filter(agent__project=project)
    for state in marked:
        with transaction.atomic():
            if not agent_lock_try(state.agent_id):
                continue
            reason = (
                f"its consolidation started at {state.consolidation_started_at:%Y-%m-%d %H:%M:%S} UTC "
                "never ended: the worker was killed or timed out (Q_TIMEOUT) on it"
            )
            AgentMaintenance.objects.filter(pk=state.pk).update(
                consolidation_ended_at=timezone.now(),
                consolidation_failures=F("consolidation_failures") + 1,
                consolidation_failure=reason,
            )
            interrupted[state.agent_id] = reason
    return interrupted


def _agent_consolidate(agent: Agent, now: datetime, seconds: float | None) -> dict:
    """One agent's consolidation in a run of all, its model calls within `seconds` (None: no bound of
    its own), recorded as started and ended, and its failures in a row counted."""
    state, _ = AgentMaintenance.objects.get_or_create(agent=agent)
    AgentMaintenance.objects.filter(pk=state.pk).update(consolidation_started_at=timezone.now())
    failure, busy = "", False
    share = (
        llm_deadline(seconds, what="its share of the consolidation task's time") if seconds else nullcontext()
    )
    try:
        with share:
            result = consolidation_run(agent=agent, now=now)
        if result.get("llm_error"):
            failure = f"the model's answer was not used: {model_text_reported(result['llm_error'])}"
    except Conflict as exc:
        result, busy = {"agent": agent.slug, "updated": False, "refused": False, "reason": exc.detail}, True
    except Exception as exc:  # noqa: BLE001 - one agent's failure must not cost the others their run
        # A MEMORY.md the merge takes over MEMORY_MAX_ENTRY_BYTES fails every night until a curator
        # shortens it; the agents after it are consolidated all the same, and the failure is reported.
        logger.exception(
            "consolidation of agent %s (%s) failed", agent.slug, agent.pk
        )  # no query: it may be what failed
        connection_recover()  # the database restarted: the next agents get a new connection
        result = _failed(agent, exc)
        failure = result["error"]
    changes = {"consolidation_ended_at": timezone.now()}
    if failure:
        changes |= {
            "consolidation_failures": F("consolidation_failures") + 1,
            "consolidation_failure": failure,
        }
    elif not busy:
        changes |= {"consolidation_failures": 0, "consolidation_failure": ""}
    AgentMaintenance.objects.filter(pk=state.pk).update(**changes)
    return result


def consolidation_run_one(*, agent: Agent, trigger: str, now: datetime | None = None) -> dict:
    """consolidation_run for one agent (the API's, the command's --agent), recorded as a consolidation
    run of its project as the nightly job's are, so the maintenance page shows it. A failure is
    recorded, then raised; an agent busy with another job (Conflict) is not recorded: nothing ran."""
    now = now or timezone.now()
    started = time.monotonic()
    try:
        result = consolidation_run(agent=agent, now=now)
    except Conflict:
        raise
    except Exception as exc:
        seconds = time.monotonic() - started
        _consolidation_record(
            agent.project_id, [_failed(agent, exc)], now=now, trigger=trigger, seconds=seconds
        )
        raise
    seconds = time.monotonic() - started
    _consolidation_record(agent.project_id, [result], now=now, trigger=trigger, seconds=seconds)
    return result


def _failed(agent: Agent, exc: Exception) -> dict:
    detail = failure_detail(exc)
    return {"agent": agent.slug, "updated": False, "refused": False, "reason": detail, "error": detail}


def _consolidation_record(
    project_id: int,
    results: list[dict],
    *,
    now,
    trigger: str,
    seconds: float,
    run: CompactionRun | None = None,
    finished: bool = True,
    not_reached: list[str] = (),
) -> CompactionRun:
    """A project's consolidation results as a maintenance run: what changed (updated, refused, failed)
    with the reason (and the facts a refusal would have lost, or an update removed saying why), and the
    counts. `run` is the record stored for these results so far (rewritten), `finished` False while
    agents remain (the record says it did not finish, in case its worker is stopped before it does)."""
    run = run or CompactionRun(
        project_id=project_id, kind=RunKind.CONSOLIDATION, trigger=trigger, started_at=now
    )
    run.duration_ms = round(seconds * 1000, 2)
    run.counts = {"agents": len(results), "updated": 0, "refused": 0, "failed": 0}
    run.changes, run.notes = [], [] if finished else [UNFINISHED]
    if not_reached:
        run.notes.append(
            f"not reached before the task's deadline (Q_TIMEOUT), left to the next run, which begins with "
            f"them: {', '.join(not_reached)}"
        )
    for result in results:
        if result.get("interrupted"):
            run.notes.append(
                f"{result['agent']}: the last run's {result['interrupted']}; taken after the others"
            )
        if result.get("llm_error"):  # a configured model failing every night must not pass unnoticed
            run.notes.append(
                f"{result['agent']}: the model's answer was not used, the deterministic merge ran: "
                f"{model_text_reported(result['llm_error'])}"
            )
        if "error" in result:
            action = "failed"
        elif result.get("refused"):
            action = "refused"
        elif result["updated"]:
            action = "updated"
        else:
            continue
        run_count(run, action)
        details = {}
        if result.get("facts_dropped_silently"):  # one a line, as the removals below
            details["facts_dropped_silently"] = "\n".join(result["facts_dropped_silently"])
        if result.get("removed"):  # what the model removed and why, one a line, for a curator to review
            details["removed"] = "\n".join(
                f"{item['fact']} (why: {item['why']})" for item in result["removed"]
            )
        run_change(run, "consolidation", action, result["agent"], result["reason"], **details)
    run.save()
    return run
