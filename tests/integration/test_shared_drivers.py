"""Channels side by side in one shared Spark driver, on the real stack (Kafka, Redis, Spark,
Celery, the web API): a neighbour's failure, stop and start leave a channel running and
delivering; a new channel on a topic that does not exist yet waits for it and skips nothing;
an available-now channel reads what is there and stops; a team's channel that ends its
driver interrupts no other team's channel (each team's channels run in its own drivers).

The kill -9 of a shared driver (every channel it hosted recovers, nothing lost) is in
tests/faults/test_stack_faults.py (the fault suite).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer

from tests.integration.conftest import Stack, manage
from tests.integration.test_walking_skeleton import consume_all, make_topic
from tests.support.orders import PATTERN, produce_range, selected
from tests.support.processes import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def kafka_spec(
    kafka: str,
    source: str,
    sink: str,
    *,
    transforms: list[dict] | None = None,
    starting: str = "earliest",
    runtime: dict | None = None,
) -> dict:
    spec = {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": kafka,
                "topics": [source],
                "starting_offsets": starting,
            },
        },
        "transforms": transforms
        if transforms is not None
        else [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": kafka, "topic": sink}},
    }
    if runtime:
        spec["runtime"] = runtime
    return spec


class Channels:
    """Channels this test made through the API (stopped and deleted at the end)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.http = stack.session()
        self.names: list[str] = []

    def create(
        self, prefix: str, spec: dict, target: str = "RUNNING", team: str | None = None
    ) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        body = {"name": name, "spec": spec, "target_state": target}
        if team is not None:
            body["team"] = team
        created = self.http.post(f"{self.stack.api}/channels/", json=body, timeout=10)
        assert created.status_code == 201, created.text
        self.names.append(name)
        return name

    def status(self, name: str) -> dict:
        return self.http.get(f"{self.stack.api}/channels/{name}/status", timeout=5).json()

    def act(self, name: str, action: str) -> None:
        response = self.http.post(f"{self.stack.api}/channels/{name}/{action}", timeout=10)
        assert response.status_code in (200, 202), response.text

    def wait_state(self, name: str, state: str, timeout: float = 180) -> dict:
        def reached() -> dict | None:
            status = self.status(name)
            return status if status["state"] == state else None

        try:
            return wait_until(reached, timeout, interval=0.5, what=f"{name} {state}")
        except TimeoutError:
            pytest.fail(f"{name} not {state}: {self.status(name)}\n{self.stack.logs()}")

    def offsets(self, name: str) -> int:
        return sum(task["offset"] or 0 for task in self.status(name)["tasks"])

    def events(self, name: str) -> list[dict]:
        url = f"{self.stack.api}/channels/{name}/lifecycle/?limit=200"
        return self.http.get(url, timeout=5).json()["results"]

    def cleanup(self) -> None:
        for name in self.names:
            self.http.post(f"{self.stack.api}/channels/{name}/stop", timeout=10)
            self.http.delete(f"{self.stack.api}/channels/{name}/", timeout=10)


@pytest.fixture
def channels(stack: Stack):
    made = Channels(stack)
    yield made
    made.cleanup()


def topics(stack: Stack, *prefixes: str) -> list[str]:
    suffix = uuid.uuid4().hex[:6]
    names = [f"{prefix}-{suffix}" for prefix in prefixes]
    for name in names:
        make_topic(stack.kafka, name, 2)
    return names


def grows(read: Callable[[], int], what: str, timeout: float = 90) -> None:
    before = read()
    wait_until(lambda: read() > before, timeout, interval=0.5, what=what)


def test_a_neighbour_failing_stopping_and_starting_leaves_a_channel_running(
    stack: Stack, channels: Channels
) -> None:
    src_a, out_a, src_b, out_b = topics(stack, "sd-a-in", "sd-a-out", "sd-b-in", "sd-b-out")
    a = channels.create("shared-a", kafka_spec(stack.kafka, src_a, out_a))
    cast = [{"type": "cast", "config": {"fields": {"data.amount": "long"}}}]
    b = channels.create("shared-b", kafka_spec(stack.kafka, src_b, out_b, transforms=cast))
    first = channels.wait_state(a, "RUNNING")
    channels.wait_state(b, "RUNNING")
    driver = first["driver_id"]
    assert driver and channels.status(b)["driver_id"] == driver, "both in one shared driver"

    produce_range(stack.kafka, src_a, 0, 300)
    grows(lambda: channels.offsets(a), f"{a} reading")

    # b fails at run time (a cast error under tolerance none): a is untouched.
    poison = Producer({"bootstrap.servers": stack.kafka})
    poison.produce(src_b, json.dumps({"seq": 1, "amount": "not a number"}).encode())
    poison.flush(10)
    wait_until(
        lambda: any(e["to_state"] == "FAILED" for e in channels.events(b)),
        120,
        interval=1,
        what=f"{b} FAILED",
    )
    failed = [e for e in channels.events(b) if e["to_state"] == "FAILED"]
    assert "cannot cast" in failed[0]["reason"], failed
    produce_range(stack.kafka, src_a, 300, 600)
    grows(lambda: channels.offsets(a), f"{a} still reading beside a failed neighbour")
    status = channels.status(a)
    assert status["state"] == "RUNNING" and status["driver_id"] == driver
    assert [e for e in channels.events(a) if e["to_state"] != "RUNNING"] == [] or all(
        e["to_state"] in ("UNASSIGNED", "RUNNING") for e in channels.events(a)
    ), channels.events(a)

    # b stopped, then started with a fixed spec: a keeps reading all along.
    channels.act(b, "stop")
    channels.wait_state(b, "STOPPED")
    produce_range(stack.kafka, src_a, 600, 900)
    grows(lambda: channels.offsets(a), f"{a} reading while its neighbour is stopped")
    fixed = kafka_spec(stack.kafka, src_b, out_b, transforms=[])
    updated = channels.http.put(
        f"{stack.api}/channels/{b}/", json={"name": b, "spec": fixed}, timeout=10
    )
    assert updated.status_code == 200, updated.text
    channels.act(b, "start")
    channels.wait_state(b, "RUNNING")
    assert channels.status(b)["driver_id"] == driver, "back in the same warm driver"
    produce_range(stack.kafka, src_a, 900, 1200)
    expected = [seq for seq in range(1200) if selected(seq)]
    delivered = consume_all(stack.kafka, out_a, len(expected), timeout=120)
    assert sorted({json.loads(v)["seq"] for v in delivered}) == expected
    assert [e for e in channels.events(a) if e["to_state"] in ("FAILED", "STOPPED")] == []


def test_a_missing_source_topic_is_waited_for_and_read_from_its_first_event(
    stack: Stack, channels: Channels
) -> None:
    suffix = uuid.uuid4().hex[:6]
    source, sink = f"sd-late-in-{suffix}", f"sd-late-out-{suffix}"
    make_topic(stack.kafka, sink, 1)
    name = channels.create(
        "late-topic", kafka_spec(stack.kafka, source, sink, transforms=[], starting="latest")
    )

    def waiting() -> dict | None:
        status = channels.status(name)
        return status if "waiting for source topic" in (status.get("reason") or "") else None

    status = wait_until(waiting, 120, interval=0.5, what="the wait shown")
    assert status["state"] == "UNASSIGNED" and source in status["reason"], status
    make_topic(stack.kafka, source, 2)
    produce_range(stack.kafka, source, 0, 20)  # before the query runs: none may be skipped
    channels.wait_state(name, "RUNNING")
    delivered = consume_all(stack.kafka, sink, 20, timeout=120)
    assert sorted(json.loads(v)["seq"] for v in delivered) == list(range(20))
    # A restart before any new event resolves nothing again: nothing read twice, none skipped.
    channels.act(name, "restart")
    channels.wait_state(name, "RUNNING")
    produce_range(stack.kafka, source, 20, 30)
    delivered = consume_all(stack.kafka, sink, 30, timeout=120)
    assert sorted(json.loads(v)["seq"] for v in delivered) == list(range(30))


def test_an_available_now_channel_reads_what_is_there_and_stops(
    stack: Stack, channels: Channels
) -> None:
    source, sink = topics(stack, "sd-backfill-in", "sd-backfill-out")
    produce_range(stack.kafka, source, 0, 900)
    name = channels.create(
        "backfill",
        kafka_spec(stack.kafka, source, sink, runtime={"mode": "available-now"}),
    )
    expected = [seq for seq in range(900) if selected(seq)]
    delivered = consume_all(stack.kafka, sink, len(expected), timeout=180)
    assert sorted(json.loads(v)["seq"] for v in delivered) == expected

    def stopped() -> dict | None:
        status = channels.status(name)
        return (
            status if status["state"] == "STOPPED" and status["target_state"] == "STOPPED" else None
        )

    status = wait_until(stopped, 120, interval=1, what="the backfill STOPPED by itself")
    assert "available-now run finished" in status["reason"], status
    assert any("available-now run finished" in e["reason"] for e in channels.events(name))


def test_a_real_time_channel_delivers_from_a_driver_of_its_own(
    stack: Stack, channels: Channels
) -> None:
    source, sink = topics(stack, "sd-rt-in", "sd-rt-out")
    runtime = {"mode": "real-time", "interval_seconds": 10}
    name = channels.create("real-time", kafka_spec(stack.kafka, source, sink, runtime=runtime))
    status = channels.wait_state(name, "RUNNING")
    cluster = channels.http.get(f"{stack.api}/cluster/", timeout=10).json()
    drivers = {d["driver_id"]: d for w in cluster["runtime_workers"] for d in w["drivers"]}
    driver = drivers[status["driver_id"]]
    assert (driver["isolation"], driver["cores"]) == ("dedicated", 2), driver  # 2 partitions
    produce_range(stack.kafka, source, 0, 600)
    expected = [seq for seq in range(600) if selected(seq)]
    delivered = consume_all(stack.kafka, sink, len(expected), timeout=120)
    assert sorted({json.loads(v)["seq"] for v in delivered}) == expected


def oom_spec(kafka: str, source: str, sink: str) -> dict:
    """A channel whose every record ends its driver's JVM by a means the save-time checks
    leave: each call's size is capped, not a row's. 450 repeats of 10,000 characters (4.5 MB
    per row), then 400 copies of that in one concat (1.8 GB, more than a 1 GiB heap): an
    OutOfMemoryError in a task, which Spark answers by exiting the JVM."""
    wide = ", ".join(["repeat('x', 10000)"] * 450)
    copies = ", ".join(["data:s::string"] * 400)
    return kafka_spec(
        kafka,
        source,
        sink,
        transforms=[
            {"type": "sql", "config": {"expressions": [f"concat(id, {wide}) AS s"]}},
            {"type": "sql", "config": {"expressions": [f"length(concat({copies})) AS n"]}},
        ],
    )


def test_a_channel_whose_task_ends_its_driver_costs_only_itself(
    stack: Stack, channels: Channels
) -> None:
    """Team ``payments``' offender brings its shared driver down twice, beside two neighbours
    of its team and a channel of team ``search``: the neighbours come back at once in their
    team's spare, the offender is quarantined in a driver of its own, and the other team's
    channel is never interrupted (its own driver, the same process, RUNNING throughout)."""
    suffix = uuid.uuid4().hex[:6]
    pay, search = f"payments-{suffix}", f"search-{suffix}"
    create = f"[Team.objects.create(name=n) for n in {(pay, search)!r}]"
    manage(stack.env, "shell", "-c", f"from console.models import Team; {create}")
    src_a, out_a, src_b, out_b, src_x, out_x, src_o, out_o = topics(
        stack,
        "sd-na-in",
        "sd-na-out",
        "sd-nb-in",
        "sd-nb-out",
        "sd-oom-in",
        "sd-oom-out",
        "sd-other-in",
        "sd-other-out",
    )
    a = channels.create("neighbour-a", kafka_spec(stack.kafka, src_a, out_a), team=pay)
    b = channels.create("neighbour-b", kafka_spec(stack.kafka, src_b, out_b), team=pay)
    offender = channels.create("offender", oom_spec(stack.kafka, src_x, out_x), team=pay)
    other = channels.create("other-team", kafka_spec(stack.kafka, src_o, out_o), team=search)
    driver = channels.wait_state(a, "RUNNING")["driver_id"]
    channels.wait_state(b, "RUNNING")
    channels.wait_state(offender, "RUNNING")
    assert {channels.status(n)["driver_id"] for n in (b, offender)} == {driver}
    others = channels.wait_state(other, "RUNNING")["driver_id"]
    assert others != driver, "two teams' channels never share a driver"

    def drivers() -> dict[str, dict]:
        cluster = channels.http.get(f"{stack.api}/cluster/", timeout=10).json()
        return {d["driver_id"]: d for w in cluster["runtime_workers"] for d in w["drivers"]}

    before = drivers()
    assert (before[driver]["team"], before[others]["team"]) == (pay, search)
    pid = before[others]["pid"]
    produce_range(stack.kafka, src_a, 0, 300)
    produce_range(stack.kafka, src_b, 0, 300)
    produce_range(stack.kafka, src_o, 0, 300)  # the other team reads while a's driver goes down
    grows(lambda: channels.offsets(a), f"{a} reading")

    produce_range(stack.kafka, src_x, 0, 1)  # the record that ends the JVM
    failed = wait_until(
        lambda: [e for e in channels.events(offender) if e["to_state"] == "FAILED"],
        180,
        interval=0.5,
        what=f"{offender} FAILED",
    )
    reason = failed[0]["reason"]
    assert "java.lang.OutOfMemoryError" in reason and "in a task of connector" in reason, reason

    def moved(name: str) -> dict | None:
        status = channels.status(name)
        moved = status["state"] == "RUNNING" and status["driver_id"] not in (None, driver)
        return status if moved else None

    for name in (a, b):  # placed again at once, in another driver of their team
        wait_until(lambda name=name: moved(name), 60, interval=0.25, what=f"{name} back")
    crashed = datetime.fromisoformat(failed[0]["created_at"])
    back = (datetime.now(UTC) - crashed).total_seconds()
    print(f"neighbours RUNNING in another driver {back:.1f} s after the offender FAILED")
    refuge = channels.status(a)["driver_id"]  # the spare the worker kept for the team
    assert drivers()[refuge]["team"] == pay

    # Its restart policy brings it back into a shared driver: the second crash quarantines it.
    quarantined = wait_until(
        lambda: [e for e in channels.events(offender) if "Quarantined" in (e["reason"] or "")],
        240,
        interval=1,
        what=f"{offender} quarantined",
    )
    assert "brought down 2 shared drivers" in quarantined[0]["reason"]

    # From then on it runs (and dies) in a driver of its own: no third shared crash.
    def died_alone() -> list[dict]:
        after = [e for e in channels.events(offender) if e["id"] > quarantined[0]["id"]]
        return [e for e in after if e["to_state"] == "FAILED" and "OutOfMemoryError" in e["reason"]]

    alone = wait_until(died_alone, 120, interval=1, what=f"{offender} dead in its own driver")
    assert "in a task of connector" not in alone[0]["reason"], alone  # not a shared driver
    shared = {channels.status(n)["driver_id"] for n in (a, b)}
    # On probation, its second crash was in an empty shared driver: not the neighbours'.
    assert shared == {refuge}, (shared, refuge)
    # While it runs in a driver of its own, the console says why.
    said = [e["reason"] for e in channels.events(offender) if e["to_state"] == "RUNNING"]
    assert any(r.startswith("Quarantined: its tasks brought down") for r in said), said
    produce_range(stack.kafka, src_a, 300, 600)
    produce_range(stack.kafka, src_b, 300, 600)
    produce_range(stack.kafka, src_o, 300, 600)
    expected = [seq for seq in range(600) if selected(seq)]
    for sink, name in ((out_a, a), (out_b, b), (out_o, other)):
        delivered = consume_all(stack.kafka, sink, len(expected), timeout=180)
        assert sorted({json.loads(v)["seq"] for v in delivered}) == expected, name
        assert not [e for e in channels.events(name) if e["to_state"] == "FAILED"], name
    assert {channels.status(n)["driver_id"] for n in (a, b)} == shared, "no third crash"
    channels.act(offender, "stop")
    # The other team's channel was never interrupted through both crashes: the same driver,
    # the same process, RUNNING once and never left.
    assert (drivers()[others]["pid"], channels.status(other)["driver_id"]) == (pid, others)
    moves = sorted(
        (e["id"], e["to_state"]) for e in channels.events(other) if e["subject_type"] == "connector"
    )
    running = [move for move in moves if move[1] == "RUNNING"]
    assert len(running) == 1 and moves[-1] == running[0], moves


def test_a_kafka_to_kafka_channel_keeps_the_record_keys(stack: Stack, channels: Channels) -> None:
    from confluent_kafka import Consumer

    source, sink = topics(stack, "keys-in", "keys-out")
    name = channels.create("keys", kafka_spec(stack.kafka, source, sink, transforms=[]))
    producer = Producer({"bootstrap.servers": stack.kafka, "acks": "all"})
    sent = {}
    for seq in range(200):
        key = None if seq % 10 == 9 else f"customer-{seq % 7}".encode()
        producer.produce(source, json.dumps({"seq": seq}).encode(), key=key)
        sent[seq] = key
    assert producer.flush(60) == 0
    channels.wait_state(name, "RUNNING")

    consumer = Consumer(
        {
            "bootstrap.servers": stack.kafka,
            "group.id": f"check-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([sink])
    got: dict[int, tuple[bytes | None, int]] = {}
    order: dict[bytes, list[int]] = {}
    try:
        deadline = datetime.now(UTC).timestamp() + 180
        while len(got) < len(sent) and datetime.now(UTC).timestamp() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            seq = json.loads(message.value())["seq"]
            got[seq] = (message.key(), message.partition())
            order.setdefault(message.key(), []).append(seq)
    finally:
        consumer.close()
    assert len(got) == len(sent)
    for seq, key in sent.items():
        if key is None:  # a record without a key: keyed by its event id (topic/partition/offset)
            assert got[seq][0].decode().startswith(f"{source}/"), got[seq]
        else:
            assert got[seq][0] == key, (seq, got[seq])
    keyed = {key for key in sent.values() if key is not None}
    for key in keyed:  # each key in one output partition, in the order it was sent
        assert len({got[seq][1] for seq, k in sent.items() if k == key}) == 1, key
        assert order[key] == sorted(order[key]), key
