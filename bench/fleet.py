"""``make bench-fleet`` (or ``python -m bench.fleet``): a fleet of 10,000 channels (issue 17).

On a throwaway PostgreSQL (the production database) the channels are bulk-inserted (a
revision each; 80 % deployed on two workers with 2 tasks each, a few FAILED, labels
``team`` and ``tier``), spread over ``--teams`` teams (50; issue 33), then, in-process through
the API (Django's test client, the real
URLconf, middleware and serializers):

* ``GET /api/v1/channels/?expand=status`` - the first page (50) with status: p50 and p99 over
  ``--repeat`` calls, and the same with a search, a label filter and a sort, as a site admin
  (every team's channels) and as a member of one team (its 1/50th: the team's page);
* the channels' health levels stored as one control-loop pass stores them (all 10,000), then
  the first page filtered by health (``?health=critical``) and sorted by it, in SQL;
* ``POST /api/v1/channels/bulk`` with each action over the same 1,000 running channels in
  turn (stop, start, pause, resume, restart, delete): the time to the answer (every channel
  handled, its events written, audited and told to the runtime: the real runtime adapter on a
  real Redis, as ``make run`` has it).

With ``--chromium`` the console is served (the built ``frontend/dist`` through Django, on
127.0.0.1) and Chromium (playwright-core, ``/usr/bin/chromium``) opens the channels page:
time to interactive = navigation start → the first rows shown and the search box usable,
and a screenshot into ``test-artifacts/fleet-10000.png``.

Targets: first page with status ≤ 200 ms on the server (filtered by health too, and one team's
page among 50 teams), ≤ 1 s to
interactive in Chromium; each bulk action over 1,000 channels ≤ 2 s to accept. Figures are
printed and saved to bench-results/fleet.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.control import CHANNEL_SPEC, SimulatedRuntime
from bench.stack import django_on_postgres, redis_server
from tests.support.processes import REPO_ROOT, free_port

RESULTS_DIR = REPO_ROOT / "bench-results"
TEAMS = ("payments", "search", "checkout", "ads", "growth")


def populate(channels: int, teams: int) -> None:
    """``channels`` channels in ``teams`` teams, inserted in bulk (a few seconds for 10,000);
    user ``bench`` is a site admin, ``bench-member`` a viewer and operator of the first team."""
    from django.contrib.auth import get_user_model

    from console import permissions
    from console.crypto import encrypt_spec
    from console.models import (
        Channel,
        Connector,
        Revision,
        Task,
        Team,
        Worker,
        new_checkpoint_key,
    )
    from console.selectors.specs import normalize_spec

    spec = encrypt_spec(normalize_spec(CHANNEL_SPEC))
    user = get_user_model().objects.create_user("bench", password="bench-password")
    user.is_superuser = True
    user.save()
    team_ids = [Team.objects.create(name=f"team-{t:02d}").pk for t in range(teams)]
    member = get_user_model().objects.create_user("bench-member", password="bench-password")
    for role in (permissions.VIEWER, permissions.OPERATOR):
        permissions.grant_role(member, role, "team-00")
    workers = [Worker.objects.create(worker_id=w, state="ALIVE") for w in ("w1", "w2")]
    rows = []
    for n in range(channels):
        name = f"ch-{n:05d}"
        deployed = n % 5 != 4
        rows.append(
            Channel(
                name=name,
                team_id=team_ids[n % teams],  # bulk_create does not call save()
                description=f"bench channel {n} for team {TEAMS[n % len(TEAMS)]}",
                target_state="RUNNING" if deployed else "STOPPED",
                checkpoint_key=new_checkpoint_key(name),
                labels={"team": TEAMS[n % len(TEAMS)], "tier": "gold" if n % 7 == 0 else "std"},
            )
        )
    Channel.objects.bulk_create(rows, batch_size=1000)
    saved = list(Channel.objects.order_by("name").values_list("pk", "name"))
    Revision.objects.bulk_create(
        [Revision(channel_id=pk, number=1, spec=spec) for pk, _ in saved], batch_size=1000
    )
    revisions = dict(Revision.objects.values_list("channel_id", "pk"))
    connectors = []
    for index, (pk, name) in enumerate(saved):
        if index % 5 == 4:
            continue
        connectors.append(
            Connector(
                channel_id=pk,
                runtime_id=name,
                revision_id=revisions[pk],
                state="FAILED" if index % 97 == 0 else "RUNNING",
                worker=workers[index % 2],
                stage_metrics=[
                    {"stage": "source", "type": "generator", "in": 1000, "out": 1000, "failed": 0}
                ],
            )
        )
    Connector.objects.bulk_create(connectors, batch_size=1000)
    Task.objects.bulk_create(
        [
            Task(
                connector_id=connector_pk,
                task_id=task,
                state="RUNNING",
                worker_id="w1",
                topic="orders",
                partition=task,
                offset=100,
                end_offset=110,
                lag=10,
                rows_per_second=5.0,
            )
            for connector_pk in Connector.objects.values_list("pk", flat=True)
            for task in range(2)
        ],
        batch_size=2000,
    )


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def list_figures(client: Any, queries: dict[str, str], repeat: int) -> dict[str, Any]:
    """p50 and p99 (and the web process's CPU) of each list query over ``repeat`` calls."""
    figures: dict[str, Any] = {}
    for label, query in queries.items():
        samples = []
        cpu = []
        count = None
        for _ in range(repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(f"/api/v1/channels/{query}")
            samples.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
            assert response.status_code == 200, response.content[:300]
            count = response.json()["count"]
        figures[label] = {
            "query": query,
            "count": count,
            "runs": repeat,
            "p50_ms": round(statistics.median(samples) * 1000, 1),
            "p99_ms": round(percentile(samples, 0.99) * 1000, 1),
            "web_cpu_p50_ms": round(statistics.median(cpu) * 1000, 1),
        }
    return figures


def server_figures(repeat: int, redis_url: str) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from console.models import Channel

    client = Client(HTTP_HOST="localhost")
    client.force_login(get_user_model().objects.get(username="bench"))
    member = Client(HTTP_HOST="localhost")
    member.force_login(get_user_model().objects.get(username="bench-member"))
    queries = {
        "first page with status": "?expand=status&limit=50",
        "…searched (team ads)": "?expand=status&limit=50&search=ads",
        "…label team=payments, by -updated": "?expand=status&limit=50&label=team=payments"
        "&ordering=-updated",
        "…state FAILED": "?expand=status&limit=50&state=FAILED",
        "…health critical": "?expand=status&limit=50&health=critical",
        "…health warning or critical, by name desc": "?expand=status&limit=50"
        "&health=warning&health=critical&ordering=-name",
        "…sorted by health": "?expand=status&limit=50&ordering=health",
    }
    figures = list_figures(client, queries, repeat)
    team_queries = {  # the member's team is team-00: channels 0, 50, 100, … ("payments")
        "one team's page (a member of 1 of the teams)": "?expand=status&limit=50",
        "one team's page, searched (payments)": "?expand=status&limit=50&search=payments",
        "one team's page, health critical": "?expand=status&limit=50&health=critical",
    }
    figures |= list_figures(member, team_queries, repeat)
    from django.conf import settings
    from django.utils.module_loading import import_string

    from console.runtime import set_runtime

    set_runtime(import_string(settings.SLUICE_RUNTIME)(redis_url=redis_url, prefix="fleet-bench"))
    running = list(
        Channel.objects.filter(target_state="RUNNING")
        .order_by("name")
        .values_list("name", flat=True)[:1000]
    )
    for action in ("stop", "start", "pause", "resume", "restart", "delete"):
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.post(
            "/api/v1/channels/bulk",
            {"action": action, "names": running},
            content_type="application/json",
        )
        elapsed = time.perf_counter() - started
        elapsed_cpu = time.process_time() - started_cpu
        body = response.json()
        assert response.status_code == 200 and body["ok"] == len(running), str(body)[:300]
        figures[f"bulk {action} of 1,000"] = {
            "seconds": round(elapsed, 3),
            "web_cpu_seconds": round(elapsed_cpu, 3),
            "ok": body["ok"],
        }
    return figures


def chromium_figures(channels: int) -> dict[str, Any]:
    """Serve the console on 127.0.0.1 and time the channels page in Chromium."""
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    port = free_port()
    server = ThreadedWSGIServer(("127.0.0.1", port), Quiet)
    server.set_app(get_wsgi_application())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        shot = REPO_ROOT / "test-artifacts" / f"fleet-{channels}.png"
        shot.parent.mkdir(exist_ok=True)
        out = subprocess.run(
            ["node", "e2e/fleet-bench.mjs", f"http://127.0.0.1:{port}", str(shot)],
            cwd=REPO_ROOT / "frontend",
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(out.stdout[-2000:] + out.stderr[-2000:])
        figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        return figures
    finally:
        server.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--teams", type=int, default=50, help="teams the channels are spread over")
    parser.add_argument("--chromium", action="store_true", help="also time the console page")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sluice-fleet-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)  # PostgreSQL may run as its own user
        with django_on_postgres(work), redis_server(work) as redis_url:
            from console.runtime import set_runtime
            from console.services import channel_health

            set_runtime(SimulatedRuntime(["w1", "w2"]))  # type: ignore[arg-type]
            started = time.perf_counter()
            populate(args.channels, args.teams)
            print(f"{args.channels} channels inserted in {time.perf_counter() - started:.1f} s")
            figures: dict[str, Any] = {
                "channels": args.channels,
                "teams": args.teams,
                "load_before": os.getloadavg(),
            }
            started = time.perf_counter()
            changed = channel_health.refresh()
            figures["health levels stored (a control-loop pass)"] = {
                "seconds": round(time.perf_counter() - started, 3),
                "changed": changed,
            }
            started = time.perf_counter()
            changed = channel_health.refresh()
            figures["…the next pass (nothing changed)"] = {
                "seconds": round(time.perf_counter() - started, 3),
                "changed": changed,
            }
            if args.chromium:  # before the bulk actions change the first page
                figures["chromium"] = chromium_figures(args.channels)
            figures["server"] = server_figures(args.repeat, redis_url)
    figures["load_after"] = os.getloadavg()
    print(json.dumps(figures, indent=2))
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "fleet.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
