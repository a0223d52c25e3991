"""Django settings, read from the environment (12-factor) with embedded defaults.

Every setting a deployment may change is an environment variable, read once here through
:class:`console.config.ConsoleSettings` (the console's own) and
:class:`runtime_adapter.config.RuntimeSettings` (those shared with the runtime: Redis, the
data folder, logging). Unset, the embedded single-machine default applies (SQLite and Redis on
localhost); an invalid value stops the process at start with the variable named. The
manual's configuration reference (``make docs``) lists every variable, rendered from those
two classes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from csp.constants import NONCE, NONE, SELF, UNSAFE_HASHES, UNSAFE_INLINE

from console.config import ConsoleSettings
from console.schedule import beat_schedule
from runtime_adapter import logs
from runtime_adapter.config import RuntimeSettings
from runtime_adapter.group.settings import GroupConfig

BASE_DIR = Path(__file__).resolve().parent.parent

DEV_SECRET_KEY = "django-insecure-sluice-development-key-do-not-use-in-production"

# Lower case: not Django settings themselves, only where they are read from.
env = ConsoleSettings.load()
runtime_env = RuntimeSettings.load()


def _csp_hash(source: str) -> str:
    """A Content-Security-Policy source allowing the inline script ``source`` by its hash."""
    digest = base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()
    return f"'sha256-{digest}'"


# -- core --------------------------------------------------------------------------------------

SECRET_KEY = env.secret_key.get_secret_value() if env.secret_key else DEV_SECRET_KEY
# Fernet keys for secrets in stage configs (console.crypto): the first encrypts, all decrypt.
SLUICE_SECRETS_KEY = env.secrets_key.get_secret_value() if env.secrets_key else ""
# The audit trail records the first X-Forwarded-For hop only for requests from these.
SLUICE_TRUSTED_PROXIES = env.trusted_proxies
DEBUG = env.debug
ALLOWED_HOSTS = env.allowed_hosts
CSRF_TRUSTED_ORIGINS = env.csrf_trusted_origins

VAR_DIR = runtime_env.var_dir

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
    "axes",
    "csp",
    "console.apps.ConsoleConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.audit.AuditMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out sign-in into console.signin's 429.
    "axes.middleware.AxesMiddleware",
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

# -- signing in: throttled on every door (django-axes) ------------------------------------------

# /login/, /admin/login/ and /api/auth/login/ all authenticate through these backends, so one
# throttle guards every door (console/signin.py). After SLUICE_LOGIN_FAILURE_LIMIT failed
# attempts for one user name from one client address, that pair is locked out for
# SLUICE_LOGIN_COOLOFF_SECONDS after its last attempt: every attempt is refused with 429 without
# checking the password, so the answer never tells whether it was right. Locking the pair, not
# the user alone, keeps an attacker from locking a colleague out from everywhere; not the
# address alone, so colleagues behind one NAT do not lock each other out. The price: an attacker
# with many addresses gets 5 guesses per address; strong passwords remain the defence there.
# Operators unlock with `manage.py axes_reset_username <user>` (or axes_reset_ip_username,
# axes_reset for everything) or by deleting the access attempt in the admin.
AUTHENTICATION_BACKENDS = [
    "console.signin.SignInThrottle",
    # roles per team (console.models.Membership): what a user may do, and in which team;
    # before ModelBackend, so that the usual check costs one query (the user's memberships)
    "console.permissions.TeamRoles",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"  # shared by every web worker
AXES_FAILURE_LIMIT = env.login_failure_limit
AXES_COOLOFF_TIME = timedelta(seconds=env.login_cooloff_seconds)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# The client address as the audit trail sees it: REMOTE_ADDR, or the nearest X-Forwarded-For hop
# not in SLUICE_TRUSTED_PROXIES when the request comes through one of them. Never a header a
# client can set for itself, or every guess could claim a fresh address.
AXES_CLIENT_IP_CALLABLE = "console.audit.client_address"
AXES_LOCKOUT_CALLABLE = "console.signin.lockout_response"
# Successful sign-ins are in the audit trail (auth.login); no second log of them.
AXES_DISABLE_ACCESS_LOG = True
# A failure's record keeps the request's query and form, these masked: a refused single
# sign-on's callback carries the provider's one-time code and the sign-in's state.
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "code", "state"]

# -- single sign-on: OpenID Connect with the company's identity provider (console/oidc.py) -----

# On when SLUICE_OIDC_ISSUER, _CLIENT_ID and _CLIENT_SECRET are set: the login page offers
# "Sign in with <provider>", a first sign-in creates the user (linked to the provider's subject,
# never matched by name or e-mail), every sign-in hands the user's groups to the teams' rules
# (console.services.teams) and logging out ends the provider's session too. Local accounts keep
# signing in with their passwords. The provider's endpoints are read from its discovery
# document when first needed, so the console starts (and password sign-ins work) while the
# provider is away. The backend comes after the password one: it only answers the provider's
# callback, which the throttle above guards like every other door.
SLUICE_OIDC = env.oidc_enabled
SLUICE_OIDC_ISSUER = env.oidc_issuer or ""
SLUICE_OIDC_CLIENT_ID = env.oidc_client_id or ""
SLUICE_OIDC_CLIENT_SECRET = (
    env.oidc_client_secret.get_secret_value() if env.oidc_client_secret else ""
)
SLUICE_OIDC_SCOPES = env.oidc_scopes
SLUICE_OIDC_GROUPS_CLAIM = env.oidc_groups_claim
SLUICE_OIDC_PROVIDER_NAME = env.oidc_provider_name
SLUICE_OIDC_SIGN_ALGORITHM = env.oidc_sign_algorithm
SLUICE_OIDC_TIMEOUT = env.oidc_timeout_seconds
if SLUICE_OIDC:
    AUTHENTICATION_BACKENDS.append("console.oidc.SignOnBackend")

# -- HTTPS, cookies and security headers -------------------------------------------------------

# Always on, over http too: no framing, no MIME sniffing, no cross-origin referrer or opener.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env.session_age
# The console's JavaScript reads the CSRF cookie to send X-CSRFToken: not HttpOnly.
CSRF_COOKIE_SAMESITE = "Lax"

# SLUICE_HTTPS=true: the console is served over TLS, by itself or behind a TLS proxy. Cookies
# become Secure, plain http is redirected (except /healthz, which probes call over http
# inside the network) and browsers are told to use https only (HSTS). Off by default so that
# `make run` works on http://127.0.0.1:8000.
SLUICE_HTTPS = env.https
if SLUICE_HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    # Health checks and Prometheus scrape the container directly over the internal network.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SECURE_HSTS_SECONDS = env.hsts_seconds
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.hsts_include_subdomains
    SECURE_HSTS_PRELOAD = env.hsts_preload

# Behind a TLS-terminating proxy, the header it sets to the original scheme (e.g.
# X-Forwarded-Proto): a request is https when that header says "https". Set it only when the
# proxy always overwrites the header, or any client could claim https.
# ConsoleSettings refuses anything but a header name.
if env.proxy_ssl_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + env.proxy_ssl_header.upper().replace("-", "_"), "https")

# Content-Security-Policy (django-csp): scripts, styles, images, fonts and connections from this
# origin only; no plugins, no <base>, forms post here only, never framed. Inline <script> and
# <style> elements run only with the request's nonce (console/templates use
# {{ request.csp_nonce }}); style="" attributes are allowed (the admin's and DRF's templates use
# them; an attribute styles its own element and can load nothing img-src does not allow).
# Per-view relaxations, each with its reason: the console page (console.views.console_app) and
# the Swagger UI (console/urls.py). One inline event handler may run, by its hash: the "Log out"
# link of DRF's browsable API (rest_framework's optional_logout tag). The browsable API's
# inline <style> (syntax colours) is refused: its JSON shows uncoloured.
DRF_LOGOUT_HANDLER = 'document.getElementById("logoutForm").submit()'
_csp_directives: dict[str, object] = {
    "default-src": [SELF],
    "script-src": [SELF, NONCE],
    "script-src-attr": [UNSAFE_HASHES, _csp_hash(DRF_LOGOUT_HANDLER)],
    "style-src": [SELF, NONCE],
    "style-src-attr": [UNSAFE_INLINE],
    "img-src": [SELF, "data:"],
    "font-src": [SELF],
    "connect-src": [SELF],
    "object-src": [NONE],
    "base-uri": [NONE],
    "form-action": [SELF],
    "frame-ancestors": [NONE],
}
if SLUICE_OIDC:
    # Logging out after a single sign-on posts to /logout/, which sends the browser on to the
    # provider's end_session_endpoint (console.oidc.SignOutView): browsers hold a form's
    # redirects to form-action too. The provider's origin is its issuer's.
    _issuer = urlsplit(SLUICE_OIDC_ISSUER)
    _csp_directives["form-action"] = [SELF, f"{_issuer.scheme}://{_issuer.netloc}"]
if SLUICE_HTTPS:
    _csp_directives["upgrade-insecure-requests"] = True
if env.csp_report_uri:
    _csp_directives["report-uri"] = [env.csp_report_uri]
CONTENT_SECURITY_POLICY = {"DIRECTIVES": _csp_directives}

# -- request bodies ----------------------------------------------------------------------------

# The largest body Django reads (JSON, form): a 413 with a JSON error past it on the API
# (console.api.exceptions), Django's 400 page elsewhere. Ingestion has its own
# SLUICE_INGEST_MAX_REQUEST_BYTES. A channel spec is far smaller (pipelines.spec.channel limits it).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.max_request_bytes
# Objects and arrays in a JSON body nest at most this deep (console.api.parsers): deeper is a 400.
SLUICE_JSON_MAX_DEPTH = env.json_max_depth

# -- database ----------------------------------------------------------------------------------

_DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'sluice.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        env.database_url or _DEFAULT_DATABASE_URL,
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
        # a team's service account: Authorization: Bearer sls_… (console/api/teams)
        "console.api.teams.authentication.ServiceAccountAuthentication",
    ],
    # Authenticated, and the role each operation needs (console/permissions.py).
    "DEFAULT_PERMISSION_CLASSES": ["console.permissions.RolePermission"],
    # JSON with NUL or unpaired surrogates is a 400 here, not a database error (a 500).
    "DEFAULT_PARSER_CLASSES": [
        "console.api.parsers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "console.api.pagination.LimitOffsetPagination",
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
        "ShownStateEnum": "console.choices.ShownState",
        "TargetStateEnum": "console.choices.TargetState",
        "WorkerStateEnum": "console.choices.WorkerState",
        "SubjectTypeEnum": "console.choices.SubjectType",
        "PluginKindEnum": "console.choices.PluginKind",
        "LevelEnum": "console.selectors.health.LEVELS",
        "TailTextEncodingEnum": "console.api.channels.tail.TEXT_ENCODINGS",
        "TeamRoleEnum": "console.choices.TeamRole",
    },
}

# -- runtime and control loop ------------------------------------------------------------------

REDIS_URL = runtime_env.redis_url
SLUICE_RUNTIME = env.runtime
SLUICE_REDIS_PREFIX = runtime_env.redis_prefix
SLUICE_RECONCILE_INTERVAL = env.reconcile_interval
SLUICE_WORKER_SESSION_TIMEOUT = env.worker_session_timeout
SLUICE_RECONCILE_RESYNC_SECONDS = env.reconcile_resync_seconds
# The runtime's Kafka group (runtime_adapter.group): a worker that is its member is alive,
# whatever its heartbeats in Redis say. None: membership off (SLUICE_RUNTIME_MEMBERSHIP=false).
SLUICE_RUNTIME_GROUP = (
    GroupConfig.from_settings(runtime_env) if runtime_env.runtime_membership else None
)
SLUICE_RESTART_RESET_SECONDS = env.restart_reset_seconds
# GET /metrics (Prometheus) accepts "Authorization: Bearer <this>" besides a session with
# console.view_channel; unset, only sessions may scrape.
SLUICE_METRICS_TOKEN = env.metrics_token.get_secret_value() if env.metrics_token else ""
# The channels' history (console/services/history.py): a Prometheus-compatible query API.
SLUICE_HISTORY_URL = env.history_url
SLUICE_HISTORY_ALLOWED_HOSTS = env.history_allowed_hosts
SLUICE_HISTORY_TIMEOUT = env.history_timeout_seconds
# MirrorMaker 2's hand-over: offsets topics allowed besides mm2-offsets.<alias>.internal.
SLUICE_MM2_OFFSETS_TOPICS = env.mm2_offsets_topics

# -- HTTP ingestion (the http source): events are written to sluice.ingest.<channel> ----------

SLUICE_KAFKA_BOOTSTRAP = runtime_env.kafka_bootstrap
SLUICE_INGEST_TOPIC_PARTITIONS = env.ingest_topic_partitions
# Every topic the console creates (ingest, redrive) is replicated as the runtime's are.
SLUICE_TOPIC_REPLICATION_FACTOR = runtime_env.topic_replication_factor
SLUICE_TOPIC_MIN_INSYNC_REPLICAS = runtime_env.topic_min_insync_replicas
SLUICE_INGEST_REPLICATION_FACTOR = env.ingest_replication_factor or SLUICE_TOPIC_REPLICATION_FACTOR
SLUICE_INGEST_MAX_REQUEST_BYTES = env.ingest_max_request_bytes
SLUICE_INGEST_MAX_BATCH = env.ingest_max_batch
SLUICE_INGEST_DELIVERY_TIMEOUT = env.ingest_delivery_timeout
# The largest event any channel accepts (its CloudEvents JSON; EventBridge's 256 KiB); a
# channel's http source may set a lower max_event_bytes.
SLUICE_INGEST_MAX_EVENT_BYTES = env.ingest_max_event_bytes
# Events/s a channel accepts when Channel.ingest_rate_limit is empty, with
# bursts of SLUICE_INGEST_BURST_SECONDS worth of its rate; a token bucket in Redis.
SLUICE_INGEST_RATE_LIMIT = env.ingest_rate_limit
SLUICE_INGEST_BURST_SECONDS = env.ingest_burst_seconds

CELERY_BROKER_URL = env.celery_broker_url or REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE = beat_schedule(SLUICE_RECONCILE_INTERVAL)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# -- logging: everything to stdout -------------------------------------------------------------

LOG_LEVEL = runtime_env.log_level
# SLUICE_LOG_FORMAT=text|json; records carry the process role and, when known, the channel,
# connector and worker ids (runtime_adapter/logs.py, shared with the runtime processes).
SLUICE_LOG_FORMAT = runtime_env.log_format
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "sluice": logs.formatter_config(SLUICE_LOG_FORMAT),
    },
    "filters": {
        "log_context": logs.filter_config(logs.process_role()),
    },
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": "sluice",
            "filters": ["log_context"],
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
        # django-axes logs every failed sign-in (WARNING), with the user and address masked:
        # the audit trail records each one (auth.login_failed, auth.lockout) with both.
        "axes": {"level": "ERROR"},
    },
}
