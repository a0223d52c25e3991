"""A channel's per-stage and per-rule counts since it was first started, across its drivers.

A driver counts the events of the batches it ran (``runtime_adapter.host.progress``): its
totals start from 0 when the connector starts in another driver (a restart, a move, a crash
recovered, a stop and start) or when its query restarts with other stages. Shown as they are,
a rule that matched all of 300 events said "62 matched" after a restart. So the control loop
carries them over (:func:`carry`): it keeps, per stage and per rule, what earlier drivers
counted (``carried``) and the current driver's last report (``raw``); when the reports come
from another driver (its id or its Spark application changed) or a count went down (the same
driver counting again from 0), the last report is added to what is carried. What every reader
shows (the status, the pages, ``/metrics``) is ``carried + raw``.

What a driver counted after its last report was read (a ``kill -9`` between two reports) is
not carried: those batches are committed, not read again, and their events are missing from
the totals (the rates are unaffected). A stage that is no longer in the channel (a new
revision changed its stages) is dropped with its counts. A report without counts (a worker
saying STOPPED, a driver before its first batch) changes nothing but the rates, which are
then 0 (:func:`resting`).
"""

from __future__ import annotations

import copy
from typing import Any

STAGE_COUNTS = ("in", "out", "failed")
RULE_COUNTS = ("matched", "delivered", "failed")
TARGET_COUNTS = ("delivered", "failed")


def carry(
    base: dict[str, Any] | None,
    driver: str,
    stages: Any,
    rules: Any,
) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """``(new base, stages, rules)``: a report's counts with what earlier drivers counted
    added. ``base`` is what the last call returned (``{}`` at first), ``driver`` names the
    reporting driver (its id and its Spark application). Counts in another shape than a
    list of objects are passed on as they are (the status' readers skip them)."""
    base = copy.deepcopy(base) if isinstance(base, dict) else {}
    new_driver = base.get("driver") != driver
    base["driver"] = driver
    shown_stages: list[Any] = []
    stage_base: dict[str, Any] = base.get("stages") or {}
    kept: dict[str, Any] = {}
    for stage in stages if isinstance(stages, list) else []:
        if not isinstance(stage, dict):
            shown_stages.append(stage)  # the status' readers skip what is not a count
            continue
        key = f"{stage.get('stage')}:{stage.get('index')}:{stage.get('type')}"
        entry = _carried(stage_base.get(key), _counts(stage, STAGE_COUNTS), new_driver)
        kept[key] = entry
        shown_stages.append({**stage, **_sum(entry)})
    base["stages"] = kept

    shown_rules: list[Any] = []
    rule_base: dict[str, Any] = base.get("rules") or {}
    kept_rules: dict[str, Any] = {}
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, dict) or not rule.get("rule"):
            shown_rules.append(rule)
            continue
        name = str(rule.get("rule"))
        previous = rule_base.get(name) or {}
        entry = _carried(previous, _counts(rule, RULE_COUNTS), new_driver)
        targets = []
        kept_targets: dict[str, Any] = {}
        for target in rule.get("targets") or []:
            if not isinstance(target, dict):
                continue
            sink = str(target.get("sink"))
            counted = _carried(
                (previous.get("targets") or {}).get(sink),
                _counts(target, TARGET_COUNTS),
                new_driver,
            )
            kept_targets[sink] = counted
            targets.append({**target, **_sum(counted)})
        kept_rules[name] = {**entry, "targets": kept_targets}
        shown = {**rule, **_sum(entry)}
        if "targets" in rule:
            shown["targets"] = targets
        shown_rules.append(shown)
    base["rules"] = kept_rules
    return base, shown_stages, shown_rules


def resting(metrics: Any) -> list[dict[str, Any]]:
    """The counts shown while no driver reports any (stopped, or a new driver before its
    first batch): the totals so far, every rate 0 (nothing is counted flowing)."""
    return [
        {k: (0.0 if k.endswith("_per_second") else v) for k, v in item.items()}
        for item in (metrics if isinstance(metrics, list) else [])
        if isinstance(item, dict)
    ]


def _counts(item: dict[str, Any], names: tuple[str, ...]) -> dict[str, int]:
    return {name: _number(item.get(name)) for name in names}


def _carried(previous: Any, raw: dict[str, int], new_driver: bool) -> dict[str, Any]:
    """``{"carried": {...}, "raw": {...}}`` after a report whose counts are ``raw``."""
    carried = dict.fromkeys(raw, 0)
    if isinstance(previous, dict):
        carried.update({k: _number(v) for k, v in (previous.get("carried") or {}).items()})
        last = {k: _number(v) for k, v in (previous.get("raw") or {}).items()}
        counted_again = any(raw[k] < last.get(k, 0) for k in raw)
        if new_driver or counted_again:
            for name in raw:
                carried[name] = carried.get(name, 0) + last.get(name, 0)
    return {"carried": {k: carried.get(k, 0) for k in raw}, "raw": raw}


def _sum(entry: dict[str, Any]) -> dict[str, int]:
    return {k: entry["carried"][k] + entry["raw"][k] for k in entry["raw"]}


def _number(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
