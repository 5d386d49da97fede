import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryproject.env import env_bool, env_float, env_int, env_list, env_str

ROOT = Path(__file__).resolve().parents[2]


def test_it_reads_typed_values(monkeypatch):
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_FLOAT", "0.5")
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert env_int("X_INT", 1) == 42
    assert env_float("X_FLOAT", 1.0) == 0.5
    assert env_bool("X_BOOL") is True
    assert env_list("X_LIST", []) == ["a", "b", "c"]
    assert env_str("X_MISSING", "default") == "default"
    monkeypatch.setenv("X_EMPTY", " ")
    assert env_str("X_EMPTY", "default") == "default"
    assert env_str("X_EMPTY", "default", keep_empty=True) == ""


@pytest.mark.parametrize(("value", "expected"), [(None, "3000/m"), ("", ""), ("10/s", "10/s")])
def test_an_empty_rate_limit_means_no_limit_as_the_readme_says(value, expected):
    """MEMORY_API_RATE_LIMIT: unset gives the default, set but empty turns the limit off (CI's
    schemathesis run sets it empty; it used to get the default and fuzz mostly 429s)."""
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_API_RATE_LIMIT"}
    if value is not None:
        env["MEMORY_API_RATE_LIMIT"] = value
    env["DJANGO_SETTINGS_MODULE"] = "memoryproject.settings"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings; print(repr(settings.MEMORY_API_RATE_LIMIT))",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == repr(expected)


@pytest.mark.parametrize(
    ("reader", "value", "message"),
    [
        (lambda: env_int("X_VAR", 1), "abc", "X_VAR must be an integer"),
        (lambda: env_int("X_VAR", 1, minimum=5), "2", "X_VAR must be at least 5"),
        (lambda: env_float("X_VAR", 1.0), "nan", "X_VAR must be a finite number"),
        (lambda: env_float("X_VAR", 1.0, maximum=1.0), "1.5", "X_VAR must be at most 1.0"),
        (lambda: env_bool("X_VAR"), "maybe", "X_VAR must be a boolean"),
    ],
)
def test_it_fails_loudly_naming_the_variable(monkeypatch, reader, value, message):
    monkeypatch.setenv("X_VAR", value)
    with pytest.raises(ImproperlyConfigured, match=message):
        reader()


def _setup_error(variables: dict[str, str]) -> str:
    """The last line Django's start-up prints with these variables set; it must fail."""
    env = {**os.environ, **variables, "DJANGO_SETTINGS_MODULE": "memoryproject.settings"}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEMORY_TOKEN_BUDGET", "lots"),
        ("DEBUG", "perhaps"),
        ("MEMORY_COMPACT_TRIGGER_RATIO", "3"),
        ("DATABASE_URL", "sqlite:///db.sqlite3"),
        ("REDIS_URL", "http://localhost"),
        ("MEMORY_CONSOLIDATE_CRON", "every night"),
        # Five fields, but not a schedule croniter (the job cluster) can compute: they were stored by
        # setup_schedules and failed in the cluster.
        ("MEMORY_CONSOLIDATE_CRON", "99 99 * * *"),
        ("MEMORY_RETENTION_CRON", "a b c d e"),
        ("MEMORY_RETENTION_CRON", "0 0 30 2 *"),
        # Read inside DATABASE_URL's parsing, it was reported as "DATABASE_URL cannot be parsed".
        ("DATABASE_CONN_MAX_AGE", "-1"),
    ],
)
def test_the_server_refuses_to_start_with_a_bad_value(variable, value):
    # The error is the variable's own, not another's that mentions it.
    last_line = _setup_error({variable: value})
    assert last_line.startswith(f"django.core.exceptions.ImproperlyConfigured: {variable} ")


@pytest.mark.parametrize(
    ("where", "secret_key"),
    [
        pytest.param("under-a-file", "", id="under-a-file"),
        pytest.param("under-a-file", "k" * 60, id="under-a-file-with-secret-key"),
        pytest.param("proc", "k" * 60, id="proc-with-secret-key"),
        pytest.param("key-is-a-folder", "", id="key-is-a-folder"),
    ],
)
def test_a_data_folder_that_cannot_be_used_stops_start_up_naming_it(tmp_path, where, secret_key):
    """A MEMORY_DATA_DIR that cannot be created or written is a configuration error naming it and the
    path; it was a NotADirectoryError or FileNotFoundError traceback from every command."""
    (tmp_path / "afile").write_text("")
    data_dir = {
        "under-a-file": tmp_path / "afile" / "data",
        "proc": Path("/proc/memory-data"),
        "key-is-a-folder": tmp_path / "data",
    }[where]
    (tmp_path / "data" / "secret_key").mkdir(parents=True)
    last_line = _setup_error({"MEMORY_DATA_DIR": str(data_dir), "SECRET_KEY": secret_key})
    assert last_line.startswith("django.core.exceptions.ImproperlyConfigured: MEMORY_DATA_DIR ")
    assert str(data_dir) in last_line


@pytest.mark.parametrize(
    ("command", "variable", "value"),
    [
        (["retention", "--dry-run"], "MEMORY_RETENTION_MESSAGES_DAYS", "-1"),
        (["setup_schedules"], "MEMORY_CONSOLIDATE_CRON", "99 * * * *"),
        (["import_memory_dir", "/nonexistent"], "MEMORY_CHECKPOINT_DAYS", "abc"),
    ],
)
def test_an_operators_command_with_a_bad_value_prints_one_line_not_a_traceback(command, variable, value):
    """Every manage.py command died with a 30-line traceback whose last line named the variable."""
    env = {**os.environ, variable: value}
    result = subprocess.run(
        [sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        next(
            line
            for line in result.stderr.splitlines()
            if line.startswith(f"Configuration error: {variable} ")
        )
    ]


def _manage_check_error(variables: dict[str, str]) -> str:
    """What `manage.py check` (any command: `serve`, `migrate`, `bin/manage ...`) prints on stderr with
    these variables set; it must fail."""
    env = {**os.environ, **variables}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    return result.stderr.strip()


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DEBUG", "perhaps", "DEBUG must be a boolean (1/0, true/false, yes/no, on/off), got 'perhaps'"),
        ("MEMORY_TOKEN_BUDGET", "lots", "MEMORY_TOKEN_BUDGET must be an integer, got 'lots'"),
        ("Q_WORKERS", "0", "Q_WORKERS must be at least 1, got 0"),
        ("MEMORY_EMBEDDINGS", "remote", "MEMORY_EMBEDDINGS must be local, openai or off, got 'remote'"),
        (
            "DATABASE_URL",
            "mysql://x",
            "DATABASE_URL must be a postgres:// or postgresql:// URL (PostgreSQL only)",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable_not_a_traceback(variable, value, message):
    """Every command printed Django's 50-line traceback of the settings import, the message last."""
    assert _manage_check_error({variable: value}) == f"Configuration error: {message}"


@pytest.mark.parametrize("value", ["Mars/Olympus", "Europe/Lisbn", "../etc/passwd"])
def test_an_unknown_time_zone_is_refused_naming_time_zone(value):
    """It was Django's "ValueError: Incorrect timezone setting" traceback, naming no variable."""
    assert _manage_check_error({"TIME_ZONE": value}) == (
        f"Configuration error: TIME_ZONE must be an IANA time zone name such as UTC or Europe/Lisbon, "
        f"got {value!r}"
    )


@pytest.mark.parametrize("value", ["postgres://", "postgres://user:secret@db.example.com:5432"])
def test_a_database_url_naming_no_database_is_refused_naming_database_url(value):
    """It was Django's "settings.DATABASES is improperly configured. Please supply the NAME" traceback
    from `serve` (the first command to connect), naming no variable."""
    error = _manage_check_error({"DATABASE_URL": value})
    assert error == (
        "Configuration error: DATABASE_URL names no database: postgres://user:password@host:port/database"
    )
    assert "secret" not in error


@pytest.mark.parametrize("value", ["10/0m", "0/m", "00/h"])
def test_a_rate_limit_of_nothing_or_a_zero_period_is_refused(value):
    """`10/0m` passed the pattern and every API request was a 500 (django-ratelimit divides by the
    period); `0/m` answered every request 429. Empty is how the limit is turned off."""
    assert _manage_check_error({"MEMORY_API_RATE_LIMIT": value}) == (
        "Configuration error: MEMORY_API_RATE_LIMIT must look like 3000/m (count/period, both at least 1), "
        f"or be empty, got {value!r}"
    )


def test_a_default_context_budget_over_the_largest_allowed_is_refused():
    """MEMORY_TOKEN_BUDGET over MEMORY_CONTEXT_MAX_BUDGET started, and every context request that left
    out budget_tokens was refused: "budget_tokens must be between 50 and 32000", a field it never sent."""
    assert _manage_check_error({"MEMORY_TOKEN_BUDGET": "40000"}) == (
        "Configuration error: MEMORY_TOKEN_BUDGET (40000) must not be larger than MEMORY_CONTEXT_MAX_BUDGET "
        "(32000)"
    )


@pytest.mark.parametrize("value", [r"\d*", r"CUST-\d+|", "(?:secret)?"])
def test_an_extra_redaction_regex_that_matches_an_empty_text_is_refused(value):
    """Accepted, it matched at every position of every text written (see tests/maintenance/test_redaction.py)."""
    assert _manage_check_error({"MEMORY_REDACTION_EXTRA_REGEX": value}) == (
        "Configuration error: MEMORY_REDACTION_EXTRA_REGEX matches an empty text, so it would match "
        f"between any two characters (use + rather than *, no empty alternative), got {value!r}"
    )


@pytest.mark.parametrize("value", [",", " , ,"])
def test_allowed_hosts_naming_no_host_is_refused(value):
    """It gave an empty list: the server started and answered every request 400 (Bad Request)."""
    assert _manage_check_error({"ALLOWED_HOSTS": value}) == (
        "Configuration error: ALLOWED_HOSTS names no host: give comma-separated host names or addresses "
        f"(memory.example.com,10.0.0.5), or leave it unset for this machine's, got {value.strip()!r}"
    )


@pytest.mark.parametrize(
    "variable",
    [
        "MEMORY_COMPACT_INTERVAL_MINUTES",
        "MEMORY_SESSION_LIFECYCLE_MINUTES",
        "MEMORY_EMBEDDINGS_INTERVAL_MINUTES",
    ],
)
def test_a_schedule_interval_the_schedule_table_cannot_hold_is_refused(variable):
    """django-q2 keeps a schedule's minutes in a smallint: 50000 (about 35 days) passed the settings and
    `serve` died in setup_schedules with "DataError: smallint out of range"."""
    assert (
        _manage_check_error({variable: "50000"})
        == f"Configuration error: {variable} must be at most 32767, got 50000"
    )


@pytest.mark.parametrize(
    ("variable", "value", "maximum"),
    [
        # Every search computed now - 1,000,000 days: "OverflowError: date value out of range", a 500.
        ("MEMORY_UNCITED_DAYS", "1000000", "36500"),
        ("MEMORY_CHECKPOINT_DAYS", "1e7", "36500"),
        ("MEMORY_RETENTION_DECISIONS_DAYS", "1000000", "36500"),
        ("MEMORY_PURGE_GRACE_DAYS", "1000000", "36500"),
        ("MEMORY_SESSION_ARCHIVE_DAYS", "1000000", "36500"),
        ("MEMORY_SESSION_RETENTION_DAYS", "1000000", "36500"),
        ("MEMORY_SESSION_IDLE_MINUTES", "1000000000000", "52560000"),
        ("MEMORY_EXTRACTION_COOLDOWN_MINUTES", "1e12", "52560000"),
    ],
)
def test_a_period_too_long_to_compute_a_date_from_is_refused(variable, value, maximum):
    """Periods are subtracted from (or added to) now: past about 2,700 years the date falls outside what
    Python holds, and the search, retention, lifecycle or extraction computing it raised OverflowError."""
    error = _manage_check_error({variable: value})
    assert error.startswith(f"Configuration error: {variable} must be at most {maximum}")


@pytest.mark.parametrize(
    ("variable", "value", "maximum"),
    [
        # urlopen(timeout=1e12): "OverflowError: timestamp out of range for platform time_t", which the
        # LLM client's handlers (OSError, HTTPError...) do not catch: the extraction or consolidation failed.
        ("LLM_TIMEOUT_SECONDS", "1e12", "86400"),
        ("LLM_RETRY_BACKOFF_SECONDS", "1e12", "3600"),
        ("MEMORY_EMBEDDINGS_TIMEOUT_SECONDS", "1e12", "86400"),
        ("MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS", "1e12", "86400"),
        ("MEMORY_EMBEDDINGS_RUN_SECONDS", "1e12", "86400"),
        ("MEMORY_LOGIN_LOCKOUT_MINUTES", "1000000000000", "52560000"),
    ],
)
def test_a_timeout_or_wait_too_long_for_the_system_clock_is_refused(variable, value, maximum):
    error = _manage_check_error({variable: value})
    assert error.startswith(f"Configuration error: {variable} must be at most {maximum}")


def _manage_check(variables: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, **variables},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_require_secret_key_refuses_to_start_without_one_unless_debug():
    """The README says "(unless DEBUG)", as the first settings did; the check had lost its DEBUG condition,
    so a developer with REQUIRE_SECRET_KEY in a shared environment file could not start in DEBUG."""
    unset = {"SECRET_KEY": "", "REQUIRE_SECRET_KEY": "1"}
    assert _manage_check_error({**unset, "DEBUG": "0"}) == (
        "Configuration error: SECRET_KEY must be set when REQUIRE_SECRET_KEY is on (unless DEBUG)"
    )
    assert _manage_check({**unset, "DEBUG": "1"}).returncode == 0


@pytest.mark.parametrize(
    "variables",
    [{"LLM_BASE_URL": "http://localhost:11434/v1"}, {"LLM_MODEL": "llama3.1"}],
    ids=["url", "model"],
)
def test_half_an_llm_configuration_is_refused(variables):
    """One without the other started, and every extraction, consolidation and compaction summary quietly
    used the heuristics (llm_configured() wants both): the operator believed an LLM was in use."""
    assert _manage_check_error({"LLM_BASE_URL": "", "LLM_MODEL": "", **variables}) == (
        "Configuration error: LLM_BASE_URL and LLM_MODEL go together: set both (an OpenAI-compatible "
        "server's URL and the model to ask) or neither (heuristics)"
    )
