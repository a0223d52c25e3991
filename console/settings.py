"""Django settings, read from the environment (12-factor) with embedded defaults.

Every setting a deployment may change is an environment variable; unset, the
embedded single-machine default applies (SQLite and Redis on localhost).

=============================== ==========================================================
variable                        default
=============================== ==========================================================
SLUICE_SECRET_KEY               an insecure development key (system check ``console.W001``)
SLUICE_DEBUG                    false
SLUICE_ALLOWED_HOSTS            ``127.0.0.1,localhost``
SLUICE_VAR_DIR                  ``<repo>/var``
DATABASE_URL                    ``sqlite:///<SLUICE_VAR_DIR>/sluice.sqlite3``
REDIS_URL                       ``redis://127.0.0.1:6379/0``
CELERY_BROKER_URL               ``REDIS_URL``
SLUICE_RUNTIME                  ``runtime_adapter.spark.SparkRuntime``
SLUICE_REDIS_PREFIX             ``sluice`` (prefix of the runtime's Redis keys)
SLUICE_RECONCILE_INTERVAL       2 (seconds between reconcile passes)
SLUICE_WORKER_SESSION_TIMEOUT   10 (seconds without heartbeat before a worker is DEAD)
SLUICE_RESTART_RESET_SECONDS    600 (seconds RUNNING before the restart policy's count resets)
SLUICE_LOG_LEVEL                INFO
SLUICE_KAFKA_BOOTSTRAP          ``127.0.0.1:9092`` (the Kafka HTTP-ingested events go to)
SLUICE_INGEST_*                 see "HTTP ingestion" below
=============================== ==========================================================
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import dj_database_url

from console.schedule import beat_schedule

BASE_DIR = Path(__file__).resolve().parent.parent

DEV_SECRET_KEY = "django-insecure-sluice-development-key-do-not-use-in-production"


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name} must be true or false, got {raw!r}")


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from exc


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from exc
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


def _env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# -- core --------------------------------------------------------------------------------------

SECRET_KEY = os.environ.get("SLUICE_SECRET_KEY") or DEV_SECRET_KEY
DEBUG = _env_bool("SLUICE_DEBUG", False)
ALLOWED_HOSTS = _env_list("SLUICE_ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = _env_list("SLUICE_CSRF_TRUSTED_ORIGINS", "")

VAR_DIR = Path(os.environ.get("SLUICE_VAR_DIR") or BASE_DIR / "var")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "console.apps.ConsoleConfig",
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

ROOT_URLCONF = "console.urls"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

# -- database ----------------------------------------------------------------------------------

_DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'sluice.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or _DEFAULT_DATABASE_URL,
        conn_max_age=60,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the Celery worker and beat share one file: WAL lets readers run during
    # a write, IMMEDIATE transactions take the write lock up front (no upgrade deadlocks), and
    # the timeout makes a writer wait for the lock instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

# The default SQLite file and collected static files live here; a read-only VAR_DIR is fine
# when DATABASE_URL points elsewhere and collectstatic ran at build time.
with contextlib.suppress(OSError):
    (VAR_DIR / "static").mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# -- static files ------------------------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# The browser console (frontend/, built by `npm run build`): its assets are served under
# /static/ui/ like any static file, its index.html by console.views.console_app at "/".
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [("ui", FRONTEND_DIST)] if FRONTEND_DIST.is_dir() else []
# Serve app static files (admin, Swagger UI) straight from the apps when collectstatic has
# not run, as in development and tests; collected files win when present.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Compressed but not hashed: pages render before (and without) collectstatic.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# -- REST API ----------------------------------------------------------------------------------

REST_FRAMEWORK = {
    # Token first: an anonymous request gets 401 with "WWW-Authenticate: Token".
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "console.api.exceptions.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Sluice API",
    "DESCRIPTION": (
        "Model event channels (source → transforms → sink), start and stop them, and watch "
        "their connectors, tasks and runtime workers. Browse the plugin catalogue, check "
        "stage configs and test event patterns. Secrets in configs are write-only."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Operation ids and tags without the version: "channels_list", tag "channels".
    "SCHEMA_PATH_PREFIX": r"/api/v[0-9]+",
    "ENUM_NAME_OVERRIDES": {
        "ConnectorStateEnum": "console.choices.ConnectorState",
        "TargetStateEnum": "console.choices.TargetState",
        "WorkerStateEnum": "console.choices.WorkerState",
        "SubjectTypeEnum": "console.choices.SubjectType",
        "PluginKindEnum": "console.choices.PluginKind",
    },
}

# -- runtime and control loop ------------------------------------------------------------------

REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
SLUICE_RUNTIME = os.environ.get("SLUICE_RUNTIME") or "runtime_adapter.spark.SparkRuntime"
SLUICE_REDIS_PREFIX = os.environ.get("SLUICE_REDIS_PREFIX") or "sluice"
SLUICE_RECONCILE_INTERVAL = _env_float("SLUICE_RECONCILE_INTERVAL", 2.0)
SLUICE_WORKER_SESSION_TIMEOUT = _env_float("SLUICE_WORKER_SESSION_TIMEOUT", 10.0)
SLUICE_RESTART_RESET_SECONDS = _env_float("SLUICE_RESTART_RESET_SECONDS", 600.0)

# -- HTTP ingestion (the http source): events are written to sluice.ingest.<channel> ----------

SLUICE_KAFKA_BOOTSTRAP = os.environ.get("SLUICE_KAFKA_BOOTSTRAP") or "127.0.0.1:9092"
SLUICE_INGEST_TOPIC_PARTITIONS = _env_int("SLUICE_INGEST_TOPIC_PARTITIONS", 3)
SLUICE_INGEST_REPLICATION_FACTOR = _env_int("SLUICE_INGEST_REPLICATION_FACTOR", 1)
SLUICE_INGEST_MAX_REQUEST_BYTES = _env_int("SLUICE_INGEST_MAX_REQUEST_BYTES", 1024 * 1024)
SLUICE_INGEST_MAX_BATCH = _env_int("SLUICE_INGEST_MAX_BATCH", 500)
SLUICE_INGEST_DELIVERY_TIMEOUT = _env_float("SLUICE_INGEST_DELIVERY_TIMEOUT", 10.0)

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE = beat_schedule(SLUICE_RECONCILE_INTERVAL)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# -- logging: everything to stdout -------------------------------------------------------------

LOG_LEVEL = os.environ.get("SLUICE_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": "plain",
        },
    },
    "root": {"handlers": ["stdout"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["stdout"], "level": "INFO", "propagate": False},
        "celery": {"handlers": ["stdout"], "level": "INFO", "propagate": False},
        # Reconcile runs every few seconds: per-run "sent / received / succeeded" lines
        # would drown everything else. The task logs itself when a pass changes something.
        "celery.beat": {"level": "WARNING"},
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
    },
}
