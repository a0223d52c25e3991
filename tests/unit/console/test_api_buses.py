"""Buses through the API: create, update and validate in the bus form with located errors,
write-only secrets in rule sinks kept by rule name, revisions and their diffs naming the
rule, per-rule counts in status and ``?expand=status``, audit and lifecycle."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from console import services
from console.crypto import decrypt_spec
from console.models import AuditEvent, Channel, Connector, LifecycleEvent, Revision
from pipelines.spec.secrets import SECRET_CHANGED_MARKER, SECRET_MARKER
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
NOW = 1_700_000_000.0
KAFKA = {"bootstrap_servers": "localhost:9092"}
SOURCE = {"type": "kafka", "config": {**KAFKA, "topics": ["orders"]}}


def http_sink(password: str, url: str = "https://api.example.com/events") -> dict:
    """The built-in http sink with a basic-auth password (a write-only secret)."""
    return {
        "type": "http",
        "config": {"url": url, "auth": {"type": "basic", "username": "svc", "password": password}},
    }


def kafka_sink(topic: str) -> dict:
    return {"type": "kafka", "config": {**KAFKA, "topic": topic}}


def rule(name: str, password: str, amount: int = 100) -> dict:
    return {
        "name": name,
        "pattern": {"data": {"amount": [{"numeric": [">", amount]}]}},
        "sinks": [kafka_sink(name), http_sink(password)],
    }


def bus(*rules: dict) -> dict:
    return {"source": SOURCE, "rules": list(rules)}


@pytest.fixture
def orders(api) -> dict:
    """A bus ``orders`` of three rules, each with its own http password."""
    spec = bus(rule("alpha", "PW-ALPHA-1"), rule("bravo", "PW-BRAVO-2"), rule("charlie", "PW-C-3"))
    response = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def stored_spec(name: str = "orders") -> dict:
    return decrypt_spec(Channel.objects.get(name=name).latest_revision_obj().spec)


def password_of(spec: dict, name: str) -> str:
    found = next(r for r in spec["rules"] if r["name"] == name)
    return found["sinks"][1]["config"]["auth"]["password"]


def put_spec(api, spec: dict):
    return api.put(f"{CHANNELS}orders/", {"name": "orders", "spec": spec}, format="json")


# -- create / read / validate ------------------------------------------------------------


def test_a_bus_is_created_and_read_back_in_the_bus_form_without_its_secrets(orders):
    spec = orders["spec"]
    assert "sink" not in spec
    assert [r["name"] for r in spec["rules"]] == ["alpha", "bravo", "charlie"]
    assert spec["rules"][0]["enabled"] is True  # normalised: defaults filled in
    assert spec["rules"][0]["sinks"][1]["config"]["auth"]["password"] == SECRET_MARKER
    assert "PW-" not in json.dumps(orders)
    assert password_of(stored_spec(), "bravo") == "PW-BRAVO-2"
    raw = json.dumps(Revision.objects.get().spec)
    assert "PW-" not in raw  # encrypted at rest


def test_bus_errors_are_located_from_the_request_to_the_response(api):
    spec = bus(
        rule("alpha", "pw-1"),
        {**rule("bravo", "pw-2"), "pattern": {"data": {"amount": [{"numeric": [">"]}]}}},
        {"name": "charlie", "sinks": [{"type": "kafka", "config": {**KAFKA}}]},
        {**rule("alpha", "pw-3")},
        {"name": "Bad Name", "sinks": [kafka_sink("x")]},
        {"name": "delta", "sinks": []},
        {"name": "echo", "sinks": [{"type": "preview", "config": {}}]},
    )

    response = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert set(body) == {
        "spec.rules[1].pattern",
        "spec.rules[2].sinks[0].config.topic",
        "spec.rules[3].name",
        "spec.rules[4].name",
        "spec.rules[5].sinks",
        "spec.rules[6].sinks[0].type",
    }
    assert "unique" in body["spec.rules[3].name"][0]
    assert not Channel.objects.exists()


def test_a_spec_with_both_a_sink_and_rules_is_refused_at_sink(api):
    spec = {**bus(rule("alpha", "pw")), "sink": kafka_sink("x")}

    response = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")

    assert response.status_code == 400
    assert list(response.json()) == ["spec.sink"]


def test_an_update_is_validated_in_the_bus_form_too(api, orders):
    spec = copy.deepcopy(orders["spec"])
    spec["rules"][2]["sinks"][0]["config"]["topic"] = ""

    response = put_spec(api, spec)

    assert response.status_code == 400
    assert list(response.json()) == ["spec.rules[2].sinks[0].config.topic"]
    assert Revision.objects.count() == 1


def test_errors_never_quote_a_rule_sinks_secret(api):
    spec = bus({**rule("alpha", "PW-QUOTED-9"), "pattern": {"bad": "x"}})

    response = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")

    assert response.status_code == 400
    assert "PW-QUOTED-9" not in response.content.decode()


# -- secrets kept by rule name -----------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda rules: rules.reverse(), id="reordered"),
        pytest.param(lambda rules: rules.insert(0, rule("zulu", "PW-ZULU-0")), id="inserted"),
        pytest.param(lambda rules: rules.pop(0), id="first-removed"),
        pytest.param(lambda rules: rules.pop(1), id="middle-removed"),
    ],
)
def test_get_then_put_keeps_each_rules_secrets_wherever_rules_moved(api, orders, edit):
    spec = copy.deepcopy(api.get(f"{CHANNELS}orders/").json()["spec"])
    edit(spec["rules"])
    names = [r["name"] for r in spec["rules"]]

    response = put_spec(api, spec)

    assert response.status_code == 200, response.json()
    assert "PW-" not in response.content.decode()
    stored = stored_spec()
    assert [r["name"] for r in stored["rules"]] == names
    expected = {"alpha": "PW-ALPHA-1", "bravo": "PW-BRAVO-2", "charlie": "PW-C-3"}
    expected["zulu"] = "PW-ZULU-0"
    for name in names:
        assert password_of(stored, name) == expected[name]


def test_a_renamed_rule_must_be_given_its_secret_again(api, orders):
    spec = copy.deepcopy(orders["spec"])
    spec["rules"][0]["name"] = "alpha-2"

    response = put_spec(api, spec)

    assert response.status_code == 400
    assert list(response.json()) == ["spec.rules[0].sinks[1].config.auth.password"]
    assert (
        "send the secret itself"
        in response.json()["spec.rules[0].sinks[1].config.auth.password"][0]
    )


def test_a_moved_rule_pointed_elsewhere_must_be_given_its_secret_again(api, orders):
    spec = copy.deepcopy(orders["spec"])
    spec["rules"].reverse()
    spec["rules"][1]["sinks"][1]["config"]["url"] = "https://evil.example.net/events"  # bravo

    response = put_spec(api, spec)

    assert response.status_code == 400
    assert list(response.json()) == ["spec.rules[1].sinks[1].config.auth.password"]
    assert password_of(stored_spec(), "bravo") == "PW-BRAVO-2"


def test_rule_secrets_never_reach_revisions_audit_or_logs(api, orders, caplog):
    spec = copy.deepcopy(orders["spec"])
    spec["rules"].insert(1, rule("delta", "PW-DELTA-4"))
    put_spec(api, spec)

    revisions = api.get(f"{CHANNELS}orders/revisions/").content.decode()
    diff = api.get(f"{CHANNELS}orders/revisions/2/diff").content.decode()
    audit = json.dumps([event.changes for event in AuditEvent.objects.all()])

    for text in (revisions, diff, audit, caplog.text):
        assert "PW-" not in text


# -- revisions, diffs, audit, lifecycle --------------------------------------------------


def test_an_edited_rule_is_a_new_revision_audited_as_an_update(api, orders, user):
    spec = copy.deepcopy(orders["spec"])
    spec["rules"][1]["pattern"] = {"data": {"amount": [{"numeric": [">", 500]}]}}

    assert put_spec(api, spec).status_code == 200
    assert put_spec(api, spec).status_code == 200  # the same spec again: no new revision

    assert list(Revision.objects.order_by("number").values_list("number", flat=True)) == [1, 2]
    event = AuditEvent.objects.filter(action="channel.update").latest("created_at")
    assert (event.actor, event.object_id, event.outcome) == ("alice", "orders", 200)
    assert event.changes["spec"]["rules"][1]["pattern"] == spec["rules"][1]["pattern"]
    assert event.changes["spec"]["rules"][1]["sinks"][1]["config"]["auth"]["password"] == (
        SECRET_MARKER
    )


def test_the_diff_of_a_bus_names_each_rule(api, orders):
    spec = copy.deepcopy(orders["spec"])
    spec["rules"][1]["pattern"] = {"data": {"amount": [{"numeric": [">", 500]}]}}
    spec["rules"][2]["sinks"][0]["config"]["topic"] = "charlie-2"
    spec["rules"].insert(0, rule("zulu", "PW-ZULU-0"))
    del spec["rules"][1]  # alpha
    put_spec(api, spec)

    response = api.get(f"{CHANNELS}orders/revisions/2/diff")

    assert response.status_code == 200
    body = response.json()
    assert (body["number"], body["against"]) == (2, 1)
    changes = {(c["path"], c["change"]): c for c in body["changes"]}
    assert set(changes) == {
        ("rules[alpha]", "removed"),
        ("rules[bravo].pattern", "changed"),
        ("rules[charlie].sinks[0].config.topic", "changed"),
        ("rules[zulu]", "added"),
    }
    assert changes[("rules[bravo].pattern", "changed")]["after"] == spec["rules"][1]["pattern"]
    assert changes[("rules[charlie].sinks[0].config.topic", "changed")]["before"] == "charlie"
    added = changes[("rules[zulu]", "added")]["after"]
    assert added["sinks"][1]["config"]["auth"]["password"] == SECRET_CHANGED_MARKER
    removed = changes[("rules[alpha]", "removed")]["before"]
    assert removed["sinks"][1]["config"]["auth"]["password"] == SECRET_MARKER


def test_the_diff_tells_a_reorder_and_a_changed_secret_without_showing_it(api, orders):
    spec = copy.deepcopy(orders["spec"])
    spec["rules"].reverse()
    spec["rules"][0]["sinks"][1]["config"]["auth"]["password"] = "PW-NEW-5"  # charlie
    put_spec(api, spec)

    body = api.get(f"{CHANNELS}orders/revisions/2/diff?against=1").json()

    assert body["changes"] == [
        {
            "path": "rules",
            "change": "reordered",
            "before": ["alpha", "bravo", "charlie"],
            "after": ["charlie", "bravo", "alpha"],
        },
        {
            "path": "rules[charlie].sinks[1].config.auth.password",
            "change": "changed",
            "before": SECRET_MARKER,
            "after": SECRET_CHANGED_MARKER,
        },
    ]


def test_a_linear_channel_turned_into_a_bus_and_back(api, spec):
    created = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")
    assert created.status_code == 201
    as_bus = {
        "source": spec["source"],
        "transforms": spec["transforms"],
        "rules": [{"name": "default", "sinks": [spec["sink"]]}],
    }
    assert put_spec(api, as_bus).status_code == 200
    assert put_spec(api, spec).status_code == 200

    forward = api.get(f"{CHANNELS}orders/revisions/2/diff").json()["changes"]
    back = api.get(f"{CHANNELS}orders/revisions/3/diff").json()["changes"]
    assert [(c["path"], c["change"]) for c in forward] == [
        ("sink", "removed"),
        ("rules", "added"),
    ]
    assert [(c["path"], c["change"]) for c in back] == [("sink", "added"), ("rules", "removed")]
    assert "rules" not in api.get(f"{CHANNELS}orders/").json()["spec"]


def test_the_first_revision_is_compared_with_an_empty_spec(api, orders):
    body = api.get(f"{CHANNELS}orders/revisions/1/diff").json()

    assert body["against"] is None
    assert [c["path"] for c in body["changes"]] == [
        "source",
        "transforms",
        "rules",
        "errors",
        "runtime",
    ]
    assert all(c["change"] == "added" for c in body["changes"])


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("orders/revisions/9/diff", 404),
        ("orders/revisions/1/diff?against=9", 404),
        ("orders/revisions/1/diff?against=0", 400),
        ("orders/revisions/1/diff?against=x", 400),
        ("nobody/revisions/1/diff", 404),
    ],
)
def test_diff_errors(api, orders, path, status):
    assert api.get(f"{CHANNELS}{path}").status_code == status


def test_the_diff_needs_authentication(anon, orders):
    assert anon.get(f"{CHANNELS}orders/revisions/1/diff").status_code == 401


def test_a_bus_starts_and_its_lifecycle_is_recorded(api, orders, runtime):
    assert api.post(f"{CHANNELS}orders/start").status_code == 202

    deployed = runtime.calls_named("deploy")
    assert deployed
    assert LifecycleEvent.objects.filter(channel__name="orders").exists()


# -- per-rule counts ---------------------------------------------------------------------

RULE_COUNTS = [
    {
        "rule": "alpha",
        "matched": 10,
        "delivered": 9,
        "failed": 1,
        "matched_per_second": 5.0,
        "delivered_per_second": 4.5,
        "targets": [
            {"sink": "rules[0].sinks[0]", "type": "kafka", "delivered": 10, "failed": 0},
            {"sink": "rules[0].sinks[1]", "type": "http", "delivered": 9, "failed": 1},
        ],
    },
    {
        "rule": "bravo",
        "matched": 0,
        "delivered": 0,
        "failed": 0,
        "matched_per_second": 0.0,
        "delivered_per_second": 0.0,
        "targets": [],
    },
]


def report_rules(runtime, name: str, rules: list[dict]) -> None:
    worker = Connector.objects.get(runtime_id=name).worker_id
    runtime.report(name, State.RUNNING, worker, updated_at=2.0)
    runtime.statuses[name] = replace(runtime.statuses[name], rules=rules)


def test_per_rule_counts_reach_status_and_expand_status(api, orders, runtime):
    services.start_channel(Channel.objects.get(name="orders"))
    runtime.heartbeat("w1", at=NOW)
    services.reconcile(runtime=runtime, now=NOW)
    assert api.get(f"{CHANNELS}orders/status").json()["rules"] == []  # never ran

    report_rules(runtime, "orders", RULE_COUNTS)
    services.reconcile(runtime=runtime, now=NOW)

    assert Connector.objects.get(runtime_id="orders").rule_metrics == RULE_COUNTS
    assert api.get(f"{CHANNELS}orders/status").json()["rules"] == RULE_COUNTS
    listed = api.get(f"{CHANNELS}?expand=status").json()["results"]
    assert listed[0]["status"]["rules"] == RULE_COUNTS

    later = [{**RULE_COUNTS[0], "matched": 20}, RULE_COUNTS[1]]
    report_rules(runtime, "orders", later)
    services.reconcile(runtime=runtime, now=NOW)
    assert api.get(f"{CHANNELS}orders/status").json()["rules"][0]["matched"] == 20


def test_a_linear_channel_has_no_rule_counts(api, spec):
    api.post(CHANNELS, {"name": "plain", "spec": spec}, format="json")

    status = api.get(f"{CHANNELS}plain/status").json()

    assert status["rules"] == []


# -- export and import (the builder's channel file is {name, description, spec}) ---------


def test_an_exported_bus_imports_once_its_secrets_are_typed_again(api, orders):
    exported = api.get(f"{CHANNELS}orders/").json()
    channel_file = copy.deepcopy({k: exported[k] for k in ("name", "description", "spec")})
    channel_file["name"] = "orders-copy"

    refused = api.post(CHANNELS, channel_file, format="json")

    assert refused.status_code == 400
    assert sorted(refused.json()) == [
        f"spec.rules[{i}].sinks[1].config.auth.password" for i in range(3)
    ]
    for index, password in enumerate(["PW-1", "PW-2", "PW-3"]):
        channel_file["spec"]["rules"][index]["sinks"][1]["config"]["auth"]["password"] = password
    imported = api.post(CHANNELS, channel_file, format="json")
    assert imported.status_code == 201, imported.json()
    assert imported.json()["spec"] == exported["spec"]
    assert password_of(stored_spec("orders-copy"), "charlie") == "PW-3"


def test_the_admin_saves_a_bus_as_a_new_revision(orders, django_user_model, client):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    channel = Channel.objects.get(name="orders")
    edited = copy.deepcopy(orders["spec"])  # as the API shows it: secrets as the marker
    edited["rules"].reverse()
    edited["rules"][2]["enabled"] = False  # alpha
    form = {
        "description": "via admin",
        "spec": json.dumps(edited),
        "revisions-TOTAL_FORMS": "0",
        "revisions-INITIAL_FORMS": "0",
        "revisions-MIN_NUM_FORMS": "0",
        "revisions-MAX_NUM_FORMS": "1000",
    }

    response = client.post(f"/admin/console/channel/{channel.pk}/change/", form)

    assert response.status_code == 302
    assert Revision.objects.filter(channel=channel).count() == 2, response.content[:2000]
    assert stored_spec()["rules"][2] | {"sinks": None} == {
        **orders["spec"]["rules"][0],
        "enabled": False,
        "sinks": None,
    }
    assert password_of(stored_spec(), "alpha") == "PW-ALPHA-1"
    assert password_of(stored_spec(), "charlie") == "PW-C-3"
    event = AuditEvent.objects.get(action="admin.channel.update")
    assert "PW-" not in json.dumps(event.changes)


def test_the_bus_in_the_manual_is_a_valid_spec(api):
    text = (Path(__file__).parents[3] / "docs" / "channels.md").read_text(encoding="utf-8")
    example = text.split("### Buses and rules", 1)[1].split("```json", 1)[1].split("```", 1)[0]

    response = api.post(CHANNELS, {"name": "manual", "spec": json.loads(example)}, format="json")

    assert response.status_code == 201, response.json()
    assert [r["name"] for r in response.json()["spec"]["rules"]] == ["big-orders", "everything"]


def test_a_trace_quoting_a_rule_sinks_secret_is_masked_in_status_and_lifecycle(
    api, orders, runtime
):
    api.post(f"{CHANNELS}orders/start")
    runtime.heartbeat("w1", at=NOW)
    trace = "HttpError: rules[1].sinks[1] refused svc:PW-BRAVO-2 at https://api.example.com"
    runtime.report("orders", State.FAILED, "w1", trace=trace, updated_at=NOW)

    services.reconcile(runtime=runtime, now=NOW)

    status = api.get(f"{CHANNELS}orders/status").json()
    assert status["trace"] == trace.replace("PW-BRAVO-2", SECRET_MARKER)
    lifecycle = api.get(f"{CHANNELS}orders/lifecycle/").content.decode()
    assert "PW-BRAVO-2" not in lifecycle
    assert "PW-BRAVO-2" not in "".join(LifecycleEvent.objects.values_list("reason", flat=True))


def test_counts_a_runtime_reports_in_another_shape_never_break_status(api, orders, runtime):
    services.start_channel(Channel.objects.get(name="orders"))
    runtime.heartbeat("w1", at=NOW)
    services.reconcile(runtime=runtime, now=NOW)
    odd = [
        {"rule": "alpha", "matched": 3},  # no delivered, failed, rates or targets
        {"matched": 1},  # no rule name
        "not an object",
        {"rule": "bravo", "matched": 2, "delivered": 2, "failed": 0, "targets": [{"sink": 1}]},
    ]
    report_rules(runtime, "orders", odd)
    services.reconcile(runtime=runtime, now=NOW)

    response = api.get(f"{CHANNELS}orders/status")

    assert response.status_code == 200
    assert response.json()["rules"] == [
        {"rule": "alpha", "matched": 3, "delivered": 0, "failed": 0, "targets": []},
        {
            "rule": "bravo",
            "matched": 2,
            "delivered": 2,
            "failed": 0,
            "targets": [{"sink": "1", "type": "", "delivered": 0, "failed": 0}],
        },
    ]


@pytest.mark.parametrize(
    "path",
    ["/api/v1/channels/orders/revisions/null,null/diff", "/api/v1/no-such-area/", "/api/v2/"],
)
def test_a_path_no_api_route_matches_is_a_json_404(api, path):
    response = api.get(path)

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


def test_outside_the_api_a_404_is_still_a_page(client):
    response = client.get("/no-such-page/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_second_target_drawn_from_a_linear_channel_keeps_its_sinks_secret(api):
    linear = {"source": SOURCE, "sink": http_sink("PW-LINEAR-7")}
    api.post(CHANNELS, {"name": "orders", "spec": linear}, format="json")
    shown = api.get(f"{CHANNELS}orders/").json()["spec"]
    # The builder turns the channel into a bus of its implicit rule, named "default".
    sink = shown.pop("sink")
    as_bus = {**shown, "rules": [{"name": "default", "sinks": [sink, kafka_sink("x")]}]}

    response = put_spec(api, as_bus)

    assert response.status_code == 200, response.json()
    stored = stored_spec()
    assert stored["rules"][0]["sinks"][0]["config"]["auth"]["password"] == "PW-LINEAR-7"
    assert "PW-LINEAR-7" not in response.content.decode()
