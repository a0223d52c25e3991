"""The audit trail: one row per state-changing API or admin request (refused ones too), the
sign-in events, nothing for ingestion or read-only POSTs, and the read side."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console import services
from console.models import AuditEvent, Channel, default_team_id
from console.permissions import grant_role
from console.services.audit_trail import MAX_CHANGES_BYTES, record_audit, redact_body
from pipelines.spec.secrets import SECRET_MARKER
from tests.unit.console import secret_plugins
from tests.unit.console.secret_plugins import SECRETS, secret_spec

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
AUDIT = "/api/v1/audit/"
UA = "sluice-tests/1.0"


@pytest.fixture(autouse=True)
def _secret_plugins(monkeypatch):
    secret_plugins.install(monkeypatch)


@pytest.fixture
def orders(user, spec):
    channel = services.create_channel(name="orders", spec=spec, user=user)
    AuditEvent.objects.all().delete()  # only what the test does
    return channel


def only_event(**filters) -> AuditEvent:
    (event,) = AuditEvent.objects.filter(**filters)
    return event


def client_for(user) -> APIClient:
    client = APIClient(HTTP_USER_AGENT=UA)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_creating_a_channel_records_who_what_when_and_from_where(api, user):
    before = timezone.now()

    response = api.post(
        CHANNELS,
        {"name": "hooks", "description": "d", "spec": secret_spec()},
        format="json",
        HTTP_USER_AGENT=UA,
        REMOTE_ADDR="203.0.113.7",
    )

    assert response.status_code == 201, response.json()
    event = only_event()
    assert (event.action, event.object_type, event.object_id) == (
        "channel.create",
        "channel",
        "hooks",
    )
    assert (event.user, event.actor, event.outcome, event.via) == (user, "alice", 201, "api")
    assert (event.remote_addr, event.user_agent) == ("203.0.113.7", UA)
    assert event.created_at >= before
    assert event.changes["spec"]["sink"]["config"]["auth_header"] == SECRET_MARKER
    assert event.changes["description"] == "d"
    assert [s for s in SECRETS if s in json.dumps(event.changes)] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "action"),
    [
        ("patch", "orders/", {"description": "new"}, "channel.update"),
        ("put", "orders/", None, "channel.update"),
        ("post", "orders/start", None, "channel.start"),
        ("post", "orders/pause", None, "channel.pause"),
        ("post", "orders/resume", None, "channel.resume"),
        ("post", "orders/restart", None, "channel.restart"),
        ("post", "orders/stop", None, "channel.stop"),
        ("patch", "orders/offsets", {"offsets": []}, "channel.offsets.alter"),
        ("delete", "orders/offsets", None, "channel.offsets.reset"),
        ("post", "orders/offsets/copy", {"from_channel": "nope"}, "channel.offsets.copy"),
        ("post", "orders/ingest-token", None, "channel.ingest_token.rotate"),
        ("delete", "orders/", None, "channel.delete"),
    ],
)
def test_each_channel_operation_is_one_row(api, orders, spec, method, path, body, action):
    if method == "put":
        body = {"name": "orders", "description": "", "spec": spec}

    response = getattr(api, method)(f"{CHANNELS}{path}", body, format="json")

    event = only_event()
    assert (event.action, event.object_type, event.object_id) == (action, "channel", "orders")
    assert (event.actor, event.outcome) == ("alice", response.status_code)


def test_a_refused_request_is_recorded_with_its_403(orders, django_user_model):
    viewer = django_user_model.objects.create_user("vera", password="pw-vera-123")
    grant_role(viewer, "viewer")

    response = client_for(viewer).post(f"{CHANNELS}orders/stop")

    assert response.status_code == 403
    event = only_event()
    assert (event.action, event.actor, event.user, event.outcome) == (
        "channel.stop",
        "vera",
        viewer,
        403,
    )


def test_an_anonymous_request_is_recorded_as_anonymous(anon, orders):
    response = anon.delete(f"{CHANNELS}orders/")

    assert response.status_code == 401
    event = only_event()
    assert (event.action, event.actor, event.user, event.outcome) == (
        "channel.delete",
        "anonymous",
        None,
        401,
    )


def test_a_bad_request_is_recorded_with_its_400(api):
    response = api.post(CHANNELS, {"name": "bad", "spec": {"source": {}}}, format="json")

    assert response.status_code == 400
    assert only_event().outcome == 400


def test_ingestion_reads_and_read_only_posts_are_not_recorded(api, anon, orders):
    anon.post(f"{CHANNELS}orders/events", {"id": "1"}, format="json")
    api.get(f"{CHANNELS}orders/")
    api.post("/api/v1/event-patterns/test", {"pattern": {}, "event": {}}, format="json")
    api.post("/api/v1/plugins/sink/kafka/validate", {"config": {}}, format="json")
    api.post("/api/v1/plugins/kafka/validate?kind=sink", {"config": {}}, format="json")

    assert AuditEvent.objects.count() == 0


def test_the_forwarded_address_is_used_only_from_a_trusted_proxy(api, settings):
    forwarded = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "198.51.100.4, 10.0.0.9"}
    api.post(f"{CHANNELS}nope/stop", **forwarded)
    settings.SLUICE_TRUSTED_PROXIES = ["10.0.0.0/8"]
    api.post(f"{CHANNELS}nope/start", **forwarded)

    assert only_event(action="channel.stop").remote_addr == "10.0.0.2"
    assert only_event(action="channel.start").remote_addr == "198.51.100.4"


# -- the body as recorded --------------------------------------------------------------------


def test_passwords_and_tokens_are_never_kept():
    body = {
        "username": "bob",
        "password1": "pw-1",
        "new_password2": "pw-2",
        "csrfmiddlewaretoken": "c",
        "nested": {"api_key": "k", "Authorization": "Bearer x", "keep": 1},
    }

    assert redact_body(body) == {
        "username": "bob",
        "password1": "[redacted]",
        "new_password2": "[redacted]",
        "csrfmiddlewaretoken": "[redacted]",
        "nested": {"api_key": "[redacted]", "Authorization": "[redacted]", "keep": 1},
    }


def test_a_body_keeps_only_strings_every_database_stores():
    assert redact_body({"name": "a\x00b", "\ud800x": ["\udfff"]}) == {
        "name": "a\ufffdb",
        "?x": ["?"],
    }


def test_a_spec_sent_as_json_text_is_redacted_and_a_big_body_capped():
    as_text = redact_body({"spec": json.dumps(secret_spec())})
    big = redact_body({"description": "x" * (MAX_CHANGES_BYTES + 1), "name": "n"})

    assert as_text["spec"]["transforms"][1]["config"]["api_key"] == SECRET_MARKER
    assert big["truncated"] is True and big["keys"] == ["description", "name"]
    assert redact_body({"spec": "{not json"}) == {"spec": "<not JSON, 9 characters>"}


# -- the admin -------------------------------------------------------------------------------


@pytest.fixture
def root(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    AuditEvent.objects.all().delete()
    return client


def test_an_admin_bulk_action_records_the_selected_channels(root, orders, spec):
    services.create_channel(name="billing", spec=spec)
    services.create_channel(name="other", spec=spec)
    ids = [str(c.pk) for c in Channel.objects.filter(name__in=["orders", "billing"])]

    root.post("/admin/console/channel/", {"action": "start_channels", "_selected_action": ids})

    event = only_event(via="admin")
    assert event.action == "admin.channel.start_channels"
    assert event.object_id == "billing,orders"
    assert event.changes == {"action": "start_channels", "selected": ["billing", "orders"]}
    assert (event.actor, event.outcome) == ("root", 302)


def test_an_admin_edit_and_button_are_recorded_without_secrets(root, api):
    api.post(CHANNELS, {"name": "hooks", "spec": secret_spec()}, format="json")
    channel = Channel.objects.get(name="hooks")
    AuditEvent.objects.all().delete()
    form = {
        "description": "via admin",
        "spec": json.dumps(secret_spec()),
        "revisions-TOTAL_FORMS": "0",
        "revisions-INITIAL_FORMS": "0",
        "revisions-MIN_NUM_FORMS": "0",
        "revisions-MAX_NUM_FORMS": "1000",
    }

    changed = root.post(f"/admin/console/channel/{channel.pk}/change/", form)
    root.post(f"/admin/console/channel/{channel.pk}/lifecycle/start/")

    assert changed.status_code == 302
    edit = only_event(action="admin.channel.update")
    assert (edit.object_id, edit.via) == ("hooks", "admin")
    assert [s for s in SECRETS if s in json.dumps(edit.changes)] == []
    assert "csrfmiddlewaretoken" not in edit.changes or edit.changes["csrfmiddlewaretoken"] == (
        "[redacted]"
    )
    assert only_event(action="admin.channel.start").object_id == "hooks"


def test_admin_deletes_name_the_channel_and_new_passwords_are_never_kept(root, orders):
    root.post(f"/admin/console/channel/{orders.pk}/delete/", {"post": "yes"})
    root.post(
        "/admin/auth/user/add/",
        {"username": "carol", "password1": "Pw-carol-4567!", "password2": "Pw-carol-4567!"},
    )

    deleted = only_event(action="admin.channel.delete")
    assert (deleted.object_id, deleted.outcome) == ("orders", 302)
    assert not Channel.objects.filter(name="orders").exists()
    added = only_event(action="admin.user.create")
    assert added.object_id == "carol"
    assert "Pw-carol-4567!" not in json.dumps(added.changes)
    assert added.changes["password1"] == "[redacted]"


def test_the_audit_admin_is_read_only_even_for_superusers(root):
    event = record_audit(action="channel.start", object_type="channel", object_id="x")

    assert root.get(f"/admin/console/auditevent/{event.pk}/change/").status_code == 200
    assert root.get("/admin/console/auditevent/add/").status_code == 403
    assert root.post(f"/admin/console/auditevent/{event.pk}/delete/").status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()


# -- signing in and out ----------------------------------------------------------------------


def test_sign_in_failures_sign_ins_and_sign_outs_are_recorded(client, django_user_model):
    django_user_model.objects.create_superuser("root", password="root-pass-123")
    login = "/admin/login/"

    client.post(login, {"username": "root", "password": "wrong"}, REMOTE_ADDR="192.0.2.1")
    client.post(login, {"username": "root", "password": "root-pass-123"})
    client.post("/admin/logout/")

    failed = only_event(action="auth.login_failed")
    assert (failed.actor, failed.object_id, failed.remote_addr, failed.via) == (
        "anonymous",
        "root",
        "192.0.2.1",
        "admin",
    )
    assert "wrong" not in json.dumps(failed.changes)
    assert only_event(action="auth.login").actor == "root"
    assert only_event(action="auth.logout").actor == "root"
    assert AuditEvent.objects.count() == 3  # the forms themselves add no row


# -- the read side ---------------------------------------------------------------------------


def test_the_audit_list_filters_by_actor_action_object_and_time(api, orders):
    api.post(f"{CHANNELS}orders/start")
    api.post(f"{CHANNELS}orders/stop")
    old = record_audit(  # about a channel since deleted: the team is kept on the row
        action="channel.start", actor="bob", object_id="billing", team_id=default_team_id()
    )
    AuditEvent.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timezone.timedelta(days=2)
    )

    everything = api.get(AUDIT).json()
    starts = api.get(AUDIT, {"action": "channel.start"}).json()
    by_bob = api.get(AUDIT, {"actor": "bob"}).json()
    on_orders = api.get(AUDIT, {"object_id": "orders", "action": "channel."}).json()
    recent = api.get(AUDIT, {"since": (timezone.now() - timezone.timedelta(hours=1)).isoformat()})

    assert everything["count"] == 3 and "results" in everything
    assert [e["actor"] for e in starts["results"]] == ["alice", "bob"]
    assert [e["object_id"] for e in by_bob["results"]] == ["billing"]
    assert [e["action"] for e in on_orders["results"]] == ["channel.stop", "channel.start"]
    assert recent.json()["count"] == 2
    assert api.get(AUDIT, {"since": "yesterday"}).status_code == 400


def test_the_audit_list_needs_the_view_auditevent_permission(anon, django_user_model):
    nobody = django_user_model.objects.create_user("nobody", password="pw-nobody-1")

    assert anon.get(AUDIT).status_code == 401
    refused = client_for(nobody).get(AUDIT)
    assert refused.status_code == 403
    assert "console.view_auditevent" in refused.json()["detail"]


def test_the_audit_list_is_in_the_schema(api):
    schema = api.get("/api/schema/?format=json").json()

    operation = schema["paths"]["/api/v1/audit/"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"actor", "action", "object_id", "since", "limit", "offset"} <= names
    assert "PaginatedAuditEventList" in str(operation["responses"]["200"])
