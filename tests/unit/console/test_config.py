"""ConsoleSettings: the console's own environment variables (console/settings.py turns them
into Django's settings; tests/unit/console/test_settings.py checks that end to end)."""

from __future__ import annotations

import pytest

from console.config import ConsoleSettings
from runtime_adapter.config import RuntimeSettings, SettingsError, environment_names
from tests.support.settings_env import settings_env


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    """No console variable set; call ``env(NAME=value, …)`` to set some."""
    return settings_env(monkeypatch, ConsoleSettings)


def test_defaults(env):
    settings = ConsoleSettings.load()

    assert settings.secret_key is None and settings.secrets_key is None
    assert settings.debug is False
    assert settings.allowed_hosts == ["127.0.0.1", "localhost"]
    assert settings.trusted_proxies == settings.csrf_trusted_origins == []
    assert (settings.database_url, settings.celery_broker_url) == (None, None)
    assert settings.runtime == "runtime_adapter.spark.SparkRuntime"
    assert (settings.reconcile_interval, settings.worker_session_timeout) == (1.0, 10.0)
    assert (settings.login_failure_limit, settings.login_cooloff_seconds) == (5, 900)
    assert (settings.max_request_bytes, settings.json_max_depth) == (1024 * 1024, 64)
    assert (settings.https, settings.hsts_seconds, settings.hsts_preload) == (
        False,
        31_536_000,
        True,
    )
    assert settings.session_age == 43_200
    assert RuntimeSettings.load().kafka_bootstrap == "127.0.0.1:9092"  # shared: the runtime's
    assert (settings.ingest_max_batch, settings.ingest_max_event_bytes) == (500, 262_144)
    assert (settings.ingest_rate_limit, settings.ingest_burst_seconds) == (1000, 2.0)


def test_lists_are_comma_separated_not_json(env):
    env(
        SLUICE_ALLOWED_HOSTS="console.example.com, 10.0.0.1,,",
        SLUICE_TRUSTED_PROXIES="*",
        SLUICE_CSRF_TRUSTED_ORIGINS="https://a.example.com,https://b.example.com",
    )
    settings = ConsoleSettings.load()

    assert settings.allowed_hosts == ["console.example.com", "10.0.0.1"]
    assert settings.trusted_proxies == ["*"]
    assert settings.csrf_trusted_origins == ["https://a.example.com", "https://b.example.com"]


def test_secrets_are_never_shown(env):
    env(SLUICE_SECRET_KEY="k" * 50, SLUICE_METRICS_TOKEN=" scrape-me ")
    settings = ConsoleSettings.load()

    assert settings.secret_key is not None and settings.metrics_token is not None
    assert settings.secret_key.get_secret_value() == "k" * 50
    assert settings.metrics_token.get_secret_value() == "scrape-me"  # surrounding blanks dropped
    assert "k" * 50 not in repr(settings) and "scrape-me" not in repr(settings)


def test_keys_are_taken_as_given(env):
    """The runtime derives the stage-secrets key from the raw variable: no strip here."""
    env(SLUICE_SECRET_KEY=" key with blanks ", SLUICE_SECRETS_KEY="k1 ,k2")
    settings = ConsoleSettings.load()

    assert settings.secret_key is not None and settings.secrets_key is not None
    assert settings.secret_key.get_secret_value() == " key with blanks "
    assert settings.secrets_key.get_secret_value() == "k1 ,k2"


def test_blanks_around_other_values_are_dropped(env):
    env(SLUICE_DEBUG=" true ", SLUICE_SESSION_AGE=" 60 ", SLUICE_RECONCILE_INTERVAL=" 2.5")
    settings = ConsoleSettings.load()

    assert (settings.debug, settings.session_age, settings.reconcile_interval) == (True, 60, 2.5)


def test_variables_without_the_prefix(env):
    env(DATABASE_URL="postgres://db/sluice", CELERY_BROKER_URL="redis://broker:6379/2")
    settings = ConsoleSettings.load()

    assert settings.database_url == "postgres://db/sluice"
    assert settings.celery_broker_url == "redis://broker:6379/2"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "SLUICE_PROXY_SSL_HEADER",
            "X-Forwarded-Proto: https",
            "SLUICE_PROXY_SSL_HEADER must be a header name such as X-Forwarded-Proto, "
            "got 'X-Forwarded-Proto: https'",
        ),
        ("SLUICE_HTTPS", "si", "SLUICE_HTTPS must be true or false, got 'si'"),
        ("SLUICE_SESSION_AGE", "0", "SLUICE_SESSION_AGE must be at least 1, got '0'"),
        (
            "SLUICE_INGEST_MAX_BATCH",
            "1e3",
            "SLUICE_INGEST_MAX_BATCH must be a whole number, got '1e3'",
        ),
        (
            "SLUICE_RECONCILE_INTERVAL",
            "soon",
            "SLUICE_RECONCILE_INTERVAL must be a number, got 'soon'",
        ),
    ],
)
def test_a_bad_value_is_refused_with_its_variable_named(env, name, value, message):
    env(**{name: value})
    with pytest.raises(SettingsError) as refused:
        ConsoleSettings.load()
    assert str(refused.value) == message


def test_a_proxy_header_name_is_accepted(env):
    env(SLUICE_PROXY_SSL_HEADER="X-Forwarded-Proto")
    assert ConsoleSettings.load().proxy_ssl_header == "X-Forwarded-Proto"


def test_every_variable_is_read_once_and_described():
    """No variable is both the console's and the runtime's: the console reads the shared ones
    (Redis, data folder, logging) from RuntimeSettings."""
    console = [
        v for n in ConsoleSettings.model_fields for v in environment_names(ConsoleSettings, n)
    ]
    runtime = [
        v for n in RuntimeSettings.model_fields for v in environment_names(RuntimeSettings, n)
    ]
    assert not set(console) & set(runtime)
    assert len(console) == len(set(console))
    for name, field in ConsoleSettings.model_fields.items():
        assert field.description, name
