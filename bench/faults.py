"""``make bench-faults`` (``python -m bench.faults``, as root): the fault suite's two failover
tests at the scale of issue 28's targets, repeated, with their figures tabulated.

It runs the fault suite (``scripts/fault-test.sh``: three brokers, Redis, the console, three
runtime hosts in network namespaces of their own, real Spark drivers) on two of its tests:

* **partition**, ``--trials`` times (20): a runtime host cut off from everything (its traffic
  dropped inside its namespace) under a Kafka → Kafka and a Kafka → files channel, events
  flowing; its channels must run elsewhere, the old owner must deliver nothing after the heal,
  the Kafka sink may repeat at most one micro-batch, the files sink none; each trial with
  channels of its own;
* **failover**, once with ``--pairs`` (15) pairs: 30 channels on the three hosts, web, Celery
  and beat stopped, the busiest host killed with ``kill -9``: its channels owned elsewhere
  (target ≤ 15 s) and RUNNING there (target ≤ 60 s), nothing lost, the files sinks exactly once.

Each test appends what it measured to a JSON-lines file (``SLUICE_FAULT_FIGURES``); this script
reads it back and prints a table (figure, value, target, verdict) that is also saved with the
trials in ``bench-results/faults-<time>.{txt,json}``. A failed trial fails its pytest test
(the suite goes on with the next one): the table counts the trials that passed. Bounded by
``--budget`` (5,400 s) for the whole suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.control import RESULTS_DIR, Figure
from tests.support.processes import REPO_ROOT

TESTS = {
    "partition": "tests/faults/test_runtime_faults.py::"
    "test_a_partitioned_host_and_its_successor_never_deliver_side_by_side",
    "failover": "tests/faults/test_group_failover.py",
}


def run_suite(trials: int, pairs: int, budget: float, figures: Path, parts: list[str]) -> int:
    """The fault suite on ``parts``' tests; its exit code."""
    env = {
        **os.environ,
        "SLUICE_FAULT_TRIALS": str(trials),
        "SLUICE_FAULT_FAILOVER_PAIRS": str(pairs),
        "SLUICE_FAULT_FIGURES": str(figures),
        "FAULT_TEST_TIMEOUT": str(int(budget)),
    }
    command = ["bash", "scripts/fault-test.sh", *(TESTS[part] for part in parts)]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, check=False).returncode


def read_figures(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def partition_figures(trials: list[dict[str, Any]], asked: int) -> list[Figure]:
    """One row each: trials that passed, the move, and the worst duplicates seen."""
    if not trials:
        return [
            Figure("partition trials with figures", 0, None, asked, "none finished", unit="trials")
        ]
    moved = [t["moved_after"] for t in trials]
    passed = [
        t
        for t in trials
        if t["kafka_lost"] == 0
        and t["files_lost"] == 0
        and t["twice_after_heal"] == 0
        and t["files_duplicates"] == 0
        and t["kafka_duplicates"] <= t["batch_limit"]
    ]
    note = f"{len(passed)} of {asked} trials passed every check"
    return [
        Figure("partition: moved elsewhere, median", statistics.median(moved), None, len(moved)),
        Figure("partition: moved elsewhere, max", max(moved), None, len(moved)),
        Figure(
            "partition: old owner delivered after the heal (max)",
            max(t["twice_after_heal"] for t in trials),
            0,
            len(trials),
            note,
            unit="events",
        ),
        Figure(
            "partition: Kafka sink duplicates per trial (max)",
            max(t["kafka_duplicates"] for t in trials),
            trials[0]["batch_limit"],
            len(trials),
            "target: one micro-batch at most",
            unit="events",
        ),
        Figure(
            "partition: files sink duplicates (max)",
            max(t["files_duplicates"] for t in trials),
            0,
            len(trials),
            unit="events",
        ),
        Figure(
            "partition: events lost, all trials",
            sum(t["kafka_lost"] + t["files_lost"] for t in trials),
            0,
            len(trials),
            unit="events",
        ),
    ]


def failover_figures(runs: list[dict[str, Any]]) -> list[Figure]:
    if not runs:
        return [Figure("failover runs with figures", 0, None, 1, "none finished", unit="runs")]
    run = runs[-1]
    note = f"{run['moved']} of {run['channels']} channels moved, console down"
    return [
        Figure("failover: owned elsewhere after kill -9", run["owned_after"], 15.0, 1, note),
        Figure("failover: RUNNING elsewhere", run["running_after"], 60.0, 1),
        Figure("failover: every event delivered", run["delivered_after"], None, 1),
        Figure("failover: events lost", run["lost"], 0, 1, unit="events"),
        Figure("failover: files sink duplicates", run["files_duplicates"], 0, 1, unit="events"),
        Figure(
            "failover: Kafka sink duplicates",
            run["kafka_duplicates"],
            None,
            1,
            "at least once",
            unit="events",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="partition trials (20)")
    parser.add_argument("--pairs", type=int, default=15, help="channel pairs of the kill (15)")
    parser.add_argument("--budget", type=float, default=5400.0, help="seconds for the suite")
    parser.add_argument(
        "--part", choices=["all", *TESTS], default="all", help="one of the two tests only"
    )
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-faults needs root (network namespaces, veths, iptables)", file=sys.stderr)
        return 2
    parts = list(TESTS) if args.part == "all" else [args.part]
    with tempfile.TemporaryDirectory(prefix="sluice-bench-faults-") as work:
        figures_file = Path(work) / "figures.jsonl"
        started = time.monotonic()
        code = run_suite(args.trials, args.pairs, args.budget, figures_file, parts)
        took = time.monotonic() - started
        found = read_figures(figures_file)
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS_DIR / f"faults-{stamp}.json").write_text(
        json.dumps({"exit": code, "seconds": took, "trials": found}, indent=2)
    )
    by_test: dict[str, list[dict[str, Any]]] = {}
    for entry in found:
        by_test.setdefault(entry["test"], []).append(entry)
    rows: list[Figure] = []
    if "partition" in parts:
        rows += partition_figures(by_test.get("partition", []), args.trials)
    if "failover" in parts:
        rows += failover_figures(by_test.get("failover", []))
    lines = [
        "bench-faults: "
        + "; ".join(
            f"{args.trials} partition trial(s)"
            if part == "partition"
            else f"a kill -9 under {2 * args.pairs} channels"
            for part in parts
        )
        + f"; the suite took {took:.0f} s (exit {code})",
        "",
        *(f.row() for f in rows),
    ]
    text = "\n".join(lines)
    print("\n" + text)
    (RESULTS_DIR / f"faults-{stamp}.txt").write_text(text + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
