"""History store benchmark: the 24 h history query of one channel, and the store's disk per
channel per day. Starts its own VictoriaMetrics (scripts/victoriametrics.sh) on a free port
with a throwaway data directory, backfills ``--channels`` channels x 24 h of 10 s samples
(every series /metrics exports for a channel with three stages and one task) through the
import API, then times ``GET /api/v1/channels/{name}/history/?window=24h`` (all series; then
per stage and per rule too) in-process, and the 30-day query at its 5-minute step: median
(p50), p95 and best of ``--runs`` answers after one warm-up, with the load average.

    .venv/bin/python -m bench.history [--channels 20] [--runs 30]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import tempfile
import time
import urllib.request
from pathlib import Path

DAY = 86400


def channel_lines(channel: str, start: int, seconds: int) -> list[dict]:
    stamps = list(range(start, start + seconds + 1, 10))
    ms = [s * 1000 for s in stamps]
    n = len(stamps)

    def line(name: str, values: list[float], **labels: str) -> dict:
        return {
            "metric": {"__name__": name, "channel": channel, **labels},
            "timestamps": ms,
            "values": values,
        }

    noise = random.Random(channel)
    rising = list(itertools.accumulate(float(noise.randint(300, 700)) for _ in range(n)))
    lines = [
        line(
            "sluice_channel_events_per_second", [round(noise.uniform(30, 70), 2) for _ in range(n)]
        ),
        line("sluice_channel_lag", [float(noise.randint(0, 5000)) for _ in range(n)]),
        line(
            "sluice_task_lag",
            [float(noise.randint(0, 5000)) for _ in range(n)],
            task="0",
            topic="t",
            partition="0",
        ),
        line("sluice_channel_dead_letters_total", [float(i // 30) for i in range(n)]),
        line("sluice_channel_sink_retries_total", [0.0] * n),
        line("sluice_dead_letters_redriven_total", [0.0] * n),
        line("sluice_channel_events_in_total", rising),
        line("sluice_channel_events_out_total", [float(int(v * 0.8)) for v in rising]),
        line(
            "sluice_channel_batch_duration_seconds",
            [round(noise.uniform(0.05, 2.0), 3) for _ in range(n)],
        ),
        line("sluice_channel_health_score", [100.0] * n),
    ]
    for state in ("RUNNING", "STOPPED", "PAUSED", "FAILED", "RESTARTING", "UNASSIGNED"):
        lines.append(
            line("sluice_channel_state", [1.0 if state == "RUNNING" else 0.0] * n, state=state)
        )
    for state in ("RUNNING", "STOPPED", "PAUSED"):
        lines.append(
            line(
                "sluice_channel_target_state", [1.0 if state == "RUNNING" else 0.0] * n, state=state
            )
        )
    for level in ("idle", "ok", "warning", "critical"):
        lines.append(
            line("sluice_channel_health_level", [1.0 if level == "ok" else 0.0] * n, level=level)
        )
    for stage, kind in (("source", "kafka"), ("transforms[0]", "filter"), ("sink", "kafka")):
        for key in ("in", "out", "failed"):
            factor = {"in": 1.0, "out": 0.8, "failed": 0.001}[key]
            lines.append(
                line(
                    f"sluice_stage_events_{key}_total",
                    [float(int(v * factor)) for v in rising],
                    stage=stage,
                    type=kind,
                )
            )
    return lines


def percentile(values: list[float], share: int) -> float:
    """The nearest-rank percentile (p50 is the median of an odd count)."""
    ranked = sorted(values)
    return ranked[max(0, -(-share * len(ranked) // 100) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("SLUICE_VAR_DIR", tempfile.mkdtemp(prefix="sluice-bench-history-"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{os.environ['SLUICE_VAR_DIR']}/db.sqlite3")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from console.selectors import history
    from tests.support.processes import start_victoriametrics

    data = Path(tempfile.mkdtemp(prefix="sluice-bench-vm-"))
    store, url = start_victoriametrics(data, data / "logs")
    try:
        settings.SLUICE_HISTORY_URL = url
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        end = int(time.time()) // 10 * 10
        started = time.perf_counter()
        samples = 0
        for index in range(args.channels):
            lines = channel_lines(f"bench-{index}", end - DAY, DAY)
            samples += sum(len(line["values"]) for line in lines)
            body = "\n".join(json.dumps(line) for line in lines).encode()
            urllib.request.urlopen(
                urllib.request.Request(f"{url}/api/v1/import", data=body), timeout=120
            )
        urllib.request.urlopen(f"{url}/internal/force_flush", timeout=120)
        print(
            f"backfilled {args.channels} channels x 24 h ({samples:,} samples) "
            f"in {time.perf_counter() - started:.1f} s"
        )
        urllib.request.urlopen(f"{url}/internal/force_merge", timeout=300)
        time.sleep(5)
        size = sum(p.stat().st_size for p in (data / "data").rglob("*") if p.is_file())
        print(
            f"store disk: {size / 1e6:.1f} MB for {args.channels} channel-days -> "
            f"{size / args.channels / 1e3:.0f} kB per channel per day"
            f" ({size / samples:.2f} bytes/sample)"
        )

        call_command("migrate", "--noinput", verbosity=0)
        from django.contrib.auth.models import User
        from rest_framework.test import APIClient

        user = User.objects.create_superuser("bench", password="bench-pass-1234")
        client = APIClient()
        client.force_authenticate(user)
        from console import services

        spec = {
            "source": {"type": "generator", "config": {}},
            "sink": {"type": "preview", "config": {}},
        }
        try:
            services.create_channel(name="bench-0", spec=spec)
        except Exception:  # a spec this build refuses: the API needs only the row
            from console.models import Channel

            Channel.objects.create(name="bench-0")
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (before timing)")
        for window, query in (
            ("24h", ""),
            ("24h", "&by=stage,rule"),
            ("30d", ""),
            ("30d", "&by=stage,rule"),
        ):
            url = f"/api/v1/channels/bench-0/history/?window={window}{query}"
            step = history.step_for(window)
            store_query = history.queries("bench-0", "events_in", step)["channel"]
            client.get(url)  # warm-up: the first answer opens the database connection
            times = []
            store_times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                answer = client.get(url)
                times.append((time.perf_counter() - t) * 1000)
                assert answer.status_code == 200, answer.content
                t = time.perf_counter()
                history._query_range(store_query, end - history.WINDOWS[window][0], end, step)
                store_times.append((time.perf_counter() - t) * 1000)
            points = sum(
                len(s["values"]) + sum(len(b["values"]) for b in s["stages"] + s["rules"])
                for s in answer.json()["series"]
            )
            print(
                f"window {window}{query or ' (totals)'}: API p50 {percentile(times, 50):.1f} ms, "
                f"p95 {percentile(times, 95):.1f} ms, best {min(times):.1f} ms for {points:,} "
                f"points ({len(answer.content) / 1e3:.0f} kB); one store query p50 "
                f"{percentile(store_times, 50):.1f} ms"
            )
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (after timing)")
    finally:
        store.stop()


if __name__ == "__main__":
    main()
