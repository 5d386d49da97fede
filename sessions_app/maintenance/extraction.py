"""Extraction after a conversation: when a session closes or goes quiet, its decisions, lessons and
durable facts go to the agent's daily note, MEMORY.md and PROFILE.md (by an LLM when one is configured,
by heuristics otherwise), once per conversation state, under the agent's job lock and a cooldown."""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import Schedule
from django_q.tasks import async_task
from redis.exceptions import RedisError

from memoryproject.llm import (
    LLMError,
    LLMPromptTooLong,
    llm_configured,
    newest_within,
    prompt_messages,
    prompt_room,
)
from sessions_app.maintenance.trimming import session_digest
from sessions_app.models import Message, Role, Session
from sessions_app.scan import DURABLE_CATEGORIES, scan_message
from vault import selectors, services
from vault.extraction import insights_extract
from vault.maintenance.consolidation import (
    file_content,
    file_replace_if_unchanged,
    llm_json_rewrite,
    llm_text_storable,
)
from vault.maintenance.facts import instructions_added, model_text_reported, rewrite_review
from vault.maintenance.runs import ACTOR, agent_lock_try
from vault.models import Agent, AgentMaintenance, EntrySource, SessionMark
from vault.text import normalise_fact, text_clip

logger = logging.getLogger(__name__)

SCHEDULED_TRIGGERS = frozenset({"cron", "schedule", "scheduled"})


def extraction_enqueue(*, agent: Agent, session_id: int, trigger_source: str) -> bool:
    """Queue the post-conversation extraction for a session (call when a session closes or goes quiet).

    Enqueued when the current transaction commits, so the task sees the messages just written.
    Conversations started by a schedule are skipped at once (no recursion). Returns whether
    a task will be queued.
    """
    if not settings.MEMORY_EXTRACTION_ENABLED or trigger_source in SCHEDULED_TRIGGERS:
        return False

    def enqueue():
        if _broker_in_memory():
            # Redis keeps a queued task in memory, and a worker takes it off the list before it runs:
            # a Redis restart without persistence, or a worker killed before the task's first commit,
            # loses it, and nothing else would extract this conversation. A one-off schedule in the
            # database runs the extraction later if the task never starts; the task, when it starts,
            # replaces it (_interrupted_retry_arm) and removes it when done (_retries_remove).
            extraction_retry_schedule(
                agent_id=agent.pk, session_id=session_id, trigger_source=trigger_source, at=_lost_task_due()
            )
        try:
            async_task(
                EXTRACTION_TASK,
                agent.pk,
                session_id,
                trigger_source,
                task_name=f"extract agent {agent.pk} session {session_id}",
                group="extraction",
            )
        except RedisError as exc:
            # The broker (REDIS_URL) is down: the session has closed, its extraction must not be lost
            # nor the close answered with a 500. A one-off schedule, kept in the database, queues it
            # once the scheduler can reach the broker again (it retries a schedule it failed to queue).
            logger.warning(
                "extraction of session %s not queued (the job broker is unreachable: %s); "
                "scheduled in the database instead",
                session_id,
                exc,
            )
            extraction_retry_schedule(
                agent_id=agent.pk, session_id=session_id, trigger_source=trigger_source, at=timezone.now()
            )

    transaction.on_commit(enqueue)
    return True


EXTRACTION_TASK = "sessions_app.tasks.extraction_run"


def _broker_in_memory() -> bool:
    """Whether queued tasks live in Redis (REDIS_URL) rather than in PostgreSQL, which keeps a task until
    it is done and hands one whose worker died out again (Q_CLUSTER retry); with Q_SYNC they run at once."""
    return not Conf.SYNC and not Conf.ORM


def _lost_task_due() -> datetime:
    """When a task queued now is surely lost if it has not started: as for an interrupted run."""
    return timezone.now() + timedelta(seconds=settings.Q_CLUSTER["timeout"]) + INTERRUPTED_RETRY_MARGIN


BUSY_RETRY_AFTER = timedelta(minutes=1)  # an extraction that found the agent busy, with no cooldown


def _retry_name(session_id: int) -> str:
    return f"extraction retry: session {session_id}"


# pg_advisory_xact_lock namespace (sessions_app.services.common has 73_001 and 73_002); second key: the agent.
_LOCK_RETRY_SCHEDULE = 73_003


def extraction_retry_schedule(
    *, agent_id: int, session_id: int, trigger_source: str, at: datetime, attempt: int = 1
) -> datetime:
    """Schedule the session's extraction again for `at` (a one-off django-q2 schedule, run by the
    cluster's scheduler like the declared ones); returns when it will run.

    One pending retry per session. The session's retries are replaced by one at `at`, overdue ones
    included: one that had fallen due and that the scheduler had not reached yet was left beside the new
    one, both were then turned into tasks, and the second found nothing to do. A retry the scheduler is
    turning into a task right now (its row locked until the scheduler deletes it) is left to it, and the
    new one added beside it; under Q_SYNC that task runs inside the scheduler's transaction, and a retry
    it defers replaces the one it runs for. Deferrals of one agent's sessions take turns (an advisory
    lock held to commit), so two at once add one retry, not two. `attempt` is the retry's attempt
    number when it runs again an extraction that was interrupted (_interrupted_retry_arm)."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_RETRY_SCHEDULE, agent_id])
        retries = Schedule.objects.filter(name=_retry_name(session_id), func=EXTRACTION_TASK).exclude(
            repeats=0
        )
        replaced = list(retries.select_for_update(skip_locked=True).values_list("pk", flat=True))
        Schedule.objects.filter(pk__in=replaced).delete()
        Schedule.objects.create(
            name=_retry_name(session_id),
            func=EXTRACTION_TASK,
            args=repr((agent_id, session_id, trigger_source)),
            # Its task in the group of every extraction (not one named after this schedule), so that
            # the successful tasks kept per group (Q_CLUSTER save_limit_per) stay bounded.
            kwargs=repr(
                {"q_options": {"group": "extraction"}} | ({"attempt": attempt} if attempt > 1 else {})
            ),
            schedule_type=Schedule.ONCE,
            repeats=-1,  # deleted by the scheduler once the task is queued
            next_run=at,
        )
    return at


# An extraction is run at most this many times in a row when its worker is killed or times out.
EXTRACTION_ATTEMPTS = 3
# How long after an extraction starts its interrupted-run retry falls due: past Q_TIMEOUT, when the
# worker is surely gone (the database broker hands a timed-out task out again at the same time).
INTERRUPTED_RETRY_MARGIN = timedelta(seconds=60)


def _interrupted_retry_arm(
    *, agent_id: int, session_id: int, trigger_source: str, now: datetime, attempt: int
) -> None:
    """Before the extraction's transaction, committed: a retry of this extraction for when its worker
    would have been killed by Q_TIMEOUT. The extraction writes everything in one transaction, so a
    worker killed or timed out mid-way (or the database connection lost) leaves nothing written and
    this retry does it all again; an extraction that ends removes it (_retries_remove), a deferral
    replaces it. Nothing else would run it again: the session's close or quiet queued it once.
    The attempts are counted; the last arms no retry."""
    if attempt >= EXTRACTION_ATTEMPTS:
        logger.warning(
            "extraction of session %s: attempt %s of %s, no retry if this one is interrupted too",
            session_id,
            attempt,
            EXTRACTION_ATTEMPTS,
        )
        return
    at = now + timedelta(seconds=settings.Q_CLUSTER["timeout"]) + INTERRUPTED_RETRY_MARGIN
    extraction_retry_schedule(
        agent_id=agent_id, session_id=session_id, trigger_source=trigger_source, at=at, attempt=attempt + 1
    )


def _retries_remove(session_id: int) -> None:
    """Remove the session's pending retries: the extraction that calls this took the conversation as it
    is (extracted it, or found it unchanged since it was), so a retry would only skip it. One the
    scheduler is turning into a task right now (its row locked) is left to it: it deletes it."""
    retries = Schedule.objects.filter(name=_retry_name(session_id), func=EXTRACTION_TASK)
    Schedule.objects.filter(
        pk__in=list(retries.select_for_update(skip_locked=True).values_list("pk", flat=True))
    ).delete()


def _transcript_lines(messages: list[Message]) -> list[str]:
    """The last MEMORY_EXTRACTION_TRANSCRIPT_MESSAGES messages as the model reads them, oldest first."""
    limit = settings.MEMORY_EXTRACTION_MESSAGE_CHARS
    lines = []
    for message in messages[-settings.MEMORY_EXTRACTION_TRANSCRIPT_MESSAGES :]:
        text = text_clip(message.text, limit + len(TRUNCATED), flatten=False, mark=TRUNCATED)
        lines.append(f"{'User' if message.role == Role.USER else 'Assistant'}: {text}")
    return lines


def _extraction_prompt(messages: list[Message], **values: str) -> tuple[list[dict], int]:
    """The extraction prompt (the files in `values`) with the newest messages of the transcript that
    fit LLM_MAX_INPUT_TOKENS, and how many of the transcript's messages were left out for it (an
    earlier extraction of the session saw them when they were the newest). Raises LLMPromptTooLong when
    the files leave no room for even the last message."""
    lines = _transcript_lines(messages)
    count = newest_within(lines, prompt_room(prompt_messages("extraction", transcript="", **values)))
    if not count:
        raise LLMPromptTooLong(
            "PROFILE.md, MEMORY.md and today's note leave no room for the conversation's last message "
            f"within LLM_MAX_INPUT_TOKENS ({settings.LLM_MAX_INPUT_TOKENS}); the model was not asked"
        )
    return prompt_messages("extraction", transcript="\n\n".join(lines[-count:]), **values), len(lines) - count


TRUNCATED = "... [truncated]"
EXTRACTION_FIELDS = ("daily_entry", "memory_update", "profile_update")


def _extraction_contract(reply: dict) -> dict:
    """Check the JSON contract; anything else is an LLMError (and the caller falls back)."""
    if not isinstance(reply.get("should_update"), bool):
        raise LLMError(f"'should_update' must be true or false, got {reply.get('should_update')!r}")
    checked = {
        "should_update": reply["should_update"],
        "reason": model_text_reported(str(reply.get("reason") or "")),
    }
    for field in EXTRACTION_FIELDS:
        value = reply.get(field)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise LLMError(f"'{field}' must be a string, got {type(value).__name__}")
        checked[field] = llm_text_storable(field, value.strip())
    removed = reply.get("removed") or []
    if not isinstance(removed, list):
        raise LLMError(f'\'removed\' must be a list of {{"fact", "why"}} objects, got {removed!r:.100}')
    checked["removed"] = removed
    return checked


def _daily_heading(now: datetime, session: Session, how: str) -> str:
    return f"\n## {timezone.localtime(now):%H:%M} · session {session.external_id or session.pk} ({how})\n"


def _extract_with_llm(agent: Agent, session: Session, messages: list[Message], now: datetime) -> dict:
    day = timezone.localtime(now).date()
    # The note holds every logged exchange: extraction_perform wrote the queued ones before its
    # transaction (written in it, the note's row stayed locked while the model thought, and the
    # agent's appends and reads of the note waited for the model).
    # The day's current part (the last): at most MEMORY_DAILY_NOTE_MAX_BYTES however busy the day was.
    daily_parts = selectors.daily_note_parts(agent.pk, day)
    daily_path = daily_parts[-1].path if daily_parts else services.daily_note_path(day)
    profile, memory = file_content(agent, "PROFILE.md"), file_content(agent, "MEMORY.md")
    prompt, left_out = _extraction_prompt(
        messages,
        date=f"{day:%Y-%m-%d}",
        agent=agent.slug,
        profile=profile or "(empty)",
        memory=memory or "(empty)",
        daily_path=daily_path,
        daily=daily_parts[-1].content if daily_parts else "(empty)",
    )
    reply = llm_json_rewrite(prompt, files={"MEMORY.md": memory or "", "PROFILE.md": profile or ""})
    contract = _extraction_contract(reply)
    for field, before in (("daily_entry", ""), ("memory_update", memory), ("profile_update", profile)):
        # Into the files every context of the agent loads: a prompt injection in the conversation must
        # not be carried there by the model (an entry that looks like this is held for review).
        findings = instructions_added(before, contract[field])
        if findings:
            raise LLMError(
                f"the model's {field} adds text that looks like instructions ({', '.join(findings)})"
            )
    result = {"path": "llm", "should_update": contract["should_update"], "reason": contract["reason"]}
    result |= {"refused": [], "removed": []}
    if left_out:
        result["messages_over_budget"] = left_out
    written = []
    if contract["should_update"]:
        if contract["daily_entry"]:
            note = services.daily_note_append(
                agent=agent,
                when=now,
                text=_daily_heading(now, session, "extraction") + contract["daily_entry"] + "\n",
                changed_by=ACTOR,
            )
            written.append(note.path)
        written += _core_files_write(agent, contract, {"MEMORY.md": memory, "PROFILE.md": profile}, result)
    result["written"] = written
    return result


def _core_files_write(
    agent: Agent, contract: dict, current: dict[str, str | None], result: dict
) -> list[str]:
    """Write the model's MEMORY.md and PROFILE.md (those it rewrote) and return the paths written. A
    file whose rewrite drops more than MEMORY_CONSOLIDATE_MAX_SILENT_DROP of its facts without naming
    them in the answer's "removed" is kept as it is: the refusal is logged and listed in the result's
    "refused" ({"path", "reason", "facts_dropped_silently"}); the removals told why of, of the files
    written, are listed in its "removed" ({"path", "fact", "why"})."""
    written = []
    for path, field in (("MEMORY.md", "memory_update"), ("PROFILE.md", "profile_update")):
        content, before = (contract[field] + "\n" if contract[field] else ""), current[path]
        if not content or content == before:
            continue
        refusal, removals = rewrite_review(path=path, old=before, new=content, removed=contract["removed"])
        if refusal:
            logger.warning("extraction for %s: %s", agent, refusal["reason"])
            result["refused"].append({"path": path, **refusal})
        elif file_replace_if_unchanged(agent=agent, path=path, expected=before, content=content):
            written.append(path)
            result["removed"] += [{"path": path, **removal} for removal in removals]
    return written


def insight_sources(messages: list[Message]) -> dict[str, int]:
    """The id of the message each insight of the conversation was first found in, by normalised text
    (an entry's provenance: a forget of that message erases the entry written from it alone)."""
    found: dict[str, int] = {}
    for message in messages:
        insights = insights_extract(
            [message.text],
            max_per_kind=settings.MEMORY_INSIGHTS_MAX,
            max_chars=settings.MEMORY_INSIGHT_CHARS,
            min_line_chars=settings.MEMORY_INSIGHT_MIN_LINE_CHARS,
        )
        for text in (*insights.decisions, *insights.lessons):
            found.setdefault(normalise_fact(text), message.pk)
    return found


def _extract_with_heuristics(
    agent: Agent, session: Session, messages: list[Message], now: datetime, facts_written: list[str]
) -> dict:
    """Decisions and lessons as entries (insights_store: none stored twice) and the durable facts of the
    user's messages, listed in the daily note; the facts in `facts_written` (the session's earlier
    extractions wrote them) are left out, so a conversation extracted again after it grew lists only
    what its new messages say (result "facts": every fact the session's extractions listed)."""
    created, _ = services.insights_store(
        agent=agent,
        texts=[m.text for m in messages],
        tags=["auto-extract", "session-close"],
        source=EntrySource.EXTRACTION,
        created_by=ACTOR,
        source_session_id=session.pk,
        source_messages=lambda: insight_sources(messages),
    )
    facts = []
    for message in messages:
        if message.role == Role.USER:
            for match in scan_message(message.text):
                if match.category in DURABLE_CATEGORIES and match.text not in facts:
                    facts.append(f"{match.category.replace('_', ' ')}: {match.text}")
    facts = [fact for fact in dict.fromkeys(facts) if fact not in facts_written]
    lines = [f"- {entry.category[:-1].capitalize()}: {entry.content}" for entry in created]
    lines += [f"- {fact}" for fact in facts]
    written = []
    if lines:
        note = services.daily_note_append(
            agent=agent,
            when=now,
            text=_daily_heading(now, session, "heuristic extraction") + "\n".join(lines) + "\n",
            changed_by=ACTOR,
        )
        written.append(note.path)
    return {
        "path": "heuristic",
        "should_update": bool(lines),
        "reason": f"{len(created)} insight(s), {len(facts)} durable fact(s)" if lines else "nothing found",
        "entry_ids": [entry.pk for entry in created],
        "written": written,
        "facts": [*facts_written, *facts],
    }


def _extract(
    agent: Agent, session: Session, messages: list[Message], now: datetime, facts_written: list[str]
) -> dict:
    """By the LLM when one is configured, by the heuristics when there is none or it fails."""
    result = None
    if llm_configured():
        try:
            with transaction.atomic():
                result = _extract_with_llm(agent, session, messages, now)
        except LLMError as exc:
            logger.warning("LLM extraction failed for %s, falling back to heuristics: %s", agent, exc)
            result = {"llm_error": str(exc)}
    if result is None or "llm_error" in result:
        result = {**(result or {}), **_extract_with_heuristics(agent, session, messages, now, facts_written)}
    return result


def _extraction_mark(session: Session) -> SessionMark | None:
    """What the session's last extraction read (its digest) and the facts its extractions listed."""
    return SessionMark.objects.filter(session=session, purpose=SessionMark.Purpose.EXTRACTION).first()


def _extraction_mark_store(session: Session, *, digest: str, now: datetime, facts: list[str]) -> None:
    SessionMark.objects.update_or_create(
        session=session,
        purpose=SessionMark.Purpose.EXTRACTION,
        defaults={"content_hash": digest, "updated_at": now, "facts": facts},
    )


def _maintenance_locked(agent: Agent) -> AgentMaintenance:
    state, _ = AgentMaintenance.objects.get_or_create(agent=agent)
    return AgentMaintenance.objects.select_for_update().get(pk=state.pk)


def _in_cooldown(last: datetime | None, now: datetime, cooldown: timedelta) -> bool:
    """Whether the agent's last extraction, at `last`, was less than `cooldown` ago. One after now (the
    clock was set back since) starts no cooldown: it deferred every extraction of the agent until
    then, hours or days away, however often retried."""
    return last is not None and timedelta(0) <= now - last < cooldown


def _skipped(agent_id: int, session_id: int, reason: str) -> dict:
    """An extraction's result when it skips the conversation; the session's pending retries go (a retry,
    or the schedule that backs a task queued on Redis, would be skipped too)."""
    logger.info("extraction for agent %s session %s skipped: %s", agent_id, session_id, reason)
    with transaction.atomic():
        _retries_remove(session_id)
    return {"status": "skipped", "reason": reason}


def extraction_perform(
    *, agent_id: int, session_id: int, trigger_source: str, now: datetime | None = None, attempt: int = 1
) -> dict:
    """The post-conversation extraction: skip rules, per-agent lock, cooldown, LLM or heuristics.
    Returns {"status": "done"|"skipped"|"deferred", "reason", ...}; django-q2 stores it as the task's
    result. Within the agent's cooldown a changed conversation is deferred, not dropped: its extraction
    is scheduled for when the cooldown ends ("deferred_until"); `attempt`: _interrupted_retry_arm."""
    now = now or timezone.now()

    def skipped(reason: str) -> dict:
        return _skipped(agent_id, session_id, reason)

    if not settings.MEMORY_EXTRACTION_ENABLED:
        return skipped("extraction is disabled (MEMORY_EXTRACTION_ENABLED)")
    if trigger_source in SCHEDULED_TRIGGERS:
        return skipped("conversation triggered by a schedule")
    agent = Agent.objects.filter(pk=agent_id).first()
    session = Session.objects.filter(pk=session_id, agent_id=agent_id).first()
    if agent is None or session is None:
        return skipped("agent or session no longer exists")
    messages = list(
        Message.objects.filter(session=session, internal=False, role__in=[Role.USER, Role.ASSISTANT])
        .exclude(text="")
        .order_by("created_at", "id")
    )
    if len(messages) < settings.MEMORY_EXTRACTION_MIN_MESSAGES:
        return skipped(f"{len(messages)} message(s), fewer than {settings.MEMORY_EXTRACTION_MIN_MESSAGES}")
    last_user = next((m for m in reversed(messages) if m.role == Role.USER), None)
    if last_user is None or len(last_user.text.strip()) < settings.MEMORY_EXTRACTION_MIN_USER_CHARS:
        return skipped(
            f"the last user message is under {settings.MEMORY_EXTRACTION_MIN_USER_CHARS} characters"
        )
    digest = session_digest(messages)
    cooldown = timedelta(minutes=settings.MEMORY_EXTRACTION_COOLDOWN_MINUTES)

    def deferred(reason: str, at: datetime) -> dict:
        # A throttle, not a drop: the session is extracted when the cooldown ends.
        until = extraction_retry_schedule(
            agent_id=agent.pk, session_id=session.pk, trigger_source=trigger_source, at=at
        )
        logger.info("extraction for agent %s session %s deferred: %s", agent_id, session_id, reason)
        return {
            "status": "deferred",
            "reason": f"{reason}; deferred until {until}",
            "deferred_until": until.isoformat(),
        }

    _interrupted_retry_arm(agent_id=agent.pk, session_id=session.pk, trigger_source=trigger_source,
                           now=now, attempt=attempt)  # fmt: skip
    services.daily_notes_flush(agent=agent)  # committed: in the transaction, it locked the note
    with transaction.atomic():
        locked = agent_lock_try(agent.pk)
        # Without the lock too: an extraction of this very conversation running now has not written the
        # mark yet (this one is deferred, and that one removes the retry).
        mark = _extraction_mark(session)
        if mark is not None and mark.content_hash == digest:
            _retries_remove(session.pk)  # a retry would find it unchanged too
            return skipped("the conversation is unchanged since its last extraction")
        if not locked:
            # The job holding the lock may be another session's extraction, whose cooldown starts now.
            return deferred(
                "another extraction or consolidation for this agent is running",
                now + max(cooldown, BUSY_RETRY_AFTER),
            )
        state = _maintenance_locked(agent)
        if _in_cooldown(state.last_extraction_at, now, cooldown):
            return deferred(
                f"cooldown: the last extraction for this agent was at {state.last_extraction_at}",
                state.last_extraction_at + cooldown,
            )
        state.last_extraction_at = now
        state.save(update_fields=["last_extraction_at"])
        facts_written = list(mark.facts) if mark is not None else []
        result = _extract(agent, session, messages, now, facts_written)
        _extraction_mark_store(session, digest=digest, now=now, facts=result.pop("facts", facts_written))
        # A retry deferred by the cooldown has nothing left to do: this run extracted the session.
        _retries_remove(session.pk)
    return {"status": "done", **result}
