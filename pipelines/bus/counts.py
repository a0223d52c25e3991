"""A bus's counts per rule and per target: counted from a batch's persisted deliveries,
observed in the write's own job (:func:`target_counts`), or read from a compiled bus's
progress report (:data:`RULE_METRICS`); :func:`rule_counts` makes them the per-rule report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from pipelines.bus.plan import RULE, TARGET, BusPlan, Target

logger = logging.getLogger("sluice.bus")

RuleCounts = list[dict[str, Any]]
OnRuleCounts = Callable[[int, RuleCounts], None]


@dataclass
class Delivery:
    """What a target got in one batch: rows sent, rows failed."""

    rows: int = 0
    failed: int = 0


def rule_counts(
    plan: BusPlan, deliveries: Mapping[int, Delivery], failed_in_rules: Mapping[int, int]
) -> RuleCounts:
    """A batch's counts per rule, from the rows each target got (``deliveries``, by the
    target's index) and the events each rule's transforms failed (``failed_in_rules``):
    every rule of the spec, disabled ones with zeros:
    ``{"rule", "matched", "delivered", "failed", "targets": [{"sink", "type",
    "delivered", "failed"}]}``.

    A target's ``delivered`` is the events written to it, ``failed`` those that became
    dead letters there. A rule's ``matched`` is the events its pattern selected (past
    its own transforms, when it has some), ``failed`` those that failed in its
    transforms plus the most any of its targets failed, ``delivered`` the least any of
    its targets delivered: for a rule with one target, exactly its events.
    """
    counts: RuleCounts = []
    for rule in plan.rules:
        targets: list[dict[str, Any]] = []
        delivered: list[int] = []
        failed: list[int] = []
        for target in rule.targets:
            delivery = deliveries[target.index]
            delivered.append(max(delivery.rows - delivery.failed, 0))
            failed.append(delivery.failed)
            targets.append(
                {
                    "sink": target.path,
                    "type": target.type,
                    "delivered": delivered[-1],
                    "failed": failed[-1],
                }
            )
        reached = max((deliveries[t.index].rows for t in rule.targets), default=0)
        rule_failed = failed_in_rules[rule.index]
        counts.append(
            {
                "rule": rule.name,
                "matched": reached + rule_failed,
                "delivered": min(delivered, default=0),
                "failed": rule_failed + max(failed, default=0),
                "targets": targets,
            }
        )
    return counts


COUNTS = "__sluice_counts"
"""The observed metric holding the rows per target."""
RULE_METRICS = "sluice_rules"
"""The name of a compiled bus's observed per-target counts in its progress reports."""


def target_counts(targets: Sequence[Target]) -> Column:
    """One aggregate counting the delivery rows per target: ``histogram_numeric`` of TARGET
    with a bin per target, which is exact while the distinct values are no more than the
    bins (each value keeps its own bin: a binary search per row), where a ``count_if`` per
    target costs a comparison per target on every row."""
    bins = max(len(targets), 2)
    return F.expr(f"histogram_numeric(`{TARGET}`, {bins})").alias(COUNTS)


def observed_counts(observation: Observation) -> dict[int, int] | None:
    """Rows per target that the write's job observed (:func:`target_counts`); None when the
    job did not fulfil the observation (it is fulfilled as the write returns)."""
    java = observation._jo
    if java is None or not java.future().isCompleted():
        logger.warning("the bus's per-target counts were not observed: counting them again")
        return None
    return histogram_bins(observation.get[COUNTS])


def histogram_bins(bins: Iterable[Any] | None) -> dict[int, int]:
    """Rows per target from :func:`target_counts`' histogram (its bins' ``x`` and ``y``)."""
    return {int(b["x"]): round(b["y"]) for b in bins or []}


def count_rows(deliveries: DataFrame) -> dict[int, int]:
    """Rows per target of (persisted) deliveries: one small aggregation."""
    return {
        int(row[TARGET]): int(row["count"])
        for row in deliveries.groupBy(TARGET).count().collect()
        if row[TARGET] is not None
    }


def count_rule_rows(deliveries: DataFrame) -> dict[tuple[int, int], int]:
    """Rows per (rule, target) of (persisted) deliveries."""
    return {
        (int(row[RULE]), int(row[TARGET])): int(row["count"])
        for row in deliveries.groupBy(RULE, TARGET).count().collect()
    }
