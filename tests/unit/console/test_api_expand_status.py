"""``GET /api/v1/channels/?expand=status``: every channel's status in one call, failures first."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from console import services
from console.choices import ConnectorState
from console.models import Connector, Task, Worker

CHANNELS = "/api/v1/channels/"


def started_channels(spec, names):
    Worker.objects.create(worker_id="w1", state="ALIVE")
    for name in names:
        services.start_channel(services.create_channel(name=name, spec=spec))
    for connector in Connector.objects.all():
        Connector.objects.filter(pk=connector.pk).update(worker="w1", state=ConnectorState.RUNNING)
        for task_id in range(3):
            Task.objects.create(
                connector=connector, task_id=task_id, state="RUNNING", worker_id="w1", offset=10
            )


def test_status_is_included_and_failures_come_first(api, spec):
    started_channels(spec, ["alpha", "bravo", "charlie"])
    Connector.objects.filter(runtime_id="charlie").update(
        state=ConnectorState.FAILED, trace="boom", dead_letters=4
    )

    body = api.get(f"{CHANNELS}?expand=status").json()

    names = [channel["name"] for channel in body["results"]]
    assert names == ["charlie", "alpha", "bravo"]
    charlie = body["results"][0]
    assert charlie["status"]["state"] == "FAILED"
    assert charlie["status"]["trace"] == "boom"
    assert charlie["status"]["dead_letters"] == 4
    assert [task["id"] for task in charlie["status"]["tasks"]] == [0, 1, 2]
    assert "status" not in api.get(CHANNELS).json()["results"][0]


def test_the_number_of_queries_does_not_grow_with_channels(api, spec):
    started_channels(spec, [f"c{n}" for n in range(3)])
    with CaptureQueriesContext(connection) as few:
        assert api.get(f"{CHANNELS}?expand=status").status_code == 200
    started_channels_more = [f"d{n}" for n in range(20)]
    for name in started_channels_more:
        services.start_channel(services.create_channel(name=name, spec=spec))
    with CaptureQueriesContext(connection) as many:
        assert len(api.get(f"{CHANNELS}?expand=status").json()["results"]) == 23
    assert len(many.captured_queries) == len(few.captured_queries)


def test_an_unknown_expansion_is_a_field_error(api):
    response = api.get(f"{CHANNELS}?expand=tasks")
    assert response.status_code == 400
    assert response.json() == {"expand": ["The only expansion is 'status'."]}


def test_status_carries_the_driver_and_the_runtimes_reason(api, spec):
    started_channels(spec, ["alpha", "bravo"])
    Connector.objects.filter(runtime_id="alpha").update(
        state=ConnectorState.UNASSIGNED,
        driver_id="w1-shared-1",
        status_reason="waiting for source topic 'orders' to be created on localhost:9092",
    )
    services.create_channel(name="never-started", spec=spec)

    listed = {
        c["name"]: c["status"] for c in api.get(f"{CHANNELS}?expand=status").json()["results"]
    }
    alone = api.get(f"{CHANNELS}alpha/status").json()

    assert alone == listed["alpha"]
    assert alone["driver_id"] == "w1-shared-1"
    assert alone["reason"].startswith("waiting for source topic 'orders'")
    assert (listed["bravo"]["driver_id"], listed["bravo"]["reason"]) == (None, "")
    assert (listed["never-started"]["driver_id"], listed["never-started"]["reason"]) == (None, "")


def test_the_schema_documents_driver_and_reason(anon):
    schema = anon.get("/api/schema/", {"format": "json"}).json()
    properties = schema["components"]["schemas"]["ChannelStatus"]["properties"]
    assert properties["driver_id"]["nullable"] is True
    assert properties["reason"]["type"] == "string"
