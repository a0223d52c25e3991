"""Secrets are write-only: the console stores and deploys them and never shows or logs them."""

from __future__ import annotations

import json
import logging

import pytest

from console import services
from console.crypto import decrypt_spec
from console.models import Channel, Connector, LifecycleEvent, Revision
from pipelines.spec.secrets import SECRET_MARKER, decrypt_secrets, secret_box_from_env
from runtime_adapter.states import State
from tests.unit.console import secret_plugins
from tests.unit.console.secret_plugins import SECRETS, secret_spec

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
NOW = 1_700_000_000.0


@pytest.fixture(autouse=True)
def _secret_plugins(monkeypatch):
    secret_plugins.install(monkeypatch)


@pytest.fixture(autouse=True)
def no_secret_in_logs(caplog):
    """Whatever a test does, no secret reaches a log record."""
    caplog.set_level(logging.DEBUG)
    yield
    leaked = [r.getMessage() for r in caplog.records if any(s in r.getMessage() for s in SECRETS)]
    assert leaked == []


def assert_no_secret(response) -> None:
    text = response.content.decode()
    assert [secret for secret in SECRETS if secret in text] == []


def stored_spec(name: str = "orders") -> dict:
    """The latest revision's spec, its secrets decrypted (they are stored encrypted)."""
    return decrypt_spec(Channel.objects.get(name=name).latest_revision_obj().spec)


def create(api, spec=None, name="orders"):
    body = {"name": name, "description": "", "spec": spec or secret_spec()}
    return api.post(CHANNELS, body, format="json")


def test_create_stores_the_secrets_and_answers_with_markers(api):
    response = create(api)

    assert response.status_code == 201, response.json()
    assert_no_secret(response)
    sink = response.json()["spec"]["sink"]["config"]
    assert sink["auth_header"] == SECRET_MARKER
    assert sink["sasl"] == {"username": "svc", "password": SECRET_MARKER}
    assert stored_spec()["sink"]["config"]["auth_header"] == "Bearer BRAVO-456"


def test_list_and_detail_show_markers_only(api):
    create(api)

    listing = api.get(CHANNELS)
    detail = api.get(f"{CHANNELS}orders/")

    assert_no_secret(listing)
    assert_no_secret(detail)
    assert detail.json()["spec"]["transforms"][1]["config"]["api_key"] == SECRET_MARKER


def test_the_runtime_gets_the_real_secrets_encrypted(api, runtime):
    create(api)

    api.post(f"{CHANNELS}orders/start")

    (deployment,) = runtime.calls_named("deploy")
    assert "CHARLIE-789" not in json.dumps(deployment[0].spec)  # Redis never holds it
    plain = decrypt_secrets(deployment[0].spec, secret_box_from_env().decrypt)  # as the driver
    assert plain["sink"]["config"]["headers"] == {"X-Api-Key": "CHARLIE-789"}


def test_get_then_put_round_trips_without_a_new_revision(api):
    create(api)
    before = stored_spec()
    read = api.get(f"{CHANNELS}orders/").json()

    response = api.put(
        f"{CHANNELS}orders/",
        {"name": "orders", "description": "", "spec": read["spec"]},
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert_no_secret(response)
    assert response.json()["revision"] == 1
    assert stored_spec() == before


def test_patch_keeps_secrets_sent_as_markers_or_left_out(api):
    create(api)
    spec = api.get(f"{CHANNELS}orders/").json()["spec"]
    spec["sink"]["config"]["url"] = "http://hooks.example/v2"
    del spec["sink"]["config"]["auth_header"]
    del spec["transforms"][1]["config"]["api_key"]

    response = api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["revision"] == 2
    saved = stored_spec()
    assert saved["sink"]["config"]["url"] == "http://hooks.example/v2"
    assert saved["sink"]["config"]["auth_header"] == "Bearer BRAVO-456"
    assert saved["sink"]["config"]["sasl"]["password"] == "DELTA-012"
    assert saved["transforms"][1]["config"]["api_key"] == "key-ALPHA-123"


def test_patch_replaces_and_clears_secrets(api):
    create(api)
    spec = api.get(f"{CHANNELS}orders/").json()["spec"]
    spec["sink"]["config"]["auth_header"] = "Bearer GOLF-678"
    spec["sink"]["config"]["sasl"] = None

    response = api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    assert response.status_code == 200
    assert "GOLF-678" not in response.content.decode()
    saved = stored_spec()["sink"]["config"]
    assert (saved["auth_header"], saved["sasl"]) == ("Bearer GOLF-678", None)


def test_a_marker_on_create_is_a_400_at_its_path(api):
    spec = secret_spec()
    spec["sink"]["config"]["auth_header"] = SECRET_MARKER

    response = create(api, spec)

    assert response.status_code == 400
    assert "spec.sink.config.auth_header" in response.json()
    assert not Channel.objects.exists()


def test_a_marker_for_a_stage_that_changed_type_is_a_400(api):
    create(api)
    spec = api.get(f"{CHANNELS}orders/").json()["spec"]
    spec["transforms"].reverse()

    response = api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    assert response.status_code == 400
    assert "spec.transforms[0].config.api_key" in response.json()
    assert Revision.objects.count() == 1


def test_validation_messages_never_quote_a_secret(api):
    spec = secret_spec()
    spec["transforms"][1]["config"]["api_key"] = "HOTEL-901"  # invalid: no key- prefix

    response = create(api, spec)

    assert response.status_code == 400
    (message,) = response.json()["spec.transforms[1].config.api_key"]
    assert "HOTEL-901" not in message
    assert SECRET_MARKER in message


def test_the_validate_endpoint_redacts_the_config_and_its_errors(api):
    config = secret_spec()["sink"]["config"]

    valid = api.post("/api/v1/plugins/sink/webhook/validate", {"config": config}, format="json")
    invalid = api.post(
        "/api/v1/plugins/enrich/validate",
        {"config": {"endpoint": "e", "api_key": "HOTEL-901"}},
        format="json",
    )

    assert valid.status_code == 200
    assert_no_secret(valid)
    assert valid.json()["config"]["headers"] == {"X-Api-Key": SECRET_MARKER}
    assert invalid.status_code == 400
    assert "HOTEL-901" not in invalid.content.decode()


def test_the_catalogue_marks_secret_fields_write_only(api):
    schema = api.get("/api/v1/plugins/sink/webhook/").json()["config_schema"]

    header = schema["properties"]["auth_header"]["anyOf"][0]
    assert (header["writeOnly"], header["format"]) == (True, "password")


def test_a_trace_quoting_a_secret_is_scrubbed_from_status_and_lifecycle(api, runtime):
    create(api)
    api.post(f"{CHANNELS}orders/start")
    runtime.heartbeat("w1", at=NOW)
    trace = "org.apache.kafka.AuthException: bad credentials svc:DELTA-012 (Bearer BRAVO-456)"
    runtime.report("orders", State.FAILED, "w1", trace=trace, updated_at=NOW)

    services.reconcile(runtime=runtime, now=NOW)

    expected = (
        f"org.apache.kafka.AuthException: bad credentials svc:{SECRET_MARKER} ({SECRET_MARKER})"
    )
    assert Connector.objects.get().trace == expected
    assert LifecycleEvent.objects.filter(reason=expected).exists()
    status = api.get(f"{CHANNELS}orders/status")
    lifecycle = api.get(f"{CHANNELS}orders/lifecycle/")
    assert status.json()["trace"] == expected
    assert_no_secret(status)
    assert_no_secret(lifecycle)


def test_a_runtime_reason_quoting_a_secret_is_scrubbed_from_status_and_lifecycle(api, runtime):
    create(api)
    api.post(f"{CHANNELS}orders/start")
    runtime.heartbeat("w1", at=NOW)
    runtime.report("orders", State.RUNNING, "w1", updated_at=NOW)
    services.reconcile(runtime=runtime, now=NOW)
    reason = "waiting for sink credentials svc:DELTA-012 to be accepted"
    runtime.report("orders", State.UNASSIGNED, "w1", reason=reason, updated_at=NOW)

    services.reconcile(runtime=runtime, now=NOW)

    expected = f"waiting for sink credentials svc:{SECRET_MARKER} to be accepted"
    assert Connector.objects.get().status_reason == expected
    assert LifecycleEvent.objects.filter(reason=expected).exists()
    status = api.get(f"{CHANNELS}orders/status")
    assert status.json()["reason"] == expected
    assert_no_secret(status)
    assert_no_secret(api.get(f"{CHANNELS}orders/lifecycle/"))


def test_no_lifecycle_event_quotes_a_secret(api):
    create(api)
    spec = api.get(f"{CHANNELS}orders/").json()["spec"]
    spec["sink"]["config"]["auth_header"] = "Bearer GOLF-678"
    api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")
    api.post(f"{CHANNELS}orders/start")
    api.post(f"{CHANNELS}orders/stop")

    reasons = " ".join(LifecycleEvent.objects.values_list("reason", flat=True))

    assert [s for s in (*SECRETS, "GOLF-678") if s in reasons] == []


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    return client


def test_the_admin_shows_markers_and_keeps_secrets_on_save(admin_client):
    channel = services.create_channel(name="orders", spec=secret_spec())
    services.update_channel(channel, spec={**secret_spec(), "transforms": []})  # revision 2
    services.update_channel(channel, spec=secret_spec())  # revision 3
    page = admin_client.get(f"/admin/console/channel/{channel.pk}/change/")
    assert page.status_code == 200
    assert_no_secret(page)
    redacted = page.context["adminform"].form["spec"].initial
    redacted["sink"]["config"]["url"] = "http://hooks.example/admin"

    response = admin_client.post(
        f"/admin/console/channel/{channel.pk}/change/",
        {
            "description": "",
            "spec": json.dumps(redacted),
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
            "revisions-MIN_NUM_FORMS": "0",
            "revisions-MAX_NUM_FORMS": "1000",
        },
    )

    assert response.status_code == 302, response.content
    saved = stored_spec()
    assert saved["sink"]["config"]["url"] == "http://hooks.example/admin"
    assert saved["sink"]["config"]["headers"] == {"X-Api-Key": "CHARLIE-789"}
    assert saved["transforms"][1]["config"]["api_key"] == "key-ALPHA-123"
