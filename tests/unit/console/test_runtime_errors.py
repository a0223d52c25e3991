"""The console against the real Spark runtime adapter whose Redis is down: the runtime's
:class:`RuntimeUnavailable` becomes the same 503 answers the fake runtime's tests pin, and
nothing changes in the database."""

from __future__ import annotations

import socket

import pytest

from console.models import Channel
from console.runtime import set_runtime
from runtime_adapter.spark import SparkRuntime

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


@pytest.fixture
def redis_down(tmp_path) -> SparkRuntime:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runtime = SparkRuntime(f"redis://127.0.0.1:{port}/0", "t", checkpoint_root=tmp_path)
    set_runtime(runtime)  # the autouse fake is restored after the test
    return runtime


def unavailable(response) -> str:
    assert response.status_code == 503, response.content
    detail = response.json()["detail"]
    assert detail.startswith("the runtime is unavailable: "), detail
    return detail


def test_start_answers_503_and_changes_nothing(api, spec, redis_down):
    assert api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json").status_code == 201

    assert "Connection refused" in unavailable(api.post(f"{CHANNELS}orders/start"))
    assert Channel.objects.get(name="orders").target_state == "STOPPED"


def test_offsets_answer_503(api, spec, redis_down):
    assert api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json").status_code == 201

    unavailable(api.get(f"{CHANNELS}orders/offsets"))


def test_the_cluster_view_answers_503(api, redis_down):
    unavailable(api.get("/api/v1/cluster/"))
