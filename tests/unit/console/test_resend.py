"""Issue 28, "nothing stops silently": the console re-sends its desired state whenever the
runtime lacks it. The control loop against the Spark runtime on a real Redis (a key prefix of
the test's own); the store emptied by deleting the prefix's keys, as a Redis restarted empty
would leave it."""

from __future__ import annotations

import pytest
import redis
from django.utils import timezone

from console import services
from console.choices import ConnectorState, RunKind, RunState, SubjectType, WorkerState
from console.models import Channel, ChannelRun, Connector, LifecycleEvent, Worker
from console.services import resend as resend_module
from console.services import starts
from console.services.run_executor import execute_runs
from runtime_adapter.base import ConnectorStatus, Deployment
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State
from tests.unit.console.conftest import Clock

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _forget_checked(monkeypatch):
    monkeypatch.setattr(resend_module, "_checked", None)


def empty(runtime: SparkRuntime) -> None:
    """What a Redis restarted empty leaves of the runtime's keys: nothing."""
    client = runtime.store.redis
    keys = list(client.scan_iter(f"{runtime.store.prefix}:*"))
    if keys:
        client.delete(*keys)


def desired(runtime: SparkRuntime) -> dict[str, Deployment]:
    return runtime.store.deployments()


def fleet(clock: Clock, spec: dict) -> dict[str, Deployment]:
    """Two live workers; ``a`` RUNNING (restarted once: generation 1), ``b`` PAUSED, ``c``
    stopped after it ran; one pass sets the epoch token. Returns the store's desired state."""
    clock.heartbeat("w1", "w2")
    clock.reconcile()
    for name in ("a", "b", "c"):
        services.start_channel(services.create_channel(name=name, spec=spec))
    services.pause_channel(Channel.objects.get(name="b"))
    services.stop_channel(Channel.objects.get(name="c"))
    services.restart_channel(Channel.objects.get(name="a"))
    clock.heartbeat("w1", "w2")
    clock.reconcile()
    before = desired(clock.runtime)
    assert before["a"].generation == 1 and Connector.objects.get(runtime_id="a").generation == 1
    assert {d.worker_id for d in before.values()} == {"w1", "w2"}
    assert clock.runtime.store.epoch() is not None
    return before


class Commands:
    """The commands Redis ran (``INFO commandstats``), from a reset on: the Redis of the
    session serves one test at a time."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        client.config_resetstat()

    def counts(self) -> dict[str, int]:
        stats = self.client.info("commandstats")
        return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


WRITES = {"hset", "hsetnx", "hincrby", "hdel", "set", "del", "evalsha", "eval", "rpush"}


def test_an_emptied_store_is_repopulated_within_one_pass(clock, spec):
    before = fleet(clock, spec)
    token = clock.runtime.store.epoch()

    empty(clock.runtime)
    report = clock.reconcile()

    assert desired(clock.runtime) == before  # generations, targets, workers, specs, checkpoints
    assert report.resent == 3
    assert clock.runtime.store.epoch() not in (None, token)
    # Nobody heartbeated since: the workers still hold their connectors (no false death).
    assert set(Worker.objects.values_list("state", flat=True)) == {WorkerState.ALIVE}
    assert dict(Connector.objects.values_list("runtime_id", "worker")) == {
        d.connector_id: d.worker_id for d in before.values()
    }
    reasons = list(
        LifecycleEvent.objects.filter(
            subject_type=SubjectType.CONNECTOR, reason__startswith="runtime store had lost"
        ).values_list("subject_id", "reason")
    )
    assert sorted(subject for subject, _ in reasons) == ["a", "b", "c"]
    assert dict(reasons)["a"] == (
        "runtime store had lost its desired state: re-sent revision 1, target RUNNING, "
        f"worker {before['a'].worker_id}, generation 1"
    )
    # A driver of the console's generation reports again, as before the loss.
    status = ConnectorStatus("a", State.RUNNING, before["a"].worker_id, generation=1)
    assert clock.runtime.store.report(status)


def test_the_re_send_is_logged_with_its_counts(clock, spec, caplog):
    fleet(clock, spec)
    empty(clock.runtime)

    clock.reconcile()

    assert "runtime store had lost its desired state: re-sent 3 connectors" in caplog.text


def test_a_partial_loss_is_re_sent_and_the_token_kept(clock, spec):
    before = fleet(clock, spec)
    token = clock.runtime.store.epoch()
    client = clock.runtime.store.redis
    client.hdel(clock.runtime.store.key("desired:spec"), "b")
    client.hdel(clock.runtime.store.key("desired:generation"), "a")

    report = clock.reconcile()

    assert desired(clock.runtime) == before
    assert report.resent == 2
    assert clock.runtime.store.epoch() == token
    reason = LifecycleEvent.objects.filter(subject_id="b").latest("id").reason
    assert reason.startswith("runtime store had lost part of its desired state: re-sent")


def test_no_re_send_and_no_write_when_nothing_is_missing(clock, spec):
    fleet(clock, spec)
    clock.heartbeat("w1", "w2")
    clock.reconcile()  # the heartbeats' change written
    commands = Commands(clock.runtime.store.redis)

    report = clock.reconcile()

    counts = commands.counts()
    assert report.resent == 0
    assert not WRITES & {name for name, calls in counts.items() if calls}, counts
    assert "hkeys" not in counts  # the ids are read only when a count falls short
    assert (counts["get"], counts["hlen"]) == (1, 4)  # the one cheap check


def test_a_fresh_installation_gets_its_token_on_its_first_pass(clock):
    assert clock.runtime.store.epoch() is None

    report = clock.reconcile()

    assert report.resent == 0
    assert clock.runtime.store.epoch() is not None
    assert not LifecycleEvent.objects.filter(reason__startswith="runtime store").exists()


class RoundTrips:
    """Counts the round trips to Redis: each pipeline executed, each command sent alone."""

    def __init__(self, monkeypatch) -> None:
        self.count = 0
        pipeline_execute = redis.client.Pipeline.execute
        command = redis.Redis.execute_command

        def executed(pipe, *args, **kwargs):
            self.count += 1
            return pipeline_execute(pipe, *args, **kwargs)

        def sent(client, *args, **kwargs):
            if not isinstance(client, redis.client.Pipeline):
                self.count += 1
            return command(client, *args, **kwargs)

        monkeypatch.setattr(redis.client.Pipeline, "execute", executed)
        monkeypatch.setattr(redis.Redis, "execute_command", sent)


def resend_round_trips(clock: Clock, spec: dict, channels: int) -> int:
    clock.heartbeat("w1", "w2")
    clock.reconcile()
    names = [f"c{index}" for index in range(channels)]
    for name in names:
        services.create_channel(name=name, spec=spec)
    starts.start(list(Channel.objects.filter(name__in=names)), "system")
    clock.heartbeat("w1", "w2")
    clock.reconcile()
    assert len(desired(clock.runtime)) == channels
    empty(clock.runtime)
    with pytest.MonkeyPatch.context() as monkeypatch:
        trips = RoundTrips(monkeypatch)
        report = clock.reconcile()

    assert report.resent == channels
    assert len(desired(clock.runtime)) == channels
    return trips.count


def test_the_re_send_takes_the_same_round_trips_for_few_or_many(clock, spec):
    few = resend_round_trips(clock, spec, 3)
    Channel.objects.all().delete()
    empty(clock.runtime)
    many = resend_round_trips(clock, spec, 60)

    assert many == few


def test_a_running_replay_is_re_sent_with_its_bounds(clock, spec):
    fleet(clock, spec)
    channel = Channel.objects.get(name="a")
    run = ChannelRun.objects.create(
        channel=channel,
        kind=RunKind.REPLAY,
        revision=channel.latest_revision_obj(),
        start_offsets={"orders": {"0": 0}},
        end_offsets={"orders": {"0": 10}},
        created_by="t",
    )
    execute_runs(runtime=clock.runtime)
    run.refresh_from_db()
    assert run.state == RunState.RUNNING
    sent = desired(clock.runtime)[run.runtime_id]

    empty(clock.runtime)
    report = clock.reconcile()

    assert report.resent == 4
    again = desired(clock.runtime)[run.runtime_id]
    assert again == sent
    assert again.run is not None and again.run["end_offsets"] == {"orders": {"0": 10}}


# -- counters kept only by the runtime -----------------------------------------------------------


def running(clock: Clock, name: str, **counts: int) -> None:
    """The connector's driver reports it RUNNING (after counting ``counts`` more)."""
    store = clock.runtime.store
    deployment = store.deployment(name)
    assert deployment is not None
    store.add_dead_letters(name, counts.get("dead_letters", 0))
    store.add_sink_retries(name, counts.get("sink_retries", 0))
    status = ConnectorStatus(
        name,
        State.RUNNING,
        deployment.worker_id,
        generation=deployment.generation,
        report_interval=10.0,
    )
    assert store.report(status)


def totals(name: str) -> tuple[int, int]:
    connector = Connector.objects.get(runtime_id=name)
    return connector.dead_letters, connector.sink_retries


def test_totals_never_go_backwards_when_the_store_is_emptied(clock, spec):
    fleet(clock, spec)
    running(clock, "a", dead_letters=7, sink_retries=3)
    clock.reconcile()
    assert totals("a") == (7, 3)

    empty(clock.runtime)
    clock.runtime.store.add_dead_letters("a", 2)  # the driver kept counting meanwhile
    clock.reconcile()
    running(clock, "a", dead_letters=1)
    clock.reconcile()

    assert totals("a") == (10, 3)  # 7 + 2 + 1: on from the console's totals
    assert Connector.objects.get(runtime_id="a").state == ConnectorState.RUNNING


def test_totals_the_store_kept_are_not_counted_twice(clock, spec):
    fleet(clock, spec)
    running(clock, "a", dead_letters=7)
    clock.reconcile()
    client = clock.runtime.store.redis
    for name in ("desired:spec", "desired:target", "desired:worker", "desired:generation"):
        client.hdel(clock.runtime.store.key(name), "a")  # its desired state lost, not its counts

    clock.reconcile()
    running(clock, "a")
    clock.reconcile()

    assert totals("a") == (7, 0)


def test_a_generation_the_store_holds_higher_is_not_lowered(clock, spec):
    """A restart asked for between the pass's read and its re-send keeps its generation."""
    fleet(clock, spec)
    client = clock.runtime.store.redis
    client.hdel(clock.runtime.store.key("desired:spec"), "a")
    client.hset(clock.runtime.store.key("desired:generation"), "a", 5)

    clock.reconcile()

    assert desired(clock.runtime)["a"].generation == 5


def test_what_the_console_sent_since_the_loss_stays_and_its_generation_is_raised(clock, spec):
    """Between the loss and the pass: a stop of ``b`` (its target only) and a start of ``a``
    (a deploy writes no generation: 0) reached the emptied store. The re-send fills in the
    rest and raises ``a`` to the console's generation; the stop stays."""
    before = fleet(clock, spec)
    empty(clock.runtime)
    services.stop_channel(Channel.objects.get(name="b"))
    services.start_channel(Channel.objects.get(name="a"))
    assert clock.runtime.store.deployment("a").generation == 0

    report = clock.reconcile()

    after = desired(clock.runtime)
    assert after["a"] == before["a"]  # generation 1 again
    assert after["b"].target_state == "STOPPED" and after["b"].worker_id == before["b"].worker_id
    assert after["c"] == before["c"]
    assert report.resent == 2  # b (its target alone was there) and c; a was whole


def test_totals_lost_alone_are_kept_not_shown_going_backwards(clock, spec):
    """Only the counters' hashes lost (the desired state intact, so nothing is re-sent): the
    console keeps showing its totals until the runtime's count passes them."""
    fleet(clock, spec)
    running(clock, "a", dead_letters=7, sink_retries=3)
    clock.reconcile()
    client = clock.runtime.store.redis
    client.delete(clock.runtime.store.key("deadletters"), clock.runtime.store.key("sinkretries"))

    running(clock, "a", dead_letters=2)
    report = clock.reconcile()

    assert report.resent == 0
    assert totals("a") == (7, 3)


def test_a_connector_whose_worker_is_not_live_is_re_sent_with_none(runtime, spec):
    """The re-send names a connector's worker as a start does
    (:func:`console.services.deployments.deployment_for`): only a worker the pass counts
    live; the pass's placement then gives the others a live one."""
    Worker.objects.create(worker_id="w1", state=WorkerState.ALIVE)
    for name in ("on-live", "on-dead"):
        services.start_channel(services.create_channel(name=name, spec=spec))
    Worker.objects.create(worker_id="w2", state=WorkerState.DEAD)
    Connector.objects.filter(runtime_id="on-dead").update(worker="w2")
    runtime.deployments.clear()  # the runtime lost it all (no epoch token either)

    resend_module.resend_lost(
        runtime,
        lambda: list(Connector.objects.select_related("channel", "revision")),
        {"w1"},
        timezone.now(),
    )

    assert runtime.deployments["on-live"].worker_id == "w1"
    assert runtime.deployments["on-dead"].worker_id is None
