"""Every bulk action (``console.services.fleet.bulk_lifecycle``) ends exactly as the same
request done one channel at a time with the single services: the same per-channel results,
channel targets and health levels, connectors (revision, worker, state, generation, restart
count), tasks, lifecycle events (who, from, to, why, in order per subject) and runtime state
(deployments, targets, generations and the calls each connector got), with the runtime up and
down; and the bulk request audits each channel with its own outcome.

Both run the one lifecycle path (:mod:`console.services.transitions`), a single service
being its list of one: the equivalence holds by construction, and this test keeps it so."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from console import services
from console.choices import ConnectorState, WorkerService
from console.errors import InvalidTransition, RuntimeUnavailable, ServiceError
from console.models import AuditEvent, Channel, Connector, LifecycleEvent, Task, Worker
from console.runtime import set_runtime
from console.services import channel_health
from console.services.fleet import ACTIONS, bulk_lifecycle
from tests.unit.console.fakes import FakeRuntime

pytestmark = pytest.mark.django_db

#: The request: every kind of channel below, a missing one and a repeated one, in an order
#: where each start's placement depends on the starts before it.
NAMES = [
    "stopped-on-live",
    "new-1",
    "running",
    "failed",
    "nope",
    "paused",
    "stopped-on-dead",
    "new-2",
    "on-draining",
    "stopped-on-draining",
    "drifted",
    "finished",
    "new-3",
    "running",
]


def build(spec: dict) -> None:
    """w1, w2 alive in service (w1 busier), w3 alive but draining, w4 dead; one channel of
    each kind a bulk action meets."""
    Worker.objects.create(worker_id="w1", state="ALIVE")
    Worker.objects.create(worker_id="w2", state="ALIVE")
    Worker.objects.create(worker_id="w3", state="ALIVE", service=WorkerService.DRAINING)
    Worker.objects.create(worker_id="w4", state="DEAD")
    for name in ("new-1", "new-2", "new-3"):
        services.create_channel(name=name, spec=spec)
    placed = {
        "running": ("w1", ConnectorState.RUNNING, "start"),
        "failed": ("w2", ConnectorState.FAILED, "start"),
        "paused": ("w1", ConnectorState.PAUSED, "pause"),
        "stopped-on-dead": ("w4", ConnectorState.STOPPED, "stop"),
        "on-draining": ("w3", ConnectorState.RUNNING, "start"),
        "stopped-on-draining": ("w3", ConnectorState.STOPPED, "stop"),
        "drifted": ("w2", ConnectorState.RUNNING, "start"),
        "finished": ("w1", ConnectorState.STOPPED, "stop"),
        "stopped-on-live": ("w2", ConnectorState.STOPPED, "stop"),
        "busy-1": ("w1", ConnectorState.RUNNING, "start"),
    }
    for name, (worker, state, then) in placed.items():
        channel = services.create_channel(name=name, spec=spec)
        services.start_channel(channel)
        if then == "pause":
            services.pause_channel(channel)
        elif then == "stop":
            services.stop_channel(channel)
        Connector.objects.filter(channel=channel).update(
            worker=worker, state=state, restart_attempts=2, finished=name == "finished"
        )
        connector = Connector.objects.get(channel=channel)
        for task_id in range(2):
            Task.objects.create(connector=connector, task_id=task_id, state=state, lag=7)
    drifted = Channel.objects.get(name="drifted")
    services.update_channel(drifted, spec={**spec, "transforms": []})
    channel_health.refresh()


def snapshot(runtime: FakeRuntime, results: list) -> dict[str, Any]:
    def by_subject(rows: list[tuple]) -> dict[str, list[tuple]]:
        found: dict[str, list[tuple]] = {}
        for subject, *rest in rows:
            found.setdefault(subject, []).append(tuple(rest))
        return found

    calls: dict[str, list[tuple]] = {}
    for name, first, *rest in runtime.calls:
        key = first.connector_id if name == "deploy" else first
        detail = (
            (name, first.revision, first.worker_id, first.target_state)
            if name == "deploy"
            else (name, *rest)
        )
        calls.setdefault(key, []).append(detail)
    return {
        "results": results,
        "channels": sorted(Channel.objects.values_list("name", "target_state", "health_level")),
        "connectors": sorted(
            Connector.objects.values_list(
                "runtime_id",
                "channel__name",
                "revision__number",
                "state",
                "worker_id",
                "generation",
                "restart_attempts",
                "finished",
            )
        ),
        "tasks": sorted(Task.objects.values_list("connector__runtime_id", "task_id", "state")),
        "events": by_subject(
            list(
                LifecycleEvent.objects.order_by("created_at", "id").values_list(
                    "subject_id",
                    "subject_type",
                    "channel__name",
                    "from_state",
                    "to_state",
                    "actor",
                    "reason",
                )
            )
        ),
        "audit": sorted(
            AuditEvent.objects.values_list("object_id", "action", "outcome", "changes", "via")
        ),
        "runtime": {
            "deployments": {
                cid: (d.channel, d.revision, d.target_state, d.worker_id, d.generation, d.discovery)
                for cid, d in runtime.deployments.items()
            },
            "targets": dict(runtime.targets),
            "assignments": dict(runtime.assignments),
            "generations": dict(runtime.generations),
            "calls": calls,
        },
    }


SINGLE_SERVICES = {
    "start": services.start_channel,
    "stop": services.stop_channel,
    "pause": services.pause_channel,
    "resume": services.resume_channel,
    "restart": services.restart_channel,
    "delete": services.delete_channel,
}
TARGET_OF = {"start": "RUNNING", "stop": "STOPPED", "pause": "PAUSED", "resume": "RUNNING"}


def one_request(action: str, name: str, user) -> dict[str, Any]:
    """``action`` on the channel ``name`` through its single service, answered as its own
    endpoint answers (202 or 204, 404, 409 or 503 with the error's message)."""
    channel = Channel.objects.filter(name=name).first()
    if channel is None:
        return answered(name, 404, "No channel has this name.")
    try:
        with transaction.atomic():
            SINGLE_SERVICES[action](channel, user=user)
    except InvalidTransition as exc:
        return answered(name, 409, str(exc))
    except RuntimeUnavailable as exc:
        return answered(name, 503, str(exc) or "The runtime is unavailable.")
    except ServiceError as exc:
        return answered(name, 409, str(exc))
    if action == "delete":
        return answered(name, 204)
    return answered(name, 202, target_state=TARGET_OF.get(action))


def answered(
    name: str, status: int, error: str = "", target_state: str | None = None
) -> dict[str, Any]:
    return {"name": name, "status": status, "error": error, "target_state": target_state}


def run(action: str, spec: dict, user, *, bulk: bool, down: bool) -> dict[str, Any]:
    """Build the fleet, act on it (one bulk request, or one request per channel), take the
    snapshot and undo it all."""
    with transaction.atomic():
        runtime = FakeRuntime()
        set_runtime(runtime)
        build(spec)
        runtime.calls.clear()
        if down:
            runtime.unavailable = ConnectionError("redis is down")
        if bulk:
            results = [
                {key: value for key, value in result.__dict__.items() if key in RESULT_KEYS}
                for result in bulk_lifecycle(action, NAMES, user=user)
            ]
        else:
            results = [one_request(action, name, user) for name in dict.fromkeys(NAMES)]
        taken = snapshot(runtime, results)
        transaction.set_rollback(True)
    return taken


RESULT_KEYS = ("name", "status", "error", "target_state")


@pytest.mark.parametrize("down", [False, True], ids=["runtime-up", "runtime-down"])
@pytest.mark.parametrize("action", ACTIONS)
def test_a_bulk_action_ends_as_one_request_per_channel_would(action, down, spec, user):
    one_by_one = run(action, spec, user, bulk=False, down=down)
    bulk = run(action, spec, user, bulk=True, down=down)

    for key in one_by_one:
        if key != "audit":  # the single services audit nothing: their endpoints do
            assert bulk[key] == one_by_one[key], key
    results = one_by_one["results"]
    assert bulk["audit"] == sorted(
        (r["name"], f"channel.{action}", r["status"], _changes(r), "bulk") for r in results
    )
    statuses = {result["status"] for result in results}
    assert 404 in statuses  # "nope"
    assert len(results) == len(set(NAMES))
    if down and action != "delete":
        assert 503 in statuses


def _changes(result: dict[str, Any]) -> dict[str, Any]:
    return {"bulk": True, **({"error": result["error"]} if result["error"] else {})}


def test_the_scenario_reaches_every_rule(spec, user):
    """The equivalence above is not vacuous: starts place on the least loaded worker one after
    the other, a drifted channel deploys its new revision, a failed or finished one restarts,
    pause and restart refuse a STOPPED channel."""
    started = run("start", spec, user, bulk=True, down=False)
    reasons = [event[-1] for events in started["events"].values() for event in events]
    # stopped-on-live, started first, counts on w2 (2 → 3): new-1 goes to w1 (3, then by id)
    assert "assigned to worker w1 (least loaded, hosting 3)" in reasons
    assert "assigned to worker w2 (least loaded, hosting 3)" in reasons
    assert "deploying revision 2 (was 1)" in reasons
    assert "restarting the failed connector (generation 1)" in reasons
    assert "restarting the finished available-now run again (generation 1)" in reasons
    workers = {row[0]: row[4] for row in started["connectors"]}
    assert workers["on-draining"] == "w3"  # a hosted channel stays on its draining worker
    assert workers["stopped-on-draining"] in {"w1", "w2"}
    paused = {
        r["name"]: r["status"] for r in run("pause", spec, user, bulk=True, down=False)["results"]
    }
    assert paused["new-1"] == 409 and paused["running"] == 202
    restarted = run("restart", spec, user, bulk=True, down=False)
    assert {r["name"]: r["status"] for r in restarted["results"]}["new-2"] == 409
    assert ("failed", 0, "RESTARTING") in restarted["tasks"]
