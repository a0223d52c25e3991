"""What changed between two channel specs, field by field, as a reader names it.

:func:`spec_changes` compares two specs (JSON data, valid or not) and lists each change with
a readable path: objects by key (``source.config.topics``), the stage lists by position
(``transforms[1]``, ``rules[big-orders].sinks[0].config.topic``) and a bus's rules by NAME
(``rules[big-orders].pattern``): a rule is the same rule wherever it moved, so inserting one
rule before the others reads as one rule added, not as every rule changed. A rule moved is
one ``reordered`` change of ``rules``. An event pattern and any list that is not a list of
stages or rules are values: they change whole (``rules[big-orders].pattern``), which reads
better than their innermost leaves.

Secrets are the caller's business: compare redacted specs
(:func:`pipelines.spec.secrets.redact`) and no change carries a secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

ChangeKind = Literal["added", "removed", "changed", "reordered"]

_STAGE_LISTS = frozenset({"transforms", "sinks"})
"""Lists whose items are stages: compared position by position."""
_WHOLE_VALUES = frozenset({"pattern"})
"""Object fields compared as one value (an event pattern)."""


class Change(TypedDict):
    """One change: where, what kind, and the values before and after (``None`` for the
    side where the field is absent)."""

    path: str
    change: ChangeKind
    before: Any
    after: Any


def spec_changes(before: Any, after: Any) -> list[Change]:
    """Every difference from ``before`` to ``after``, in a fixed order whatever the order
    of the keys stored (a spec's fields as written in a spec, a rule's, a stage's, then the
    others sorted; rules in ``before``'s order, then those added). Equal specs give ``[]``."""
    changes: list[Change] = []
    _compare(before, after, "", changes)
    return changes


def _compare(before: Any, after: Any, path: str, changes: list[Change]) -> None:
    if before == after:
        return
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in _ordered_keys(before, after):
            inner = f"{path}.{key}" if path else str(key)
            if key not in after:
                changes.append(_change(inner, "removed", before[key], None))
            elif key not in before:
                changes.append(_change(inner, "added", None, after[key]))
            elif key == "rules" and _named_rules(before[key]) and _named_rules(after[key]):
                _compare_rules(before[key], after[key], inner, changes)
            elif key in _WHOLE_VALUES:
                _compare_whole(before[key], after[key], inner, changes)
            elif key in _STAGE_LISTS and isinstance(before[key], list):
                _compare_list(before[key], after[key], inner, changes)
            else:
                _compare(before[key], after[key], inner, changes)
        return
    changes.append(_change(path, "changed", before, after))


_SPEC_ORDER = ("source", "transforms", "sink", "rules", "errors", "runtime")
_RULE_ORDER = ("name", "description", "enabled", "pattern", "transforms", "sinks")
_STAGE_ORDER = ("type", "config")


def _ordered_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The keys of both objects in one fixed order (not the order stored: PostgreSQL's jsonb
    keeps none), so the same two specs list their changes alike on every database: a spec's,
    a rule's or a stage's fields as they are written, then any other sorted."""
    keys = {str(key) for key in (*before, *after)}
    order: tuple[str, ...]
    if "source" in keys:
        order = _SPEC_ORDER
    elif "sinks" in keys or "pattern" in keys:
        order = _RULE_ORDER
    else:
        order = _STAGE_ORDER
    first = [key for key in order if key in keys]
    return first + sorted(keys - set(first))


def _compare_whole(before: Any, after: Any, path: str, changes: list[Change]) -> None:
    if before != after:
        changes.append(_change(path, "changed", before, after))


def _compare_list(before: list[Any], after: Any, path: str, changes: list[Change]) -> None:
    if not isinstance(after, list):
        changes.append(_change(path, "changed", before, after))
        return
    for index in range(max(len(before), len(after))):
        inner = f"{path}[{index}]"
        if index >= len(after):
            changes.append(_change(inner, "removed", before[index], None))
        elif index >= len(before):
            changes.append(_change(inner, "added", None, after[index]))
        else:
            _compare(before[index], after[index], inner, changes)


def _named_rules(rules: Any) -> bool:
    """Whether ``rules`` is a list of objects with distinct string names (else it is
    compared by position, as an invalid spec may hold anything)."""
    if not isinstance(rules, list):
        return False
    names = [rule.get("name") if isinstance(rule, Mapping) else None for rule in rules]
    return all(isinstance(name, str) for name in names) and len(set(names)) == len(names)


def _compare_rules(
    before: list[Mapping[str, Any]],
    after: list[Mapping[str, Any]],
    path: str,
    changes: list[Change],
) -> None:
    old = {rule["name"]: rule for rule in before}
    new = {rule["name"]: rule for rule in after}
    kept_before = [name for name in old if name in new]
    kept_after = [name for name in new if name in old]
    if kept_before != kept_after:
        changes.append(_change(path, "reordered", kept_before, kept_after))
    for name, rule in old.items():
        inner = f"{path}[{name}]"
        if name not in new:
            changes.append(_change(inner, "removed", rule, None))
        else:
            _compare(rule, new[name], inner, changes)
    for name, rule in new.items():
        if name not in old:
            changes.append(_change(f"{path}[{name}]", "added", None, rule))


def _change(path: str, kind: ChangeKind, before: Any, after: Any) -> Change:
    return {"path": path, "change": kind, "before": before, "after": after}
