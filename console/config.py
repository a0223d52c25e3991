"""The console's own settings, read from the environment (12-factor) with embedded defaults.

:class:`ConsoleSettings` holds the variables only the console reads (the web server, Celery and
the control loop); those it shares with the runtime (Redis, the data folder, logging) are
``runtime_adapter.config.RuntimeSettings``. Both read the environment the same way
(:class:`runtime_adapter.config.SluiceSettings`). ``console/settings.py`` turns them into
Django's settings; nothing here imports Django, so the manual's configuration reference is
rendered from this class without a Django project.
"""

from __future__ import annotations

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import SettingsConfigDict

from runtime_adapter.config import CommaList, SluiceSettings


class ConsoleSettings(SluiceSettings):
    """The console's settings: web server and security, sign-in, request limits, the control
    loop, metrics and HTTP ingestion. Every console process (web, Celery worker, Celery beat,
    `manage.py`) reads them at start."""

    model_config = SettingsConfigDict(title="Console settings")

    # The runtime derives the same keys from the raw variables (pipelines.spec.secrets).
    as_given = frozenset({"secret_key", "secrets_key"})

    # -- web server and security ---------------------------------------------------------------

    secret_key: SecretStr | None = Field(
        None,
        description="Django's secret key (sessions, CSRF, password reset tokens); set it "
        "anywhere but your laptop. Unset: an insecure development key, which the deployment "
        "checks (`manage.py check --deploy`) report as `console.W001`.",
    )
    secrets_key: SecretStr | None = Field(
        None,
        description="Fernet keys (comma-separated; the first encrypts, all decrypt) for the "
        "secrets in stage configs; every console process and runtime worker needs the same. "
        "Unset: derived from the secret key (reported as `console.W003`).",
    )
    debug: bool = Field(False, description="Django's debug mode; never in production.")
    allowed_hosts: CommaList = Field(
        ["127.0.0.1", "localhost"],
        description="Comma-separated host names the web server answers to.",
    )
    csrf_trusted_origins: CommaList = Field(
        [],
        description="Comma-separated origins trusted for CSRF when the console sits behind a "
        "proxy, e.g. `https://sluice.example.com`.",
    )
    trusted_proxies: CommaList = Field(
        [],
        description="Comma-separated proxy addresses or networks (`10.0.0.0/8`) whose "
        "`X-Forwarded-For` the audit trail and sign-in throttling trust for the client "
        "address; `*`: the peer is a proxy whatever its address.",
    )
    https: bool = Field(
        False,
        description="`true` when the console is served over TLS, by itself or behind a proxy: "
        "Secure cookies, plain http redirected to https (but `/healthz` and `/metrics`), HSTS.",
    )
    hsts_seconds: int = Field(
        365 * 24 * 3600,
        ge=1,
        description="With `SLUICE_HTTPS`: how long browsers keep to https only "
        "(`Strict-Transport-Security: max-age`).",
    )
    hsts_include_subdomains: bool = Field(
        True, description="With `SLUICE_HTTPS`: the HSTS header's `includeSubDomains`."
    )
    hsts_preload: bool = Field(
        True, description="With `SLUICE_HTTPS`: the HSTS header's `preload`."
    )
    proxy_ssl_header: str | None = Field(
        None,
        description="Behind a TLS-terminating proxy, the header it sets to the original "
        "scheme, e.g. `X-Forwarded-Proto`: a request is https when that header says `https`. "
        "Set it only when the proxy always overwrites the header.",
    )
    csp_report_uri: str | None = Field(
        None,
        description="Where browsers report Content-Security-Policy violations (`report-uri`).",
    )
    session_age: int = Field(12 * 3600, ge=1, description="Seconds a console sign-in lasts.")

    # -- signing in and request bodies --------------------------------------------------------

    login_failure_limit: int = Field(
        5,
        ge=1,
        description="Failed sign-ins of one user name from one address before that pair is "
        "locked out (`manage.py axes_reset_username <user>` unlocks).",
    )
    login_cooloff_seconds: int = Field(
        15 * 60,
        ge=1,
        description="How long a lockout lasts after the last failed attempt, in seconds.",
    )

    # -- single sign-on (OpenID Connect, console/oidc.py) -----------------------------------

    oidc_client_id: str | None = Field(
        None, description="The console's client id at the provider (with `SLUICE_OIDC_ISSUER`)."
    )
    oidc_client_secret: SecretStr | None = Field(
        None, description="The console's client secret at the provider (a confidential client)."
    )
    oidc_issuer: str | None = Field(
        None,
        # validated when unset too: it checks the client id and secret come with it
        validate_default=True,
        description="The OpenID Connect provider's issuer URL, e.g. "
        "`https://keycloak.example.com/realms/acme`; its endpoints are read from "
        "`<issuer>/.well-known/openid-configuration`. With the client id and secret it turns on "
        "single sign-on (a *Sign in with …* button; local accounts keep working); unset: off. "
        "https, but on loopback.",
    )
    oidc_scopes: str = Field(
        "openid email profile",
        description="The scopes asked for, space-separated; `openid` is required. Add the scope "
        "that brings the groups claim if your provider needs one.",
    )
    oidc_groups_claim: str = Field(
        "groups",
        description="The claim (ID token or userinfo) that lists the user's groups: a list of "
        "names, handed to the teams' sign-in rules at every sign-in. Missing: no groups.",
    )
    oidc_provider_name: str = Field(
        "single sign-on",
        max_length=60,
        description="The provider's name on the login page's button: *Sign in with* this name.",
    )
    oidc_sign_algorithm: str = Field(
        "RS256",
        pattern=r"^(RS|ES)(256|384|512)$",
        description="The algorithm the provider signs ID tokens with (its keys are read from "
        "the discovery's `jwks_uri`): RS256, RS384, RS512, ES256, ES384 or ES512.",
    )
    oidc_timeout_seconds: float = Field(
        10.0, gt=0, le=60, description="How long a call to the provider may take."
    )

    max_request_bytes: int = Field(
        1024 * 1024,
        ge=1,
        description="The largest request body (JSON or form) the console reads; `413` past it. "
        "Ingestion has its own `SLUICE_INGEST_MAX_REQUEST_BYTES`.",
    )
    json_max_depth: int = Field(
        64,
        ge=1,
        description="The deepest nesting of objects and arrays in a JSON body; `400` past it.",
    )

    # -- database, broker and the control loop ------------------------------------------------

    database_url: str | None = Field(
        None,
        validation_alias="DATABASE_URL",
        description="The console's database, e.g. `postgres://user:pass@host:5432/sluice`; "
        "unset: SQLite in `sluice.sqlite3` under `SLUICE_VAR_DIR`.",
    )
    celery_broker_url: str | None = Field(
        None,
        validation_alias="CELERY_BROKER_URL",
        description="Celery's broker; unset: `REDIS_URL`.",
    )
    runtime: str = Field(
        "runtime_adapter.spark.SparkRuntime",
        description="The runtime adapter class (`module.Class`) the console drives.",
    )
    reconcile_interval: float = Field(
        1.0,
        description="Seconds between control-loop passes (a pass with nothing new writes nothing).",
    )
    reconcile_resync_seconds: float = Field(
        30.0,
        gt=0,
        description="When the control loop follows the runtime's status topic "
        "(`SLUICE_RUNTIME_STATUS_FEED`): a pass looks only at the channels whose status changed "
        "or that time or a worker's death acts on, and at one slice of all of them, so that "
        "each channel is looked at within this many seconds (a rolling resync).",
    )
    worker_session_timeout: float = Field(
        10.0,
        description="Seconds the control loop sees no new heartbeat of a runtime worker (timed "
        "with the console's clock, never the worker host's) before it is declared dead and its "
        "channels are assigned to others; time the runtime could not be read does not count.",
    )
    restart_reset_seconds: float = Field(
        600.0,
        description="Seconds a connector must stay `RUNNING` before its restart policy's "
        "attempt count resets.",
    )
    metrics_token: SecretStr | None = Field(
        None,
        description="Bearer token Prometheus sends to read `/metrics`; unset, only signed-in "
        "users with `console.view_channel` may.",
    )

    # -- HTTP ingestion (the http source) -----------------------------------------------------

    ingest_topic_partitions: int = Field(3, ge=1, description="Partitions of a new ingest topic.")
    ingest_replication_factor: int | None = Field(
        None,
        ge=1,
        description="Replication factor of a new ingest topic; unset: "
        "`SLUICE_TOPIC_REPLICATION_FACTOR` (its `min.insync.replicas` is always "
        "`SLUICE_TOPIC_MIN_INSYNC_REPLICAS`).",
    )
    ingest_max_request_bytes: int = Field(
        1024 * 1024,
        ge=1,
        description="The largest body an ingestion request may have; `413` past it.",
    )
    ingest_max_batch: int = Field(
        500, ge=1, description="The most events in one ingestion request; `413` past it."
    )
    ingest_delivery_timeout: float = Field(
        10.0,
        description="Seconds an ingestion request waits for Kafka to confirm its events; "
        "`503` past it.",
    )
    ingest_max_event_bytes: int = Field(
        256 * 1024,
        ge=1,
        description="The largest event (its CloudEvents JSON) any channel accepts; a channel's "
        "http source may set a lower `max_event_bytes`.",
    )
    ingest_rate_limit: int = Field(
        1000,
        ge=1,
        description="Events per second a channel accepts over HTTP when its own "
        "`ingest_rate_limit` is empty; `429` past it.",
    )
    ingest_burst_seconds: float = Field(
        2.0,
        description="The rate limit's burst, in seconds' worth of the channel's rate.",
    )

    # -- history (the time-series store of the channels' metrics) ------------------------------

    history_url: str = Field(
        "http://127.0.0.1:8428",
        description="The Prometheus-compatible query API (VictoriaMetrics, which `make run` "
        "starts as `scripts/victoriametrics.sh`) that keeps the channels' history; the console "
        "queries it server-side only. Its host must be in `history_allowed_hosts`.",
    )
    history_allowed_hosts: CommaList = Field(
        default_factory=lambda: ["127.0.0.1", "localhost", "::1"],
        description="Hosts `history_url` may name (comma-separated); add your store's host "
        "when it runs elsewhere.",
    )
    mm2_offsets_topics: CommaList = Field(
        default_factory=list,
        description="Offsets topics of MirrorMaker 2 (comma-separated names) the hand-over "
        "endpoints may read and write besides MM2's own `mm2-offsets.<alias>.internal`: for an "
        "MM2 deployed with another `offset.storage.topic`.",
    )
    history_timeout_seconds: float = Field(
        5.0, gt=0, le=60, description="How long a history query may take before a 503."
    )

    @field_validator("history_url")
    @classmethod
    def _history_url(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL such as http://127.0.0.1:8428")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError("must carry no credentials, query or fragment")
        return value.rstrip("/")

    @field_validator("oidc_issuer")
    @classmethod
    def _issuer(cls, value: str | None, info: ValidationInfo) -> str | None:
        import ipaddress
        from urllib.parse import urlsplit

        client = [info.data.get("oidc_client_id"), info.data.get("oidc_client_secret")]
        if value is None:
            if any(part is not None for part in client):
                raise ValueError("must be set with SLUICE_OIDC_CLIENT_ID and _SECRET")
            return None
        if not all(part is not None for part in client):
            raise ValueError("needs SLUICE_OIDC_CLIENT_ID and SLUICE_OIDC_CLIENT_SECRET too")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL such as https://sso.example.com/realms/acme")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError("must carry no credentials, query or fragment")
        if parts.scheme == "http":
            try:
                loopback = ipaddress.ip_address(parts.hostname).is_loopback
            except ValueError:
                loopback = parts.hostname == "localhost"
            if not loopback:
                raise ValueError("must be https (plain http only on loopback, for tests)")
        return value.rstrip("/")

    @field_validator("oidc_scopes")
    @classmethod
    def _scopes(cls, value: str) -> str:
        scopes = value.split()
        if "openid" not in scopes:
            raise ValueError("must include openid")
        return " ".join(scopes)

    @property
    def oidc_enabled(self) -> bool:
        """Single sign-on is on (the issuer's validator makes sure the client id and secret
        are set with it)."""
        return self.oidc_issuer is not None

    @field_validator("proxy_ssl_header")
    @classmethod
    def _header_name(cls, value: str | None) -> str | None:
        if value is not None and not all(part.isalnum() for part in value.split("-")):
            raise ValueError("must be a header name such as X-Forwarded-Proto")
        return value
