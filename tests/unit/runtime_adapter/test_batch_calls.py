"""The Spark runtime's batch calls (the console's bulk actions) leave Redis exactly as the
same calls made one connector at a time do: the same desired state, statuses, generations,
removed checkpoints, and the same workers and drivers woken. Real Redis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtime_adapter.base import ConnectorStatus, Deployment
from runtime_adapter.checkpoint import checkpoint_dir
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState

SPEC = {"source": {"type": "kafka", "config": {}}, "transforms": [], "sink": {"type": "kafka"}}
IDS = [f"c{n}" for n in range(6)]
KEY = "0a1b2c3d4e5f"  # checkpoint keys are <name>.<12 hex digits>


def deployment(cid: str, n: int, target: TargetState = TargetState.RUNNING) -> Deployment:
    return Deployment(
        connector_id=cid,
        channel=cid,
        revision=n + 1,
        spec=SPEC,
        target_state=target,
        worker_id=None if n % 3 == 0 else f"w{n % 2}",
        generation=0,
        checkpoint=f"{cid}.{KEY}",
        discovery=n % 2 == 0,
    )


def dump(runtime: SparkRuntime) -> dict[str, Any]:
    """Every key of the runtime's prefix: hashes as dicts (statuses without their time
    stamp), nudge lists as "woken" (how often is not the point), plus the checkpoints."""
    redis = runtime.store.redis
    prefix = runtime.store.prefix + ":"
    found: dict[str, Any] = {}
    for key in sorted(redis.scan_iter(match=prefix + "*")):
        name = key[len(prefix) :]
        kind = redis.type(key)
        if name.startswith("nudge:"):
            found[name] = "woken"
        elif kind == "hash":
            values = redis.hgetall(key)
            if name == "status":
                values = {
                    cid: {k: v for k, v in json.loads(raw).items() if k != "updated_at"}
                    for cid, raw in values.items()
                }
            found[name] = values
        elif kind == "list":
            found[name] = redis.lrange(key, 0, -1)
        else:
            found[name] = kind
    root = runtime.checkpoint_root
    found["checkpoints"] = sorted(p.name for p in root.iterdir()) if root.exists() else []
    return found


def prepared(redis_url: str, prefix: str, root: Path) -> SparkRuntime:
    runtime = SparkRuntime(redis_url, prefix, checkpoint_root=root)
    for n, cid in enumerate(IDS[:4]):  # c4, c5 never deployed
        runtime.deploy(deployment(cid, n, TargetState.PAUSED))
        checkpoint_dir(root, f"{cid}.{KEY}").mkdir(parents=True)
    runtime.store.force_status(
        ConnectorStatus(connector_id="c1", state=State.RUNNING, worker_id="w1", driver_id="d7")
    )
    return runtime


def test_batch_calls_leave_redis_as_one_call_per_connector(redis_url, prefix, tmp_path):
    one = prepared(redis_url, prefix + "-one", tmp_path / "one")
    many = prepared(redis_url, prefix + "-many", tmp_path / "many")

    deployments = [deployment(cid, n) for n, cid in enumerate(IDS)]
    for item in deployments:
        one.deploy(item)
    many.deploy_many(deployments)
    assert dump(one) == dump(many)

    for cid in IDS[:3]:
        one.set_target_state(cid, TargetState.STOPPED)
    many.set_target_states(IDS[:3], TargetState.STOPPED)
    assert dump(one) == dump(many)

    singles = {cid: one.restart(cid) for cid in ["c1", "c2", "c5"]}
    assert many.restart_many(["c1", "c2", "c5"]) == singles == {"c1": 1, "c2": 1, "c5": 1}
    assert dump(one) == dump(many)

    for cid in ["c0", "c2", "c4", "unknown"]:
        one.delete(cid)
    many.delete_many(["c0", "c2", "c4", "unknown"])
    after = dump(many)
    assert dump(one) == after
    assert after["checkpoints"] == [f"c1.{KEY}", f"c3.{KEY}"]
    assert set(after["desired:spec"]) == {"c1", "c3", "c5"}
    assert many.deploy_many([]) is None and many.restart_many([]) == {}
    many.delete_many([])
    assert dump(many) == after
