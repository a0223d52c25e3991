"""``GET /metrics``: Prometheus metrics from the database and the reconcile loop's timings."""

from __future__ import annotations

import time
import uuid

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client import generate_latest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.authtoken.models import Token

from console import locks, metrics, services, tasks
from console.choices import ConnectorState, ShownState, TargetState
from console.models import Channel, Connector, Task, Worker
from console.runtime import set_runtime

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-0123456789"


@pytest.fixture(autouse=True)
def metrics_redis(settings, redis_url, runtime):
    """The real test Redis under a prefix of this test's own, and the fake runtime kept
    (changing REDIS_URL drops the cached runtime)."""
    settings.REDIS_URL = redis_url
    settings.SLUICE_REDIS_PREFIX = f"test-{uuid.uuid4().hex[:8]}"
    set_runtime(runtime)
    client, key = locks.redis_client(), metrics.reconcile_key()
    yield client
    client.delete(key)


def scrape() -> dict[str, dict[tuple, float]]:
    """``{sample name: {sorted label items: value}}`` of one collection, via the parser."""
    text = generate_latest(metrics.registry()).decode()
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def channel_with_tasks(spec, name: str, state: str, tasks_: list[dict]) -> Connector:
    services.start_channel(services.create_channel(name=name, spec=spec))
    connector = Connector.objects.get(channel__name=name)
    Connector.objects.filter(pk=connector.pk).update(
        worker="w1", state=state, dead_letters=7, sink_retries=3
    )
    for task_id, values in enumerate(tasks_):
        Task.objects.create(connector=connector, task_id=task_id, worker_id="w1", **values)
    return connector


def kafka_task(state: str, *, partition: int, lag: int, rate: float) -> dict:
    return {
        "state": state,
        "topic": "orders",
        "partition": partition,
        "lag": lag,
        "rows_per_second": rate,
    }


def test_channel_task_and_worker_metrics_come_from_the_database(spec):
    Worker.objects.create(worker_id="w1", state="ALIVE")
    Worker.objects.create(worker_id="w2", state="DEAD")
    channel_with_tasks(
        spec,
        "orders",
        ConnectorState.RUNNING,
        [
            kafka_task("RUNNING", partition=0, lag=5, rate=1.5),
            kafka_task("RUNNING", partition=1, lag=3, rate=2),
            # A paused task processes nothing, whatever rate it last reported.
            kafka_task("PAUSED", partition=2, lag=1, rate=9),
        ],
    )
    services.create_channel(name="idle", spec=spec)  # never started: no connector

    samples = scrape()

    assert samples["sluice_channel_events_per_second"] == {
        (("channel", "idle"),): 0.0,
        (("channel", "orders"),): 3.5,
    }
    assert samples["sluice_channel_lag"] == {
        (("channel", "idle"),): 0.0,
        (("channel", "orders"),): 9.0,
    }
    assert samples["sluice_channel_dead_letters_total"] == {
        (("channel", "idle"),): 0.0,
        (("channel", "orders"),): 7.0,
    }
    assert samples["sluice_channel_sink_retries_total"] == {
        (("channel", "idle"),): 0.0,
        (("channel", "orders"),): 3.0,
    }
    state = samples["sluice_channel_state"]
    assert len(state) == 2 * len(ShownState.values)
    assert {labels for labels, value in state.items() if value == 1} == {
        (("channel", "idle"), ("state", "STOPPED")),
        (("channel", "orders"), ("state", "RUNNING")),
    }
    target = samples["sluice_channel_target_state"]
    assert len(target) == 2 * len(TargetState.values)
    assert {labels for labels, value in target.items() if value == 1} == {
        (("channel", "idle"), ("state", "STOPPED")),
        (("channel", "orders"), ("state", "RUNNING")),
    }
    assert samples["sluice_task_lag"] == {
        (("channel", "orders"), ("partition", str(p)), ("task", str(p)), ("topic", "orders")): lag
        for p, lag in enumerate([5.0, 3.0, 1.0])
    }
    assert samples["sluice_workers"] == {(("state", "ALIVE"),): 1.0, (("state", "DEAD"),): 1.0}


def test_a_task_without_topic_or_lag(spec):
    Worker.objects.create(worker_id="w1", state="ALIVE")
    channel_with_tasks(
        spec, "files", ConnectorState.FAILED, [{"state": "FAILED", "rows_per_second": 4.0}]
    )

    samples = scrape()

    assert samples["sluice_channel_events_per_second"] == {(("channel", "files"),): 0.0}
    assert samples["sluice_channel_lag"] == {(("channel", "files"),): 0.0}
    assert "sluice_task_lag" not in samples  # no lag known, no series
    assert samples["sluice_channel_state"][(("channel", "files"), ("state", "FAILED"))] == 1


def test_the_number_of_queries_does_not_grow_with_channels(spec):
    Worker.objects.create(worker_id="w1", state="ALIVE")
    for n in range(2):
        channel_with_tasks(spec, f"a{n}", "RUNNING", [{"state": "RUNNING", "lag": 1}] * 3)
    with CaptureQueriesContext(connection) as few:
        scrape()
    for n in range(20):
        channel_with_tasks(spec, f"b{n}", "RUNNING", [{"state": "RUNNING", "lag": 1}] * 3)
    with CaptureQueriesContext(connection) as many:
        samples = scrape()

    assert len(samples["sluice_channel_lag"]) == 22
    assert len(many.captured_queries) == len(few.captured_queries) == 3


def test_reconcile_passes_are_recorded_as_a_histogram():
    metrics.record_reconcile(0.02, ok=True, at=1_700_000_000.5)
    metrics.record_reconcile(0.3, ok=False)
    metrics.record_reconcile(45.0, ok=False)  # beyond the last bucket: only +Inf

    samples = scrape()

    buckets = {
        dict(labels)["le"]: value
        for labels, value in samples["sluice_reconcile_duration_seconds_bucket"].items()
    }
    assert buckets["0.01"] == 0
    assert buckets["0.025"] == 1
    assert buckets["0.25"] == 1
    assert buckets["0.5"] == 2
    assert buckets["30.0"] == 2
    assert buckets["+Inf"] == 3
    assert samples["sluice_reconcile_duration_seconds_count"] == {(): 3.0}
    assert samples["sluice_reconcile_duration_seconds_sum"][()] == pytest.approx(45.32)
    assert samples["sluice_reconcile_failures_total"] == {(): 2.0}
    assert samples["sluice_reconcile_last_success_timestamp_seconds"] == {(): 1_700_000_000.5}


def test_the_reconcile_task_records_its_duration(runtime):
    runtime.heartbeat("w1")
    before = time.time()

    assert tasks.reconcile() is not None
    runtime.unavailable = ConnectionError("redis is down")
    assert tasks.reconcile() is None  # failed pass: counted, last success unchanged

    samples = scrape()
    assert samples["sluice_reconcile_duration_seconds_count"] == {(): 2.0}
    assert samples["sluice_reconcile_failures_total"] == {(): 1.0}
    last_success = samples["sluice_reconcile_last_success_timestamp_seconds"][()]
    assert before <= last_success <= time.time()


def test_before_any_pass_the_histogram_is_empty_and_last_success_is_zero():
    samples = scrape()

    assert samples["sluice_reconcile_duration_seconds_count"] == {(): 0.0}
    assert samples["sluice_reconcile_last_success_timestamp_seconds"] == {(): 0.0}


def test_without_redis_the_database_metrics_are_still_served(settings, spec, runtime):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    set_runtime(runtime)
    services.create_channel(name="orders", spec=spec)

    metrics.record_reconcile(0.1, ok=True)  # dropped with a warning, not raised
    samples = scrape()

    assert samples["sluice_channel_lag"] == {(("channel", "orders"),): 0.0}
    assert "sluice_reconcile_duration_seconds_count" not in samples


# -- the endpoint and its authentication -------------------------------------------------------


@pytest.fixture
def viewer(django_user_model):
    user = django_user_model.objects.create_user("vera", password="unused-pass-1")
    user.user_permissions.add(Permission.objects.get(codename="view_channel"))
    return user


def test_without_credentials_it_is_401(client: Client):
    response = client.get("/metrics")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="sluice-metrics"'
    assert "SLUICE_METRICS_TOKEN" in response.json()["detail"]


def test_the_bearer_token_reads_valid_prometheus_text(client: Client, settings, spec):
    settings.SLUICE_METRICS_TOKEN = TOKEN
    services.create_channel(name="orders", spec=spec)

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "no-cache" in response["Cache-Control"]
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {
        "sluice_channel_events_per_second",
        "sluice_channel_lag",
        "sluice_channel_dead_letters",
        "sluice_channel_state",
        "sluice_channel_target_state",
        "sluice_workers",
        "sluice_reconcile_duration_seconds",
        "sluice_reconcile_last_success_timestamp_seconds",
    } <= names


def test_openmetrics_is_served_when_asked_for(client: Client, settings):
    settings.SLUICE_METRICS_TOKEN = TOKEN

    response = client.get(
        "/metrics",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        HTTP_ACCEPT="application/openmetrics-text; version=1.0.0",
    )

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    families = {f.name for f in openmetrics_families(response.content.decode())}
    assert "sluice_reconcile_duration_seconds" in families


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}x", "Bearer ", f"bearer {TOKEN[:-1]}"])
def test_a_wrong_bearer_token_is_401(client: Client, settings, header):
    settings.SLUICE_METRICS_TOKEN = TOKEN

    response = client.get("/metrics", HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid bearer token."}


def test_a_wrong_bearer_token_is_401_even_with_a_session(client: Client, settings, viewer):
    settings.SLUICE_METRICS_TOKEN = TOKEN
    client.force_login(viewer)

    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope").status_code == 401


def test_without_a_configured_token_bearer_is_refused(client: Client, settings):
    settings.SLUICE_METRICS_TOKEN = ""

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything")

    assert response.status_code == 401
    assert "SLUICE_METRICS_TOKEN is not set" in response.json()["detail"]


def test_a_logged_in_viewer_may_read_them(client: Client, viewer):
    client.force_login(viewer)

    response = client.get("/metrics")

    assert response.status_code == 200
    assert list(text_string_to_metric_families(response.content.decode()))


def test_a_logged_in_user_without_view_channel_is_403(client: Client, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody", password="unused-pass-2"))

    response = client.get("/metrics")

    assert response.status_code == 403
    assert "console.view_channel" in response.json()["detail"]


def test_only_reads_are_allowed(client: Client, settings):
    settings.SLUICE_METRICS_TOKEN = TOKEN

    response = client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 405


def test_a_deleted_channel_leaves_no_series(spec):
    services.create_channel(name="gone", spec=spec)
    Channel.objects.filter(name="gone").delete()

    assert "sluice_channel_lag" not in scrape()


def test_a_viewers_api_token_works_too(client: Client, viewer):
    token = Token.objects.create(user=viewer)

    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
    assert client.get("/metrics", HTTP_AUTHORIZATION="Token wrong").status_code == 401


def test_a_buses_rules_have_their_own_counters(spec):
    Worker.objects.create(worker_id="w1", state="ALIVE")
    connector = channel_with_tasks(spec, "orders", ConnectorState.RUNNING, [])
    Connector.objects.filter(pk=connector.pk).update(
        rule_metrics=[
            {
                "rule": "big-orders",
                "matched": 10,
                "delivered": 9,
                "failed": 1,
                "matched_per_second": 2.5,
            },
            {"rule": "everything", "matched": 40, "delivered": 40, "failed": 0},
            {"rule": 7, "matched": "garbage"},  # not a rule's counts: left out
        ]
    )
    channel_with_tasks(spec, "plain", ConnectorState.RUNNING, [])

    samples = scrape()

    def series(name: str) -> dict[tuple, float]:
        return {
            (dict(labels)["channel"], dict(labels)["rule"]): value
            for labels, value in samples[name].items()
        }

    assert series("sluice_rule_matched_total") == {
        ("orders", "big-orders"): 10.0,
        ("orders", "everything"): 40.0,
    }
    assert series("sluice_rule_delivered_total") == {
        ("orders", "big-orders"): 9.0,
        ("orders", "everything"): 40.0,
    }
    assert series("sluice_rule_failed_total") == {
        ("orders", "big-orders"): 1.0,
        ("orders", "everything"): 0.0,
    }
    assert series("sluice_rule_matched_per_second") == {("orders", "big-orders"): 2.5}


def test_the_source_s_windowed_rate_is_the_one_figure_of_every_reader(api, spec):
    """The walk saw 1-2 events/s on the page, 0.66 in the API and 10.0 on the source stage
    for one 5 events/s channel: the source stage's rate over its window is now the figure."""
    Worker.objects.create(worker_id="w1", state="ALIVE")
    connector = channel_with_tasks(
        spec,
        "orders",
        ConnectorState.RUNNING,
        [kafka_task("RUNNING", partition=0, lag=0, rate=0.66)],
    )
    stages = [
        {
            "stage": "source",
            "index": None,
            "type": "kafka",
            "in": 900,
            "out": 900,
            "failed": 0,
            "in_per_second": 5.03,
            "out_per_second": 5.03,
        }
    ]
    Connector.objects.filter(pk=connector.pk).update(
        stage_metrics=stages, status_seen_at=timezone.now(), report_interval=5.0
    )

    assert scrape()["sluice_channel_events_per_second"] == {(("channel", "orders"),): 5.03}
    assert api.get("/api/v1/channels/orders/status").json()["events_per_second"] == 5.03
    listed = api.get("/api/v1/channels/?expand=status").json()["results"][0]["status"]
    assert listed["events_per_second"] == 5.03
