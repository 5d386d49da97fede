"""The embedding job's run fits within Q_TIMEOUT, the batch it may still start included."""

from search import tasks


def test_a_run_stops_starting_batches_in_time_for_q_timeout(settings, monkeypatch):
    """With an embeddings server (30 s timeout, three attempts) and Q_TIMEOUT at 120 s, a run started
    batches for MEMORY_EMBEDDINGS_RUN_SECONDS (240 s) and was killed every time it had a backlog (failed
    before: 240)."""
    settings.MEMORY_EMBEDDINGS = "openai"
    settings.MEMORY_EMBEDDINGS_TIMEOUT_SECONDS, settings.MEMORY_EMBEDDINGS_MAX_RETRIES = 30, 2
    settings.MEMORY_EMBEDDINGS_RUN_SECONDS = 240
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 120, "sync": False}
    asked = []
    monkeypatch.setattr(tasks, "embeddings_refresh", lambda max_seconds: _outcome(asked, max_seconds))
    tasks.embeddings_refresh_scheduled()
    [seconds] = asked
    assert seconds + 30 * 3 + 1.5 <= 120


def test_the_setting_is_kept_when_the_task_has_room(settings, monkeypatch):
    settings.MEMORY_EMBEDDINGS = "local"
    settings.MEMORY_EMBEDDINGS_RUN_SECONDS = 240
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 300, "sync": False}
    asked = []
    monkeypatch.setattr(tasks, "embeddings_refresh", lambda max_seconds: _outcome(asked, max_seconds))
    tasks.embeddings_refresh_scheduled()
    assert asked == [240]


def _outcome(asked, max_seconds):
    from search.embedding_index import RefreshOutcome

    asked.append(max_seconds)
    return RefreshOutcome()
