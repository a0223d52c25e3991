"""Issue 28: a runtime worker's liveness is the console's own observation, never its host's
clock against the console's. A heartbeat is fresh when its value changed since the console
last looked; time during which the console could not read the runtime does not count. The
control loop against the Spark runtime on a real Redis; the console's clock is the pass's
``now``, the worker's the time its heartbeat carries."""

from __future__ import annotations

import pytest

from console import services, tasks
from console.choices import ConnectorState, SubjectType, WorkerState
from console.models import Channel, Connector, LifecycleEvent, Worker
from runtime_adapter.base import RuntimeUnavailable
from tests.unit.console.conftest import Clock

pytestmark = pytest.mark.django_db

TIMEOUT = 10


@pytest.fixture(autouse=True)
def session_timeout(settings):
    settings.SLUICE_WORKER_SESSION_TIMEOUT = TIMEOUT


def state(worker_id: str) -> str:
    return Worker.objects.get(worker_id=worker_id).state


@pytest.mark.parametrize("skew", [30.0, -30.0])
def test_a_skewed_clock_is_alive_while_its_heartbeats_change(clock: Clock, skew):
    for _ in range(4 * TIMEOUT):  # 40 s of passes, a heartbeat before each
        clock.heartbeat("w1", skew=skew)
        clock.reconcile()
        assert state("w1") == WorkerState.ALIVE

    assert list(
        LifecycleEvent.objects.filter(subject_type=SubjectType.WORKER).values_list("to_state")
    ) == [(WorkerState.ALIVE,)]


@pytest.mark.parametrize("skew", [30.0, -30.0])
def test_a_skewed_clock_is_dead_a_session_timeout_after_its_heartbeats_stop(clock: Clock, skew):
    clock.heartbeat("w1", skew=skew)
    clock.reconcile()

    clock.reconcile(advance=TIMEOUT)  # the same heartbeat: silent for exactly the timeout
    assert state("w1") == WorkerState.ALIVE
    clock.reconcile(advance=1)

    assert state("w1") == WorkerState.DEAD
    death = LifecycleEvent.objects.get(to_state=WorkerState.DEAD)
    assert death.reason == "missed its session timeout: no new heartbeat for 11.0 s (timeout 10 s)"


def test_a_dead_worker_comes_back_only_with_a_new_heartbeat(clock: Clock):
    clock.heartbeat("w1")
    clock.reconcile()
    clock.reconcile(advance=TIMEOUT + 1)
    assert state("w1") == WorkerState.DEAD

    clock.reconcile(advance=100)
    assert state("w1") == WorkerState.DEAD
    clock.heartbeat("w1")
    clock.reconcile()

    assert state("w1") == WorkerState.ALIVE
    assert LifecycleEvent.objects.latest("id").reason == "heartbeats resumed"


def test_after_an_outage_workers_get_a_fresh_session_timeout(clock: Clock, spec, monkeypatch):
    """The runtime's Redis away for a minute: the workers could not heartbeat either. The
    first pass back finds their old heartbeats and declares nobody dead; one that does not
    heartbeat again is dead a session timeout later."""
    clock.heartbeat("w1", "w2")
    clock.reconcile()
    services.start_channel(services.create_channel(name="orders", spec=spec))
    clock.reconcile()
    placed = Connector.objects.get().worker_id

    def unreachable(self):
        raise RuntimeUnavailable("Error 111 connecting to redis")

    with monkeypatch.context() as outage:
        outage.setattr(type(clock.runtime), "workers", unreachable)
        for _ in range(60):
            with pytest.raises(RuntimeUnavailable):
                clock.reconcile()
    assert Worker.objects.filter(heartbeat_seen_at=None).count() == 2

    clock.reconcile()  # back: the heartbeats are as they were a minute ago

    assert {state("w1"), state("w2")} == {WorkerState.ALIVE}
    assert Connector.objects.get().worker_id == placed
    assert not LifecycleEvent.objects.filter(to_state=WorkerState.DEAD).exists()
    clock.heartbeat("w1")
    clock.reconcile(advance=TIMEOUT + 1)
    assert (state("w1"), state("w2")) == (WorkerState.ALIVE, WorkerState.DEAD)


def test_a_pass_skipped_for_the_locks_redis_voids_the_observations_too(clock, monkeypatch):
    clock.heartbeat("w1")
    clock.reconcile()

    class Down:
        def __enter__(self):
            import redis

            raise redis.ConnectionError("Error 111 connecting to redis")

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(tasks, "single_flight", lambda *args: Down())
    assert tasks.reconcile() is None

    assert Worker.objects.get().heartbeat_seen_at is None
    clock.reconcile(advance=60)
    assert state("w1") == WorkerState.ALIVE


def test_after_the_store_is_emptied_nobody_is_dead_before_re_registering(clock: Clock, spec):
    """An emptied store lost every registration: the workers are silent, not gone; they
    keep their channels while they register again."""
    clock.heartbeat("w1", "w2")
    clock.reconcile()
    for name in ("a", "b"):
        services.start_channel(services.create_channel(name=name, spec=spec))
    clock.reconcile()
    before = dict(Connector.objects.values_list("runtime_id", "worker"))
    client = clock.runtime.store.redis
    client.delete(*client.scan_iter(f"{clock.runtime.store.prefix}:*"))

    for _ in range(3):
        clock.reconcile()

    assert {state("w1"), state("w2")} == {WorkerState.ALIVE}
    assert dict(Connector.objects.values_list("runtime_id", "worker")) == before
    assert {d.worker_id for d in clock.runtime.store.deployments().values()} == {"w1", "w2"}
    clock.heartbeat("w1", "w2")
    clock.reconcile(advance=TIMEOUT)
    assert {state("w1"), state("w2")} == {WorkerState.ALIVE}
    assert Channel.objects.count() == 2
    assert set(Connector.objects.values_list("state", flat=True)) <= {
        ConnectorState.UNASSIGNED,
        ConnectorState.RUNNING,
    }


def test_a_member_of_the_runtime_group_is_alive_whatever_its_heartbeats_say(
    clock: Clock, monkeypatch
):
    """A host cut off from Redis alone: its heartbeats stop, but the group's coordinator
    still counts it a member, so its channels stay where they run. Once it leaves the group,
    its heartbeats' silence decides as before."""
    members = {"sluice-worker-w1"}
    monkeypatch.setattr(clock.runtime, "_group_members", lambda: members)
    clock.heartbeat("w1")
    clock.reconcile()
    clock.reconcile(advance=5 * TIMEOUT)  # no new heartbeat for 50 s
    assert state("w1") == WorkerState.ALIVE

    members.clear()  # its session expired on the broker
    clock.reconcile()
    assert state("w1") == WorkerState.DEAD


def test_while_the_groups_membership_is_unknown_silence_ends_no_worker(clock: Clock, monkeypatch):
    """Kafka does not say who is in the group (its coordinator moved): a worker whose
    heartbeats stopped meanwhile (cut off from Redis, running its channels) is not found
    dead on them alone. Once Kafka says again, a non-member's silence counts as before."""
    members: set[str] | None = {"sluice-worker-w1"}
    monkeypatch.setattr(clock.runtime, "membership", True)
    monkeypatch.setattr(clock.runtime, "_group_members", lambda: members)
    clock.heartbeat("w1")
    clock.reconcile()
    members = None
    clock.reconcile(advance=5 * TIMEOUT)
    assert state("w1") == WorkerState.ALIVE

    members = {"sluice-worker-w1"}
    clock.reconcile()
    assert state("w1") == WorkerState.ALIVE
    members = set()
    clock.reconcile()
    assert state("w1") == WorkerState.DEAD


def test_without_a_group_silence_ends_a_worker_as_ever(clock: Clock):
    """No runtime group (membership off): heartbeats are the only word on liveness."""
    assert not clock.runtime.membership
    clock.heartbeat("w1")
    clock.reconcile()
    clock.reconcile(advance=TIMEOUT + 1)
    assert state("w1") == WorkerState.DEAD
