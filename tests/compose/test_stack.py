"""docker/compose.yaml really run: every service healthy, a channel created through the REST API
delivers events Kafka → filter → Kafka, and survives ``docker kill`` of the runtime worker
container that hosts it (RUNNING again on the other runtime worker, no event lost); the history
service keeps the channel's samples (scraped from web's ``/metrics``), the history API answers
them, and they survive a restart of the history container.

Driven by scripts/compose-test.sh, which builds the images, starts the stack (the same
``docker compose up`` a user runs, with docker/compose.local.yaml where no registry can be
reached) and passes it here through the environment:

  SLUICE_COMPOSE_ARGS   JSON list: the compose command with its project, env file and files
  SLUICE_COMPOSE_API    the console's API base URL on the host (http://127.0.0.1:PORT/api/v1)
  SLUICE_COMPOSE_KAFKA  Kafka's bootstrap address on the host (127.0.0.1:PORT)
  SLUICE_COMPOSE_HISTORY_RETENTION  the SLUICE_HISTORY_RETENTION compose was given
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import requests

from tests.integration.test_walking_skeleton import consume_all, make_topic
from tests.support.orders import PATTERN, produce_range, selected

pytestmark = pytest.mark.compose

COMPOSE = json.loads(os.environ.get("SLUICE_COMPOSE_ARGS", "[]"))
API = os.environ.get("SLUICE_COMPOSE_API", "")
KAFKA_HOST = os.environ.get("SLUICE_COMPOSE_KAFKA", "")
KAFKA_INSIDE = "kafka:9092"  # how the channel's Spark side reaches Kafka, in the compose network
WORKERS = ("runtime-worker-1", "runtime-worker-2")
BATCH = 3_000  # events per batch; one in three passes the filter


def compose(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [*COMPOSE, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"compose {' '.join(args)}: {done.stderr}"
    return done.stdout


def logs(*services: str, tail: int = 80) -> str:
    try:
        return compose("logs", "--no-color", "--tail", str(tail), *services, timeout=60)
    except (AssertionError, subprocess.TimeoutExpired) as error:
        return f"(no logs: {error})"


def wait_for(
    what: str, check: Callable[[], bool], timeout: float, services: tuple[str, ...]
) -> float:
    """Poll ``check`` until true; return the seconds it took, or fail with the services' logs."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if check():
                return time.monotonic() - started
        except requests.RequestException:
            pass
        time.sleep(2)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{logs(*services)}")


@pytest.fixture(scope="module")
def http() -> requests.Session:
    assert COMPOSE and API and KAFKA_HOST, "run through scripts/compose-test.sh"
    out = compose(
        "exec", "-T", "web", "/app/docker/entrypoint.sh", "manage", "drf_create_token", "admin"
    )
    session = requests.Session()
    session.headers["Authorization"] = f"Token {out.split()[2]}"
    return session


def service_states() -> dict[str, tuple[str, str, int]]:
    """Service → (state, health, exit code), of every container of the project."""
    rows = compose("ps", "--all", "--format", "json").splitlines()
    return {
        row["Service"]: (row["State"], row.get("Health", ""), row.get("ExitCode"))
        for row in map(json.loads, filter(None, rows))
    }


def health_log(service: str) -> str:
    container = compose("ps", "-q", service).strip()
    done = subprocess.run(
        ["docker", "inspect", "--format", "{{json .State.Health.Log}}", container],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return f"{service} health checks: {done.stdout.strip() or done.stderr.strip()}"


def test_every_service_is_healthy() -> None:
    """All at once (health checks are retried, so a loaded machine may need a moment)."""
    states = service_states()
    assert states.pop("volumes-init") == ("exited", "", 0)
    services = set(compose("config", "--services").split()) - {"volumes-init"}
    assert set(states) == services, states

    def unhealthy() -> dict[str, tuple[str, str, int]]:
        states = service_states()
        return {
            name: state
            for name, state in states.items()
            if name != "volumes-init" and state[:2] != ("running", "healthy")
        }

    deadline = time.monotonic() + 180
    while (bad := unhealthy()) and time.monotonic() < deadline:
        time.sleep(5)
    details = "\n".join(health_log(name) for name in bad)
    assert not bad, f"{bad}\n{details}\n{logs(*bad)}"


@dataclass(frozen=True)
class RunningChannel:
    name: str
    source: str
    sink: str


@pytest.fixture(scope="module")
def channel(http: requests.Session) -> RunningChannel:
    """A Kafka → filter → Kafka channel created through the API, the first batch produced into
    its source, RUNNING."""
    suffix = uuid.uuid4().hex[:6]
    name, source, sink = f"compose-{suffix}", f"compose-in-{suffix}", f"compose-out-{suffix}"
    make_topic(KAFKA_HOST, source, 3)
    make_topic(KAFKA_HOST, sink, 3)
    produce_range(KAFKA_HOST, source, 0, BATCH)

    spec = {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": KAFKA_INSIDE,
                "topics": [source],
                "starting_offsets": "earliest",
            },
        },
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": KAFKA_INSIDE, "topic": sink}},
    }
    created = http.post(
        f"{API}/channels/", json={"name": name, "spec": spec, "target_state": "RUNNING"}, timeout=30
    )
    assert created.status_code == 201, created.text
    took = wait_for(
        "the channel RUNNING", lambda: status(http, name)["state"] == "RUNNING", 600, WORKERS
    )
    print(f"\nchannel RUNNING after {took:.0f} s")
    return RunningChannel(name, source, sink)


def status(http: requests.Session, name: str) -> dict:
    answer = http.get(f"{API}/channels/{name}/status", timeout=10)
    answer.raise_for_status()
    return answer.json()


def test_channel_delivers_and_survives_a_killed_runtime_worker(
    http: requests.Session, channel: RunningChannel
) -> None:
    name, source, sink = channel.name, channel.source, channel.sink
    host = status(http, name)["worker_id"]
    assert host in WORKERS, status(http, name)
    print(f"channel RUNNING on {host}")

    first = [seq for seq in range(BATCH) if selected(seq)]
    values = consume_all(KAFKA_HOST, sink, len(first), timeout=300)
    assert sorted(set(json.loads(v)["seq"] for v in values)) == first, logs(host)

    # docker kill of the container that hosts the channel (SIGKILL: no graceful stop).
    container = compose("ps", "-q", host).strip()
    assert container, f"no container for {host}"
    subprocess.run(["docker", "kill", container], check=True, capture_output=True, timeout=60)
    killed_at = time.monotonic()
    produce_range(KAFKA_HOST, source, BATCH, 2 * BATCH)

    other = next(worker for worker in WORKERS if worker != host)
    took = wait_for(
        f"the channel RUNNING again on {other}",
        lambda: (s := status(http, name))["state"] == "RUNNING" and s["worker_id"] == other,
        600,
        (other, "celery-worker"),
    )
    since_kill = time.monotonic() - killed_at
    print(f"channel RUNNING on {other} {since_kill:.0f} s after the kill ({took:.0f} s polled)")

    expected = [seq for seq in range(2 * BATCH) if selected(seq)]
    values = consume_all(KAFKA_HOST, sink, len(expected), timeout=300)
    seqs = Counter(json.loads(v)["seq"] for v in values)
    missing = set(expected) - set(seqs)
    assert not missing, f"lost {len(missing)} events, e.g. {sorted(missing)[:10]}\n{logs(other)}"
    assert set(seqs) == set(expected), "events the filter should have dropped arrived"
    duplicates = sum(count - 1 for count in seqs.values())
    print(f"{len(expected)} events delivered, {duplicates} duplicates (at least once)")


def history(http: requests.Session, name: str, series: str) -> dict:
    answer = http.get(
        f"{API}/channels/{name}/history/", params={"window": "1h", "series": series}, timeout=30
    )
    answer.raise_for_status()  # 503 while the store is away: wait_for polls on
    return answer.json()


def known(body: dict, series: str) -> dict[int, float]:
    """A series of a history answer as {timestamp: value}, where the store has a value."""
    (values,) = [item["values"] for item in body["series"] if item["name"] == series]
    return {t: v for t, v in zip(body["timestamps"], values, strict=True) if v is not None}


def test_history_is_kept_by_the_store_and_survives_its_restart(
    http: requests.Session, channel: RunningChannel
) -> None:
    """The history service scrapes web's /metrics with the metrics token; after the channel ran,
    the history API answers its samples from the store, with the retention compose set, and a
    new history container on the same volume holds every sample the old one had."""
    # More events while it runs: the events-in counter rises between two scrapes.
    produce_range(KAFKA_HOST, channel.source, 2 * BATCH, 3 * BATCH)
    answers: list[dict] = []
    settled = 20  # seconds after which a point's samples are all in the store

    def events_seen() -> bool:
        asked_at = time.time()
        answers.append(history(http, channel.name, "events_in,batch_duration"))
        events = known(answers[-1], "events_in").items()
        return any(v > 0 for t, v in events if t < asked_at - settled)

    took = wait_for("events in the channel's history", events_seen, 180, ("history", "web"))
    before = answers[-1]
    assert known(before, "batch_duration"), before["series"]
    print(f"\nhistory: events in after {took:.0f} s, {len(known(before, 'events_in'))} points")

    flags = compose(
        "exec", "-T", "history", "python", "-c",
        "import urllib.request; print(urllib.request.urlopen("
        "'http://127.0.0.1:8428/metrics', timeout=10).read().decode())",
    )  # fmt: skip
    retention = os.environ.get("SLUICE_COMPOSE_HISTORY_RETENTION", "31d")
    assert f'flag{{name="retentionPeriod", value="{retention}"' in flags, [
        line for line in flags.splitlines() if "retentionPeriod" in line
    ]

    # A new container (its own file system gone), the same volume: every sample the store
    # held before is there again. (Compared raw: the rates the API computes from them may
    # differ at the same points, the store estimating the scrape interval from the samples
    # around, and the restart leaves a gap.)
    stored = stored_samples(channel.name)
    assert any(name == "sluice_channel_events_in_total" for name, *_ in stored), stored
    stopped_at = time.time()
    compose("up", "--detach", "--no-deps", "--no-build", "--force-recreate", "history", timeout=180)

    def scraped_again() -> bool:
        answers.append(history(http, channel.name, "events_in,batch_duration"))
        return max(known(answers[-1], "events_in"), default=0) > stopped_at + 10

    took = wait_for("history scraped after the restart", scraped_again, 180, ("history",))
    print(f"history: the recreated store answered and scraped again after {took:.0f} s")
    lost = stored - stored_samples(channel.name)
    assert not lost, f"{len(lost)} of {len(stored)} samples lost: {sorted(lost)[:5]}"
    # The API answers the points from before the restart again.
    again = known(answers[-1], "events_in")
    assert any(t < stopped_at - settled for t in again), again


def stored_samples(channel: str) -> set[tuple[str, str, int, float]]:
    """Every raw sample the history store holds for the channel: (metric name, labels, time in
    ms, value), from its export API inside the history container (it is not published)."""
    script = (
        "import sys, urllib.parse, urllib.request\n"
        "query = urllib.parse.urlencode({'match[]': '{channel=\"%s\"}' % sys.argv[1]})\n"
        "url = 'http://127.0.0.1:8428/api/v1/export?' + query\n"
        "sys.stdout.write(urllib.request.urlopen(url, timeout=60).read().decode())\n"
    )
    out = compose("exec", "-T", "history", "python", "-c", script, channel, timeout=120)
    samples = set()
    for line in filter(None, out.splitlines()):
        series = json.loads(line)
        labels = dict(series["metric"])
        name = labels.pop("__name__")
        key = json.dumps(labels, sort_keys=True)
        for stamp, value in zip(series["timestamps"], series["values"], strict=True):
            samples.add((name, key, stamp, value))
    return samples
