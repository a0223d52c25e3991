"""Which of a bus's rules one sample event reaches, decided without Spark (the rules bench).

A running bus gives an event to every enabled rule whose pattern it matches, then runs the
rule's own transforms on it before its sinks. Of those transforms only the filter is
decided here: its event pattern is evaluated by the same pure-Python evaluator as the
pattern test (:mod:`pipelines.spec.patterns`), which passes the same conformance vectors as
the Spark path. Every other transform compiles to Spark expressions with no Python twin, so
a rule whose event would go through one is *undecided*, and the answer says which transform
stops the decision, rather than guessing what Spark would do. A filter after such a
transform sees an event this module cannot make, so it is not evaluated either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pipelines.spec.patterns import compile_pattern
from pipelines.spec.patterns.evaluator import matches_compiled

FILTER = "filter"
"""The one transform type decided here (its config's ``pattern``)."""


class Verdict(StrEnum):
    """Whether the sample reaches the rule's sinks, and if not, what stops it."""

    MATCHED = "matched"
    """Enabled, the pattern matches and every transform of the rule is a filter that keeps it."""
    NO_MATCH = "no_match"
    """The rule's pattern does not match the event."""
    DISABLED = "disabled"
    """The rule is disabled: a running bus gives it no event."""
    DROPPED = "dropped"
    """The pattern matches; one of the rule's own filters drops the event."""
    UNDECIDED = "undecided"
    """The pattern matches; a transform only Spark runs stands before the sinks."""


@dataclass(frozen=True)
class RuleRoute:
    """One rule's answer. ``stage`` is the transform that decided (a filter that dropped the
    event) or that could not be decided (``transforms[1]``, relative to the rule); empty
    otherwise. ``reason`` says it in words."""

    rule: str
    verdict: Verdict
    pattern_matched: bool
    stage: str
    reason: str

    @property
    def matched(self) -> bool | None:
        """True: the event reaches the rule's sinks; False: it does not; None: not decided."""
        if self.verdict is Verdict.UNDECIDED:
            return None
        return self.verdict is Verdict.MATCHED


def route_sample(rules: Sequence[Mapping[str, Any]], event: Mapping[str, Any]) -> list[RuleRoute]:
    """For each rule (``{"name", "enabled", "pattern", "transforms"}`` as in a bus's spec,
    patterns already validated), in order, whether ``event`` (its CloudEvents JSON form,
    after the channel's shared transforms) reaches the rule's sinks.

    Raises :class:`pipelines.spec.patterns.PatternError` when a pattern is invalid.
    """
    return [_route(rule, dict(event)) for rule in rules]


def _route(rule: Mapping[str, Any], event: dict[str, Any]) -> RuleRoute:
    name = str(rule.get("name", ""))
    if not rule.get("enabled", True):
        return RuleRoute(
            name, Verdict.DISABLED, False, "", "The rule is disabled: it gets no events."
        )
    pattern = rule.get("pattern")
    if pattern is not None and not matches_compiled(compile_pattern(pattern), event):
        return RuleRoute(name, Verdict.NO_MATCH, False, "", "Its pattern does not match the event.")
    for index, stage in enumerate(rule.get("transforms") or []):
        number, type_ = index + 1, str(stage.get("type", ""))
        where = f"transforms[{index}]"
        if type_ != FILTER:
            return RuleRoute(
                name,
                Verdict.UNDECIDED,
                True,
                where,
                f"Its pattern matches, but its transform {number} ({type_}) runs only in "
                "Spark: whether the event reaches the sinks is not decided here.",
            )
        config = stage.get("config") or {}
        if not matches_compiled(compile_pattern(config.get("pattern", {})), event):
            return RuleRoute(
                name,
                Verdict.DROPPED,
                True,
                where,
                f"Its pattern matches; its filter (transform {number}) drops the event.",
            )
    kept = len(rule.get("transforms") or [])
    keep = "its filter keeps" if kept == 1 else f"its {kept} filters keep"
    why = f"Its pattern matches and {keep} the event." if kept else ""
    return RuleRoute(name, Verdict.MATCHED, True, "", why)
