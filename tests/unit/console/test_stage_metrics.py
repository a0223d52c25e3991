"""Per-stage event counts: reported by the driver, stored by reconcile, shown by the status API."""

from __future__ import annotations

from dataclasses import replace

import pytest

from console import services
from console.models import Connector
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

NOW = 1_700_000_000.0
STAGES = [
    {"stage": "source", "index": None, "type": "kafka", "in": 10, "out": 9, "failed": 1},
    {"stage": "transform", "index": 0, "type": "filter", "in": 9, "out": 4, "failed": 0},
    {
        "stage": "sink",
        "index": None,
        "type": "kafka",
        "in": 4,
        "out": 4,
        "failed": 0,
        "in_per_second": 2.5,
        "out_per_second": 2.5,
    },
]


def start(spec, *names: str) -> None:
    for name in names:
        services.start_channel(services.create_channel(name=name, spec=spec))


def report(runtime, name: str, stages: list[dict], updated_at: float = 2.0) -> None:
    """What a running driver reports, with its per-stage counts."""
    worker = Connector.objects.get(runtime_id=name).worker_id
    runtime.report(name, State.RUNNING, worker, updated_at=updated_at)
    runtime.statuses[name] = replace(runtime.statuses[name], stages=stages)


def test_reconcile_stores_the_counts_and_the_status_api_shows_them(runtime, spec, api):
    start(spec, "orders")
    runtime.heartbeat("w1", at=NOW)
    services.reconcile(runtime=runtime, now=NOW)
    status = api.get("/api/v1/channels/orders/status").json()
    assert status["stages"] == []  # never ran

    report(runtime, "orders", STAGES)
    services.reconcile(runtime=runtime, now=NOW)

    assert Connector.objects.get(runtime_id="orders").stage_metrics == STAGES
    status = api.get("/api/v1/channels/orders/status").json()
    assert status["stages"] == STAGES
    listed = api.get("/api/v1/channels/?expand=status").json()["results"]
    assert listed[0]["status"]["stages"] == STAGES

    # Newer counts replace the old ones, even when nothing else in the status changed.
    later = [{**stage, "in": stage["in"] * 2} for stage in STAGES]
    report(runtime, "orders", later)
    services.reconcile(runtime=runtime, now=NOW)
    assert [s["in"] for s in api.get("/api/v1/channels/orders/status").json()["stages"]] == [
        20,
        18,
        8,
    ]


def test_storing_counts_keeps_the_query_count_constant(
    runtime, spec, django_assert_max_num_queries
):
    runtime.heartbeat("w1", at=NOW)
    names = [f"c{i}" for i in range(30)]
    start(spec, *names)
    services.reconcile(runtime=runtime, now=NOW)
    for name in names:
        report(runtime, name, STAGES)

    # As without counts: the pass, and its health refresh (its recent failures one query).
    with django_assert_max_num_queries(12):
        services.reconcile(runtime=runtime, now=NOW)

    assert all(c.stage_metrics == STAGES for c in Connector.objects.all())


def test_the_status_schema_documents_the_stages(api):
    body = api.get("/api/schema/", {"format": "json"}).json()
    stage = body["components"]["schemas"]["StageCounts"]
    assert list(stage["properties"]) == [
        "stage",
        "index",
        "type",
        "in",
        "out",
        "failed",
        "in_per_second",
        "out_per_second",
    ]
    status = body["components"]["schemas"]["ChannelStatus"]["properties"]["stages"]
    assert status["items"]["$ref"] == "#/components/schemas/StageCounts"
