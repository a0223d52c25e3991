"""The channel page's history charts in real headless Chromium (frontend/e2e/history.e2e.mjs)
against the stack, its web reading a real VictoriaMetrics into which 8 days of a channel's
10 s samples were imported: value axes with units, time axes, the value and time under the
pointer, the window selector (15m and 1h at 10 s, 7d at 5 min) and a reload that keeps the
window and draws the charts again."""

from __future__ import annotations

import json
import math
import random
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import NodeScript
from tests.support.specs import kafka_passthrough
from tests.support.stack import Stack, restart_web

pytestmark = pytest.mark.integration

CHANNEL = "history-charts"


def samples(channel: str, days: int) -> list[dict]:
    """A day-shaped load: events in/out, rare dead letters, lag with spikes, batch duration."""
    end = int(time.time()) // 10 * 10
    stamps = list(range(end - days * 86400, end + 1, 10))
    noise = random.Random(channel)
    total_in = total_out = dead = 0.0
    ins, outs, dls, lag, batch = [], [], [], [], []
    for s in stamps:
        rate = 400 + 250 * math.sin(2 * math.pi * (s % 86400) / 86400) + noise.uniform(-40, 40)
        total_in += rate * 10
        total_out += rate * 10 * 0.62
        dead += noise.randint(1, 40) if noise.random() < 0.02 else 0
        ins.append(round(total_in))
        outs.append(round(total_out))
        dls.append(dead)
        lag.append(int(300 + noise.uniform(0, 400) + (3000 if (s // 3600) % 37 == 0 else 0)))
        batch.append(round(0.35 + 0.2 * math.sin(s / 9000) + noise.uniform(0, 0.15), 3))
    ms = [s * 1000 for s in stamps]

    def line(name: str, values: list, **labels: str) -> dict:
        metric = {"__name__": name, "channel": channel, **labels}
        return {"metric": metric, "timestamps": ms, "values": values}

    return [
        line("sluice_channel_events_in_total", ins),
        line("sluice_channel_events_out_total", outs),
        line("sluice_channel_dead_letters_total", dls),
        line("sluice_channel_lag", lag),
        line("sluice_channel_batch_duration_seconds", batch),
        line("sluice_stage_events_failed_total", dls, stage="transforms[0]", type="cast"),
    ]


@pytest.fixture
def web_with_history(stack: Stack, history_store: str) -> Iterator[str]:
    restart_web(stack, {"SLUICE_HISTORY_URL": history_store})
    try:
        yield history_store
    finally:
        restart_web(stack, {})


def test_history_charts_render_with_axes(
    stack: Stack, web_with_history: str, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    created = stack.session().post(
        f"{stack.api}/channels/",
        json={"name": CHANNEL, "spec": kafka_passthrough(stack.kafka, "hist-c-in", "hist-c-out")},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    body = "\n".join(json.dumps(line) for line in samples(CHANNEL, 8)).encode()
    store = web_with_history
    urllib.request.urlopen(urllib.request.Request(f"{store}/api/v1/import", data=body), timeout=60)
    urllib.request.urlopen(f"{store}/internal/force_flush", timeout=60)

    out = node_script("history.e2e.mjs", shots, CHANNEL=CHANNEL)
    assert out.count("history-events") == 4  # 1h, 15m, 7d, after the reload
    assert "under the pointer: " in out
    for shot in (
        "history-1h.png",
        "history-15m.png",
        "history-hover.png",
        "history-7d.png",
        "history-chart-events.png",
    ):
        assert (shots / shot).stat().st_size > 10_000
    stack.session().delete(f"{stack.api}/channels/{CHANNEL}/", timeout=10)
