"""Acting on runtime workers: drain, back in service, forget a dead one — the control loop's
hand-over, the API (roles, answers), the admin's actions, the audit trail and /metrics."""

from __future__ import annotations

import time

import pytest
from prometheus_client import generate_latest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console import metrics, services
from console.choices import ConnectorState, SubjectType, WorkerService, WorkerState
from console.models import AuditEvent, Channel, Connector, LifecycleEvent, Worker
from console.permissions import OPERATOR, VIEWER, grant_role
from console.services import workers as worker_services
from runtime_adapter.base import DriverInfo, WorkerInfo

pytestmark = pytest.mark.django_db

WORKERS = "/api/v1/workers/"


def reconcile(runtime, now: float | None = None):
    return services.reconcile(runtime=runtime, now=time.time() if now is None else now)


def runs(runtime, worker_id: str, *connectors: str) -> None:
    """Say, as a driver heartbeat does, that ``worker_id``'s driver runs ``connectors``."""
    now = time.time()
    runtime.driver_infos[f"{worker_id}.d1"] = DriverInfo(
        f"{worker_id}.d1", worker_id, 1, "shared", now, now, 64, connectors=sorted(connectors)
    )


def placement() -> dict[str, str | None]:
    return dict(Connector.objects.values_list("runtime_id", "worker"))


def worker_events(worker_id: str) -> list[tuple[str, str, str]]:
    rows = LifecycleEvent.objects.filter(subject_type=SubjectType.WORKER, subject_id=worker_id)
    return [(e.from_state, e.to_state, e.actor) for e in rows.order_by("id")]


@pytest.fixture
def two_workers(runtime, spec):
    """Live workers w1 and w2; channels a, b, c RUNNING: a and c on w1, b on w2."""
    runtime.heartbeat("w1")
    runtime.heartbeat("w2")
    reconcile(runtime)
    for name in ("a", "b", "c"):
        services.start_channel(services.create_channel(name=name, spec=spec))
    reconcile(runtime)
    assert placement() == {"a": "w1", "b": "w2", "c": "w1"}
    return runtime


def client_as(django_user_model, role: str | None) -> APIClient:
    person = django_user_model.objects.create_user(f"u-{role}", password="pw-123-pw-123")
    if role:
        grant_role(person, role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=person).key}")
    return client


# -- the control loop ------------------------------------------------------------------------


def test_drain_hands_channels_over_stopping_them_first(two_workers):
    runtime = two_workers
    runs(runtime, "w1", "a", "c")
    worker_services.drain_worker("w1")

    reconcile(runtime)  # still running on w1: released, not yet placed elsewhere

    assert placement() == {"a": None, "b": "w2", "c": None}
    assert runtime.assignments["a"] is None and runtime.assignments["c"] is None
    assert Connector.objects.get(runtime_id="a").state == ConnectorState.UNASSIGNED
    assert Worker.objects.get(worker_id="w1").service == WorkerService.DRAINING

    reconcile(runtime)  # w1's driver has not stopped them yet: they wait
    assert placement() == {"a": None, "b": "w2", "c": None}

    runs(runtime, "w1")  # its driver stopped both queries
    reconcile(runtime)

    assert placement() == {"a": "w2", "b": "w2", "c": "w2"}
    assert runtime.assignments["a"] == "w2" and runtime.assignments["c"] == "w2"
    w1 = Worker.objects.get(worker_id="w1")
    assert (w1.service, w1.state) == (WorkerService.DRAINED, WorkerState.ALIVE)
    assert worker_events("w1")[-2:] == [
        ("IN_SERVICE", "DRAINING", "system"),
        ("DRAINING", "DRAINED", "system:reconcile"),
    ]
    reasons = LifecycleEvent.objects.filter(subject_id="a").values_list("reason", flat=True)
    assert any("worker w1 is draining: its query stops there" in r for r in reasons)


def test_a_channel_not_running_on_the_draining_worker_moves_at_once(two_workers):
    runtime = two_workers
    worker_services.drain_worker("w1")  # no driver of w1 runs a or c (e.g. still starting)

    reconcile(runtime)

    assert placement() == {"a": "w2", "b": "w2", "c": "w2"}
    reasons = LifecycleEvent.objects.filter(subject_id="a").values_list("reason", flat=True)
    assert "worker w1 is draining; assigned to worker w2 (least loaded, hosting 1)" in reasons


def test_a_draining_worker_gets_no_new_channel(two_workers, spec):
    runtime = two_workers
    worker_services.drain_worker("w2")
    reconcile(runtime)

    for name in ("d", "e"):
        services.start_channel(services.create_channel(name=name, spec=spec))
    reconcile(runtime)

    assert {placement()[n] for n in ("a", "b", "c", "d", "e")} == {"w1"}


def test_with_no_other_worker_the_channels_stay_running(runtime, spec):
    runtime.heartbeat("w1")
    reconcile(runtime)
    services.start_channel(services.create_channel(name="a", spec=spec))
    runs(runtime, "w1", "a")

    result = worker_services.drain_worker("w1")
    reconcile(runtime)

    assert (result.channels, result.takers) == (["a"], [])
    assert placement() == {"a": "w1"}
    assert runtime.calls_named("assign") == []
    assert Worker.objects.get().service == WorkerService.DRAINING

    runtime.heartbeat("w2")  # a worker joins: the hand-over starts
    reconcile(runtime)
    assert placement() == {"a": None}


def test_back_in_service_takes_channels_again(two_workers, spec):
    runtime = two_workers
    worker_services.drain_worker("w1")
    reconcile(runtime)
    assert placement()["a"] == "w2"

    worker_services.undrain_worker("w1")
    services.start_channel(services.create_channel(name="d", spec=spec))
    reconcile(runtime)

    assert placement()["d"] == "w1"  # the least loaded again
    assert placement()["a"] == "w2"  # moved channels stay (sticky)
    assert Worker.objects.get(worker_id="w1").service == WorkerService.IN_SERVICE


def test_undrain_during_a_hand_over_keeps_the_channel_where_it_runs(two_workers):
    runtime = two_workers
    runs(runtime, "w1", "a", "c")
    worker_services.drain_worker("w1")
    reconcile(runtime)  # released
    worker_services.undrain_worker("w1")

    reconcile(runtime)

    assert placement() == {"a": "w1", "b": "w2", "c": "w1"}
    assert runtime.assignments["a"] == "w1"


def test_drain_and_undrain_are_idempotent(two_workers):
    first = worker_services.drain_worker("w1")
    again = worker_services.drain_worker("w1")

    assert (first.changed, again.changed) == (True, False)
    assert first.channels == ["a", "c"] and first.takers == ["w2"]
    worker_services.undrain_worker("w1")
    worker_services.undrain_worker("w1")
    transitions = [(f, t) for f, t, _ in worker_events("w1")]
    assert transitions[-2:] == [("IN_SERVICE", "DRAINING"), ("DRAINING", "IN_SERVICE")]


# -- the API -----------------------------------------------------------------------------------


def test_drain_over_the_api(api, two_workers):
    response = api.post(f"{WORKERS}w1/drain")

    assert response.status_code == 202
    body = response.json()
    assert body["worker"]["service"] == "DRAINING"
    assert body["worker"]["service_changed_by"] == "user:alice"
    assert (body["changed"], body["channels"], body["takers"]) == (True, ["a", "c"], ["w2"])
    listed = {w["worker_id"]: w["service"] for w in api.get(WORKERS).json()["results"]}
    assert listed == {"w1": "DRAINING", "w2": "IN_SERVICE"}

    undrained = api.post(f"{WORKERS}w1/undrain")
    assert undrained.status_code == 202 and undrained.json()["service"] == "IN_SERVICE"


def test_the_workers_list_filters_by_service(api, two_workers):
    worker_services.drain_worker("w1")

    def listed(query: str) -> list[str]:
        response = api.get(f"{WORKERS}{query}")
        assert response.status_code == 200, response.content
        return [worker["worker_id"] for worker in response.json()["results"]]

    assert listed("?service=DRAINING") == ["w1"]
    assert listed("?service=IN_SERVICE") == ["w2"]
    assert listed("?service=DRAINED") == []
    assert listed("?service=DRAINING&service=IN_SERVICE") == ["w1", "w2"]
    assert listed("?service=") == ["w1", "w2"]
    bad = api.get(f"{WORKERS}?service=draining")
    assert bad.status_code == 400 and list(bad.json()) == ["service"]
    assert api.get(f"{WORKERS}w2/?service=nonsense").status_code == 200


def test_the_cluster_view_shows_the_service(api, two_workers):
    worker_services.drain_worker("w2")

    workers = {w["worker_id"]: w for w in api.get("/api/v1/cluster/").json()["runtime_workers"]}

    assert workers["w2"]["service"] == "DRAINING"
    assert workers["w1"]["service"] == "IN_SERVICE"


def test_forgetting_a_dead_worker(api, runtime, spec, settings):
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    runtime.heartbeat("w1", at=time.time() - 60)
    runs(runtime, "w1")
    reconcile(runtime)
    reconcile(runtime, now=time.time() + 11)  # no new heartbeat for the session timeout

    response = api.delete(f"{WORKERS}w1/")

    assert response.status_code == 204
    assert runtime.calls_named("forget_worker") == [("w1",)]
    assert runtime.driver_infos == {}
    assert not Worker.objects.exists()
    assert worker_events("w1")[-1] == ("DEAD", "FORGOTTEN", "user:alice")
    assert api.get(f"{WORKERS}w1/").status_code == 404


def test_forgetting_a_live_worker_is_refused_with_409(api, runtime):
    runtime.heartbeat("w1")
    reconcile(runtime)

    response = api.delete(f"{WORKERS}w1/")

    assert response.status_code == 409
    assert "worker w1 is alive" in response.json()["detail"]
    assert "only a DEAD worker can be forgotten" in response.json()["detail"]
    assert runtime.calls_named("forget_worker") == []
    assert Worker.objects.filter(worker_id="w1").exists()


def test_a_worker_only_the_runtime_knows_can_be_forgotten_once_dead(api, runtime, settings):
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    runtime.worker_infos["ghost"] = WorkerInfo("ghost", "h", 1, 1.0, 2.0)  # never reconciled

    assert api.delete(f"{WORKERS}ghost/").status_code == 204
    assert runtime.worker_infos == {}


@pytest.mark.parametrize(
    ("method", "path"),
    [("post", "nobody/drain"), ("post", "nobody/undrain"), ("delete", "nobody/")],
)
def test_an_unknown_worker_is_404(api, runtime, method, path):
    response = getattr(api, method)(f"{WORKERS}{path}")

    assert response.status_code == 404
    assert response.json()["detail"] == "no runtime worker has the id 'nobody'"


def test_the_runtime_down_is_503_and_forgets_nothing(api, runtime):
    Worker.objects.create(worker_id="w1", state=WorkerState.DEAD)
    runtime.unavailable = ConnectionError("redis is down")

    response = api.delete(f"{WORKERS}w1/")

    assert response.status_code == 503
    assert Worker.objects.filter(worker_id="w1").exists()


@pytest.mark.parametrize(
    ("method", "path"), [("post", "w1/drain"), ("post", "w1/undrain"), ("delete", "w1/")]
)
def test_a_viewer_is_refused_and_the_refusal_audited(django_user_model, two_workers, method, path):
    viewer = client_as(django_user_model, VIEWER)

    response = getattr(viewer, method)(f"{WORKERS}{path}")

    assert response.status_code == 403
    assert response.json()["detail"].startswith(
        "You need the operator role (console.operate_worker) to "
    )
    assert Worker.objects.get(worker_id="w1").service == WorkerService.IN_SERVICE
    event = AuditEvent.objects.get()
    assert (event.object_type, event.object_id, event.outcome) == ("worker", "w1", 403)


def test_an_operator_may_and_each_action_is_audited(django_user_model, runtime, dead_worker):
    runtime.heartbeat("w1")
    dead_worker("old", at=time.time() - 600)
    reconcile(runtime)
    operator = client_as(django_user_model, OPERATOR)

    assert operator.post(f"{WORKERS}w1/drain").status_code == 202
    assert operator.post(f"{WORKERS}w1/undrain").status_code == 202
    assert operator.delete(f"{WORKERS}w1/").status_code == 409
    assert operator.delete(f"{WORKERS}old/").status_code == 204

    rows = AuditEvent.objects.order_by("id").values_list(
        "action", "object_type", "object_id", "outcome", "actor", "via"
    )
    assert list(rows) == [
        ("worker.drain", "worker", "w1", 202, "u-operator", "api"),
        ("worker.undrain", "worker", "w1", 202, "u-operator", "api"),
        ("worker.forget", "worker", "w1", 409, "u-operator", "api"),
        ("worker.forget", "worker", "old", 204, "u-operator", "api"),
    ]


# -- the admin ---------------------------------------------------------------------------------


def test_the_admin_drains_undrains_and_forgets(admin_client, two_workers, settings, dead_worker):
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    dead_worker("gone", at=time.time() - 600)
    reconcile(two_workers)
    pk = {w.worker_id: str(w.pk) for w in Worker.objects.all()}

    page = admin_client.post(
        "/admin/console/worker/",
        {"action": "drain_workers", "_selected_action": [pk["w1"]]},
        follow=True,
    )
    assert "Draining w1: 2 channel(s) move to w2" in page.content.decode()
    assert Worker.objects.get(worker_id="w1").service == WorkerService.DRAINING
    listing = admin_client.get("/admin/console/worker/").content.decode()
    assert "DRAINING" in listing

    admin_client.post(
        "/admin/console/worker/",
        {"action": "undrain_workers", "_selected_action": [pk["w1"]]},
    )
    assert Worker.objects.get(worker_id="w1").service == WorkerService.IN_SERVICE

    page = admin_client.post(
        "/admin/console/worker/",
        {"action": "forget_workers", "_selected_action": [pk["w2"], pk["gone"]]},
        follow=True,
    )
    assert "Worker w2 is alive" in page.content.decode()
    assert set(Worker.objects.values_list("worker_id", flat=True)) == {"w1", "w2"}
    audited = AuditEvent.objects.filter(action="admin.worker.forget_workers").get()
    assert audited.object_id == "gone,w2"


def test_the_admin_refuses_a_viewer_s_forced_action(client, django_user_model, two_workers):
    viewer = django_user_model.objects.create_user("vic", password="pw-123-pw-123", is_staff=True)
    grant_role(viewer, VIEWER)
    client.force_login(viewer)
    pk = str(Worker.objects.get(worker_id="w1").pk)

    page = client.post(
        "/admin/console/worker/",
        {"action": "drain_workers", "_selected_action": [pk]},
        follow=True,
    )

    assert "You need the operator role (console.operate_worker)" in page.content.decode()
    assert Worker.objects.get(worker_id="w1").service == WorkerService.IN_SERVICE


# -- /metrics ----------------------------------------------------------------------------------


def test_metrics_show_each_worker_s_service(two_workers):
    worker_services.drain_worker("w1")

    text = generate_latest(metrics.registry()).decode()

    assert 'sluice_worker_service{service="DRAINING",worker="w1"} 1.0' in text
    assert 'sluice_worker_service{service="IN_SERVICE",worker="w2"} 1.0' in text
    assert 'sluice_workers_by_service{service="DRAINING"} 1.0' in text


def test_a_stopped_channel_on_a_draining_worker_starts_elsewhere(two_workers):
    runtime = two_workers
    services.stop_channel(Channel.objects.get(name="a"))
    worker_services.drain_worker("w1")

    services.start_channel(Channel.objects.get(name="a"))

    assert placement()["a"] == "w2"
    assert runtime.calls_named("deploy")[-1][0].worker_id == "w2"
