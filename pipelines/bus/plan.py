"""The compiled rules of a bus (:class:`BusPlan`): each rule's pattern as a native predicate,
its stages parsed once, its targets numbered, and the routing of the rules without transforms
of their own as one projection (:attr:`BusPlan.direct_routing`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.cloudevents import attribute_sql
from pipelines.patterns import pattern_predicate, route_plans, use_native_matching
from pipelines.spec import ChannelSpec, StageSpec, parse_stage_config
from pipelines.spec.patterns import CompiledPattern, compile_pattern

RULE = "__sluice_rule"
"""The deliveries' column holding the rule's place in the spec (-1: no rule, a failure of
the shared stages)."""
TARGET = "__sluice_target"
"""The deliveries' column holding the target's place among the bus's targets (-1: none, an
event that failed before reaching one)."""


@dataclass(frozen=True)
class Target:
    """One sink of one rule: its place among the bus's targets, its path in the spec."""

    index: int
    rule: int
    rule_name: str
    position: int
    stage: StageSpec
    config: BaseModel

    @property
    def path(self) -> str:
        return f"rules[{self.rule}].sinks[{self.position}]"

    @property
    def type(self) -> str:
        return self.stage.type


@dataclass(frozen=True)
class Rule:
    """A rule of the running bus, compiled: its predicate (None: every event), its parsed
    transforms, its targets."""

    index: int
    name: str
    enabled: bool
    predicate: Column | None
    transforms: tuple[tuple[StageSpec, BaseModel], ...]
    targets: tuple[Target, ...]
    compiled: CompiledPattern | None = None


@dataclass
class BusPlan:
    """The compiled rules of a bus (built once per spec, used by every batch until replaced)."""

    spec: ChannelSpec
    rules: list[Rule]
    native_matching: bool = False
    targets: list[Target] = field(init=False)

    def __post_init__(self) -> None:
        self.targets = [target for rule in self.rules for target in rule.targets]

    @property
    def active(self) -> list[Rule]:
        return [rule for rule in self.rules if rule.enabled]

    def delivering(self) -> list[Target]:
        """The targets of the enabled rules."""
        return [target for rule in self.active for target in rule.targets]

    @cached_property
    def direct_routing(self) -> Column | None:
        """The targets (ARRAY<INT>, NULL elements left in) of an event for the enabled rules
        without transforms of their own (None: there are none), every pattern decided on the
        same parsed event in one projection.

        With Sluice's functions the rules that test one top-level member are decided by one
        ``route`` call per member (:func:`pipelines.patterns.route_plans`: exact values
        looked up, not tested rule by rule); the others, and every rule without them, by
        :func:`routing_column`'s ``CASE WHEN`` per rule.
        """
        direct = [rule for rule in self.active if not rule.transforms]
        if not direct:
            return None
        columns: list[Column] = []
        others = direct
        if self.native_matching:
            patterned = [(rule, rule.compiled) for rule in direct if rule.compiled is not None]
            plans, rest = route_plans(
                [(compiled, [t.index for t in rule.targets]) for rule, compiled in patterned]
            )
            columns = [
                F.expr(native.route(attribute_sql(plan.member), plan.routes)) for plan in plans
            ]
            others = [rule for rule in direct if rule.compiled is None]
            others += [patterned[position][0] for position in rest]
        if others:
            columns.append(
                routing_column(
                    [(rule.predicate, [t.index for t in rule.targets]) for rule in others]
                )
            )
        return columns[0] if len(columns) == 1 else F.concat(*columns)


def compile_bus(spark: SparkSession, spec: ChannelSpec) -> BusPlan:
    """Compile a bus's rules: each pattern into a native predicate over the event's
    CloudEvents JSON form (:func:`rule_predicate`), each stage config parsed once."""
    assert spec.rules is not None, "a bus has rules"
    native_matching = use_native_matching(spark, None)
    rules: list[Rule] = []
    index = 0
    for i, rule in enumerate(spec.rules):
        targets = []
        for j, stage in enumerate(rule.sinks):
            config = parse_stage_config("sink", stage)
            targets.append(Target(index, i, rule.name, j, stage, config))
            index += 1
        transforms = tuple(
            (stage, parse_stage_config("transform", stage)) for stage in rule.transforms
        )
        predicate = rule_predicate(rule.pattern, native_matching=native_matching)
        compiled = None if rule.pattern is None else compile_pattern(rule.pattern)
        rules.append(
            Rule(i, rule.name, rule.enabled, predicate, transforms, tuple(targets), compiled)
        )
    return BusPlan(spec, rules, native_matching)


def rule_predicate(
    pattern: Mapping[str, Any] | None,
    child: Callable[[str], str] = attribute_sql,
    *,
    native_matching: bool = False,
) -> Column | None:
    """A rule's never-NULL predicate (:func:`pipelines.patterns.pattern_predicate`) over the
    event's top-level members given by ``child``; None for a rule without a pattern."""
    if pattern is None:
        return None
    return pattern_predicate(pattern, child, native_matching=native_matching)


def routing_column(routes: Sequence[tuple[Column | None, Sequence[int]]]) -> Column:
    """``array(CASE WHEN <predicate> THEN <target> END, ...)``: for each (predicate, targets)
    pair, the targets an event goes to (NULL elements where the predicate does not hold).

    Exploded and filtered on NOT NULL it gives one row per (event, target), every predicate
    evaluated once per event in one projection (Spark eliminates the repeated predicate of
    a rule with several targets as a common subexpression).
    """
    elements = [
        F.lit(target) if predicate is None else F.when(predicate, F.lit(target))
        for predicate, targets in routes
        for target in targets
    ]
    return F.array(*elements) if elements else F.array().cast("array<int>")


def rows_of(deliveries: DataFrame, targets: Sequence[Target]) -> DataFrame:
    indexes = [t.index for t in targets]
    if len(indexes) == 1:
        return deliveries.filter(F.col(TARGET) == F.lit(indexes[0]))
    return deliveries.filter(F.col(TARGET).isin(indexes))
