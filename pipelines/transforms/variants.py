"""SQL builders that read and edit VARIANT values addressed by paths (native, no UDF).

Objects are edited through their member map: ``try_variant_get(node, '$', 'map<string,
variant>')`` -> ``map_filter`` / ``map_concat`` / ``transform_values`` -> ``to_variant_object``.
Nested edits recurse inside ``transform_values`` lambdas, so the generated text grows
linearly with the path's depth. JSON ``null`` members are VARIANT nulls, never SQL NULL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.cloudevents import attribute_sql
from pipelines.patterns import variant_child
from pipelines.spec.fieldpaths import PathStep
from pipelines.sql import sql_string

EMPTY_OBJECT = "parse_json('{}')"
FieldsEdit = Callable[[str, str, int], str]
"""``(members map SQL, key literal SQL, depth) -> new members map SQL``."""


def members_sql(node: str) -> str:
    """The members of the VARIANT object ``node`` as ``map<string,variant>``; NULL when
    ``node`` is not an object."""
    return f"try_variant_get({node}, '$', 'map<string,variant>')"


def is_object_sql(node: str) -> str:
    """True when ``node`` is a VARIANT object, false otherwise (never NULL)."""
    return f"({members_sql(node)} IS NOT NULL)"


def read_sql(steps: Sequence[PathStep]) -> str:
    """The VARIANT at ``steps`` in the event's JSON form (NULL when absent)."""
    node = attribute_sql(str(steps[0]))
    for step in steps[1:]:
        if isinstance(step, int):
            node = f"try_variant_get({node}, '$[{step}]', 'variant')"
        else:
            node = variant_child(node, step)
    return node


def text_sql(value: str) -> str:
    """Text of a VARIANT: a string as is, any other value as JSON; NULL for absent/null."""
    return f"try_variant_get({value}, '$', 'string')"


def failure_message(stage: str, problem: str, field: str) -> Column:
    """The message of a failed event: the stage type, the problem, the field and the event id,
    e.g. ``cast: cannot cast the value to long (field data.qty, event o-7)``."""
    prefix = F.lit(f"{stage}: {problem} (field {field}, event ")
    return F.concat(prefix, F.coalesce(F.col("id"), F.lit("without id")), F.lit(")"))


def edit_object_sql(node: str, keys: Sequence[str], edit: FieldsEdit, create: bool) -> str:
    """SQL for the object ``node`` with ``edit`` applied to the members of the object at
    ``keys[:-1]`` (``edit`` receives the literal of ``keys[-1]``).

    An intermediate member that is absent or not an object is left as is, unless
    ``create``: then a missing one is created as ``{}`` (a non-object one is left as is).
    """
    return _edit(node, tuple(keys), edit, create, depth=0)


def _edit(node: str, keys: tuple[str, ...], edit: FieldsEdit, create: bool, depth: int) -> str:
    members, key = members_sql(node), sql_string(keys[0])
    if len(keys) == 1:
        return f"to_variant_object({edit(members, key, depth)})"
    k, v = f"k{depth}", f"v{depth}"
    inner = _edit(v, keys[1:], edit, create, depth + 1)
    edited = (
        f"transform_values({members}, ({k}, {v}) -> "
        f"CASE WHEN {k} = {key} AND {is_object_sql(v)} THEN {inner} ELSE {v} END)"
    )
    if create:
        created = _edit(EMPTY_OBJECT, keys[1:], edit, create, depth + 1)
        edited = (
            f"CASE WHEN map_contains_key({members}, {key}) THEN {edited} "
            f"ELSE map_concat({members}, map({key}, {created})) END"
        )
    return f"to_variant_object({edited})"


def set_path_sql(node: str, keys: Sequence[str], value: str) -> str:
    """SQL for the object ``node`` with the member at ``keys`` set to the VARIANT ``value``;
    missing parent objects are created (one that is not an object is left as is)."""
    return edit_object_sql(
        node, keys, lambda members, key, _: with_key_sql(members, key, value), create=True
    )


def without_key_sql(members: str, key: str) -> str:
    """The members map without ``key``."""
    return f"map_filter({members}, (mk, mv) -> mk != {key})"


def with_key_sql(members: str, key: str, value: str) -> str:
    """The members map with ``key`` set to the VARIANT ``value`` (replacing it if present)."""
    return f"map_concat({without_key_sql(members, key)}, map({key}, {value}))"


def map_value_sql(members: str, key: str, change: Callable[[str], str]) -> str:
    """The members map with the value of ``key`` (if present) replaced by ``change(value)``."""
    return (
        f"transform_values({members}, (mk, mv) -> "
        f"CASE WHEN mk = {key} THEN {change('mv')} ELSE mv END)"
    )
