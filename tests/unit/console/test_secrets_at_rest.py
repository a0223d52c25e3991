"""Secrets at rest: revisions hold encrypted secrets, every read path still works, and
what may quote a secret (lifecycle reasons, traces, log lines) masks it."""

from __future__ import annotations

import json
import logging

import pytest
from cryptography.fernet import Fernet
from django.core.checks import run_checks
from django.core.management import call_command

from console import services
from console.crypto import decrypt_spec
from console.models import AuditEvent, Channel, LifecycleEvent, Revision
from console.services.lifecycle import record_channel
from pipelines.spec.secrets import (
    DEVELOPMENT_SECRET_KEY,
    ENCRYPTED_PREFIX,
    SECRET_MARKER,
    SecretMaskingFilter,
)
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.failures import decrypted_spec
from runtime_adapter.host.hosted import HostedConnector
from runtime_adapter.host.worker import _secrets_of
from runtime_adapter.states import State
from tests.support.reports import ReportingStore
from tests.unit.console import secret_plugins
from tests.unit.console.secret_plugins import SECRETS, secret_spec

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


@pytest.fixture(autouse=True)
def _secret_plugins(monkeypatch):
    secret_plugins.install(monkeypatch)


def raw_specs() -> str:
    """Every stored revision spec, as the database holds it."""
    return json.dumps(list(Revision.objects.values_list("spec", flat=True)))


def create(api, name="orders"):
    body = {"name": name, "description": "", "spec": secret_spec()}
    response = api.post(CHANNELS, body, format="json")
    assert response.status_code == 201, response.json()
    return response


def latest(name="orders") -> Revision:
    return Channel.objects.get(name=name).latest_revision_obj()


def test_the_database_never_holds_a_plaintext_secret(api):
    create(api)

    raw = raw_specs()
    assert [s for s in SECRETS if s in raw] == []
    assert raw.count(ENCRYPTED_PREFIX) == len(SECRETS)
    assert decrypt_spec(latest().spec)["sink"]["config"]["sasl"]["password"] == "DELTA-012"


def test_get_shows_markers_and_put_with_markers_keeps_the_secrets(api):
    create(api)
    before = decrypt_spec(latest().spec)
    read = api.get(f"{CHANNELS}orders/").json()
    assert read["spec"]["sink"]["config"]["auth_header"] == SECRET_MARKER

    response = api.put(
        f"{CHANNELS}orders/",
        {"name": "orders", "description": "changed", "spec": read["spec"]},
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert response.json()["revision"] == 1  # same spec: no new revision
    assert decrypt_spec(latest().spec) == before


def test_a_changed_secret_is_saved_encrypted_in_a_new_revision(api):
    create(api)
    spec = api.get(f"{CHANNELS}orders/").json()["spec"]
    spec["sink"]["config"]["auth_header"] = "Bearer GOLF-678"

    response = api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["revision"] == 2
    assert "GOLF-678" not in raw_specs()
    plain = decrypt_spec(latest().spec)["sink"]["config"]
    assert (plain["auth_header"], plain["headers"]) == (
        "Bearer GOLF-678",
        {"X-Api-Key": "CHARLIE-789"},
    )


def test_a_secret_sent_in_the_stored_form_is_a_400_at_its_path(api):
    spec = secret_spec()
    spec["sink"]["config"]["auth_header"] = ENCRYPTED_PREFIX + "gAAAA-forged"

    response = api.post(CHANNELS, {"name": "x", "spec": spec}, format="json")

    assert response.status_code == 400
    assert "spec.sink.config.auth_header" in json.dumps(response.json())


def test_revisions_saved_in_plaintext_still_read_and_the_command_encrypts_them(api):
    create(api)
    revision = latest()
    Revision.objects.filter(pk=revision.pk).update(spec=decrypt_spec(revision.spec))
    assert "DELTA-012" in raw_specs()  # as saved before encryption at rest

    read = api.get(f"{CHANNELS}orders/").json()
    assert read["spec"]["sink"]["config"]["sasl"]["password"] == SECRET_MARKER
    kept = api.put(f"{CHANNELS}orders/", {"name": "orders", "spec": read["spec"]}, format="json")
    assert kept.json()["revision"] == 1

    call_command("encrypt_secrets")

    assert [s for s in SECRETS if s in raw_specs()] == []
    assert decrypt_spec(latest().spec)["sink"]["config"]["sasl"]["password"] == "DELTA-012"
    once = raw_specs()
    call_command("encrypt_secrets")  # idempotent
    assert raw_specs() == once
    assert AuditEvent.objects.filter(action="secrets.encrypt", via="cli").count() == 1


def test_rotation_reencrypts_with_the_new_key(api, settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SLUICE_SECRETS_KEY = old
    create(api)
    settings.SLUICE_SECRETS_KEY = f"{new},{old}"

    call_command("encrypt_secrets", "--rotate")

    settings.SLUICE_SECRETS_KEY = new  # the old key can go
    assert decrypt_spec(latest().spec)["transforms"][1]["config"]["api_key"] == "key-ALPHA-123"


def test_the_runtime_gets_encrypted_secrets_and_the_driver_decrypts_them(api, runtime):
    create(api)
    api.post(f"{CHANNELS}orders/start")

    (call,) = runtime.calls_named("deploy")
    deployment = call[0]
    assert [s for s in SECRETS if s in json.dumps(deployment.spec)] == []
    plain, secrets = decrypted_spec(deployment.spec)  # as the driver, from its environment
    assert plain["sink"]["config"]["headers"] == {"X-Api-Key": "CHARLIE-789"}
    assert set(secrets) == set(SECRETS)
    assert set(_secrets_of(deployment)) == set(SECRETS)  # the worker, masking a log tail


def test_console_and_runtime_derive_the_same_development_key():
    from console.settings import DEV_SECRET_KEY

    assert DEVELOPMENT_SECRET_KEY == DEV_SECRET_KEY


# -- masking -------------------------------------------------------------------------------


def test_a_lifecycle_reason_quoting_a_secret_is_masked(api):
    create(api)
    channel = Channel.objects.get(name="orders")

    event = record_channel(
        channel,
        "user:alice",
        from_state="STOPPED",
        to_state="STOPPED",
        reason="could not reach http://x with key-ALPHA-123",
    )

    event.refresh_from_db()
    assert event.reason == "could not reach http://x with ***"


def test_a_failed_connector_trace_and_its_reason_never_quote_a_secret(api, runtime):
    create(api)
    api.post(f"{CHANNELS}orders/start")
    runtime.heartbeat("w1", at=1_700_000_000.0)
    trace = "java.lang.SecurityException: login svc/DELTA-012 refused\n\tat x.y(Z.java:1)"
    runtime.report("orders", State.FAILED, "w1", trace=trace, updated_at=1_700_000_000.0)

    services.reconcile(runtime=runtime, now=1_700_000_000.0)

    status = api.get(f"{CHANNELS}orders/status").json()
    lifecycle = api.get(f"{CHANNELS}orders/lifecycle/").content.decode()
    assert "DELTA-012" not in status["trace"] and "DELTA-012" not in lifecycle
    assert "DELTA-012" not in "".join(LifecycleEvent.objects.values_list("reason", flat=True))


@pytest.fixture
def root_filters():
    """Remove the masking filter the driver installs on the root handlers afterwards."""
    yield
    for handler in logging.getLogger().handlers:
        for found in [f for f in handler.filters if isinstance(f, SecretMaskingFilter)]:
            handler.removeFilter(found)


def test_the_driver_masks_its_secrets_in_the_traces_it_reports(api, runtime, root_filters):
    create(api)
    api.post(f"{CHANNELS}orders/start")
    (call,) = runtime.calls_named("deploy")
    store = ReportingStore()
    driver = HostedConnector(
        store, RuntimeConfig.from_env(), connector_id="orders", worker_id="w1", generation=0
    )

    driver.plain_spec(call[0])
    driver.report(State.FAILED, "Traceback …\nValueError: token ECHO-345 expired")

    assert store.reported[-1].trace == "Traceback …\nValueError: token *** expired"


# -- system checks ---------------------------------------------------------------------------


def test_an_unset_secrets_key_is_a_deploy_warning_only_without_debug(settings):
    settings.SLUICE_SECRETS_KEY = ""
    settings.DEBUG = False
    assert "console.W003" in {m.id for m in run_checks(include_deployment_checks=True)}
    assert "console.W003" not in {m.id for m in run_checks()}

    settings.SLUICE_SECRETS_KEY = Fernet.generate_key().decode()
    assert "console.W003" not in {m.id for m in run_checks(include_deployment_checks=True)}


def test_a_malformed_secrets_key_is_an_error(settings):
    settings.SLUICE_SECRETS_KEY = "not-a-fernet-key"

    assert "console.E001" in {m.id for m in run_checks()}


def test_a_secret_no_configured_key_opens_is_a_503_naming_the_key(api, settings):
    settings.SLUICE_SECRETS_KEY = Fernet.generate_key().decode()
    create(api)
    read = api.get(f"{CHANNELS}orders/").json()
    settings.SLUICE_SECRETS_KEY = Fernet.generate_key().decode()  # the old key was dropped

    response = api.put(
        f"{CHANNELS}orders/",
        {"name": "orders", "description": "changed", "spec": read["spec"]},
        format="json",
    )

    assert response.status_code == 503, response.json()
    assert "SLUICE_SECRETS_KEY" in response.json()["detail"]
    assert Channel.objects.get(name="orders").revisions.count() == 1
