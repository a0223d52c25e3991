"""The channels' history on the real stack: VictoriaMetrics (scripts/victoriametrics.sh)
scrapes the web's /metrics with a bearer token, the history API reads it back, and what was
recorded is still there after the web process restarts (and after the store restarts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import Stack
from tests.support.processes import Service, free_port, start_victoriametrics, wait_until
from tests.support.specs import kafka_passthrough
from tests.support.stack import restart_web

pytestmark = pytest.mark.integration

TOKEN = "history-integration-token"


@pytest.fixture
def scraped(
    stack: Stack, tmp_path: Path, artifacts_dir: Path
) -> Iterator[tuple[Service, str, dict]]:
    """A store scraping this stack's web every 10 s; the web restarted to read from it.
    Puts the web back as it was afterwards."""
    port = free_port()
    target = stack.base_url.removeprefix("http://")
    env = {"SLUICE_METRICS_TOKEN": TOKEN, "SLUICE_HISTORY_SCRAPE_TARGET": target}
    store, url = start_victoriametrics(tmp_path / "history", artifacts_dir, port=port, env=env)
    web_env = {"SLUICE_METRICS_TOKEN": TOKEN, "SLUICE_HISTORY_URL": url}
    restart_web(stack, web_env)
    try:
        yield (
            store,
            url,
            {"port": port, "env": env, "web_env": web_env, "dir": tmp_path / "history"},
        )
    finally:
        store.stop()
        restart_web(stack, {})


def lag_points(stack: Stack, name: str) -> list[tuple[int, float]]:
    """(unix seconds, lag) of every point the store has for the channel in the last hour."""
    answer = stack.session().get(
        f"{stack.api}/channels/{name}/history/?window=1h&series=lag,events_in", timeout=10
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    (lag, _events) = body["series"]
    assert lag["unit"] == "records"
    return [(t, v) for t, v in zip(body["timestamps"], lag["values"], strict=True) if v is not None]


def test_history_survives_a_web_restart(stack: Stack, scraped, artifacts_dir: Path) -> None:
    store, _url, info = scraped
    name = "history-restart"
    created = stack.session().post(
        f"{stack.api}/channels/",
        json={"name": name, "spec": kafka_passthrough(stack.kafka, "hist-in", "hist-out")},
        timeout=10,
    )
    assert created.status_code == 201, created.text

    # Two scrapes (10 s apart) recorded the channel: its lag, 0 while it is stopped.
    before = wait_until(
        lambda: len(lag_points(stack, name)) >= 2 and lag_points(stack, name),
        60,
        what="two scrapes of the channel",
    )
    assert all(value == 0 for _t, value in before)

    restart_web(stack, info["web_env"])
    after = lag_points(stack, name)
    # Every point but the newest: the store may recompute the point at the window's edge
    # (its newest samples are not final yet), which is not what a restart would lose.
    assert {t for t, _v in before[:-1]} <= {t for t, _v in after}, (before, after)

    # The store itself restarted on the same data: the samples are on disk.
    store.stop()
    down = stack.session().get(f"{stack.api}/channels/{name}/history/", timeout=10)
    assert down.status_code == 503 and "history store" in down.json()["detail"]
    again, _url = start_victoriametrics(
        info["dir"], artifacts_dir, port=info["port"], env=info["env"]
    )
    try:
        restored = lag_points(stack, name)
        assert {t for t, _v in before[:-1]} <= {t for t, _v in restored}, (before, restored)
    finally:
        again.stop()
    stack.session().delete(f"{stack.api}/channels/{name}/", timeout=10)
