"""Compatibility levels (console/schemas), with Avro and JSON Schema examples: each level
decides from the same evolutions as Confluent Schema Registry does."""

from __future__ import annotations

import json

import pytest

from console.schemas import (
    COMPATIBILITY_LEVELS,
    InvalidSchema,
    ParsedSchema,
    check_compatibility,
    parse_schema,
)


def avro(*fields: dict) -> ParsedSchema:
    return parse_schema(
        "AVRO", json.dumps({"type": "record", "name": "Order", "fields": list(fields)})
    )


ID = {"name": "id", "type": "string"}
AMOUNT = {"name": "amount", "type": "int"}
AMOUNT_DEFAULT = {"name": "amount", "type": "int", "default": 0}
AMOUNT_LONG = {"name": "amount", "type": "long"}
AMOUNT_STRING = {"name": "amount", "type": "string"}

# (old, new, compatible levels among BACKWARD, FORWARD, FULL, NONE)
AVRO_CASES = {
    "field added with a default": (avro(ID), avro(ID, AMOUNT_DEFAULT), {"B", "F", "U", "N"}),
    "field added without a default": (avro(ID), avro(ID, AMOUNT), {"F", "N"}),
    "field with a default removed": (avro(ID, AMOUNT_DEFAULT), avro(ID), {"B", "F", "U", "N"}),
    "field without a default removed": (avro(ID, AMOUNT), avro(ID), {"B", "N"}),
    "int widened to long": (avro(ID, AMOUNT), avro(ID, AMOUNT_LONG), {"B", "N"}),
    "int changed to string": (avro(ID, AMOUNT), avro(ID, AMOUNT_STRING), {"N"}),
}
LEVELS = {"B": "BACKWARD", "F": "FORWARD", "U": "FULL", "N": "NONE"}


@pytest.mark.parametrize("case", sorted(AVRO_CASES))
@pytest.mark.parametrize("short", sorted(LEVELS))
def test_avro_evolutions_per_level(case: str, short: str) -> None:
    old, new, compatible = AVRO_CASES[case]
    for level in (LEVELS[short], f"{LEVELS[short]}_TRANSITIVE"):
        if level == "NONE_TRANSITIVE":
            continue
        problems = check_compatibility(level, new, [old])
        assert (not problems) == (short in compatible), (case, level, problems)


def test_avro_backward_names_the_missing_default() -> None:
    (problem,) = check_compatibility("BACKWARD", avro(ID, AMOUNT), [avro(ID)])
    assert problem.startswith("READER_FIELD_MISSING_DEFAULT_VALUE") and "amount" in problem


def test_transitive_levels_check_every_version_the_others_only_the_latest() -> None:
    v1 = avro(ID)
    v2 = avro(ID, AMOUNT_DEFAULT)
    # v3 drops the default: readable from v2 data (amount is there), not from v1 data.
    v3 = avro(ID, AMOUNT)
    assert check_compatibility("BACKWARD", v3, [v1, v2]) == []
    assert check_compatibility("BACKWARD_TRANSITIVE", v3, [v1, v2]) != []
    # FORWARD: v1's reader cannot read data from a schema that lost "id" (no default).
    v4 = avro(AMOUNT_DEFAULT)
    v0 = avro(ID, AMOUNT_DEFAULT)
    assert check_compatibility("FORWARD", v4, [v0, avro(AMOUNT_DEFAULT)]) == []
    assert check_compatibility("FORWARD_TRANSITIVE", v4, [v0, avro(AMOUNT_DEFAULT)]) != []
    assert check_compatibility("FULL_TRANSITIVE", v4, [v0, avro(AMOUNT_DEFAULT)]) != []


def test_every_level_is_known_and_none_accepts_anything() -> None:
    assert set(COMPATIBILITY_LEVELS) == {
        "BACKWARD",
        "BACKWARD_TRANSITIVE",
        "FORWARD",
        "FORWARD_TRANSITIVE",
        "FULL",
        "FULL_TRANSITIVE",
        "NONE",
    }
    json_schema = parse_schema("JSON", '{"type": "string"}')
    assert check_compatibility("NONE", json_schema, [avro(ID)]) == []
    assert check_compatibility("BACKWARD", json_schema, [avro(ID)]) != []  # type changed


def js(properties: dict, *, required=(), closed: bool = True, **more) -> ParsedSchema:
    schema = {"type": "object", "properties": properties, **more}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return parse_schema("JSON", json.dumps(schema))


STR = {"type": "string"}
NUM = {"type": "number"}
INT = {"type": "integer"}

JSON_CASES = {
    # a closed content model: a new optional property is read by the new reader (the old
    # writer never wrote it), while an old closed reader refuses it
    "optional property added (closed)": (js({"id": STR}), js({"id": STR, "n": NUM}), {"B", "N"}),
    "required property added (closed)": (
        js({"id": STR}),
        js({"id": STR, "n": NUM}, required=["n"]),
        {"N"},
    ),
    "property removed (closed)": (js({"id": STR, "n": NUM}), js({"id": STR}), {"F", "N"}),
    "integer widened to number": (js({"n": INT}), js({"n": NUM}), {"B", "N"}),
    "string changed to number": (js({"n": STR}), js({"n": NUM}), {"N"}),
    "enum extended": (
        js({"c": {"enum": ["a", "b"]}}),
        js({"c": {"enum": ["a", "b", "c"]}}),
        {"B", "N"},
    ),
    "maxLength lowered": (
        js({"s": {"type": "string", "maxLength": 10}}),
        js({"s": {"type": "string", "maxLength": 5}}),
        {"F", "N"},
    ),
    # Confluent's open content model: the old writer may have sent any "n", so a typed "n"
    # added to an open model is not backward compatible; removing one is
    "typed property added (open)": (
        js({"id": STR}, closed=False),
        js({"id": STR, "n": NUM}, closed=False),
        {"F", "N"},
    ),
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
@pytest.mark.parametrize("short", sorted(LEVELS))
def test_json_schema_evolutions_per_level(case: str, short: str) -> None:
    old, new, compatible = JSON_CASES[case]
    problems = check_compatibility(LEVELS[short], new, [old])
    assert (not problems) == (short in compatible), (case, LEVELS[short], problems)


def test_json_schema_refs_are_followed() -> None:
    def with_ref(amount: dict) -> ParsedSchema:
        return parse_schema(
            "JSON",
            json.dumps(
                {
                    "type": "object",
                    "properties": {"a": {"$ref": "#/definitions/Amount"}},
                    "definitions": {"Amount": amount},
                }
            ),
        )

    assert check_compatibility("BACKWARD", with_ref(NUM), [with_ref(INT)]) == []
    (problem,) = check_compatibility("BACKWARD", with_ref(STR), [with_ref(INT)])
    assert problem.startswith("TYPE_CHANGED at #/properties/a")


@pytest.mark.parametrize(
    ("schema_type", "text", "why"),
    [
        ("AVRO", '{"type": "record", "name": "X"}', "fields"),
        ("AVRO", '{"type": "nope"}', "nope"),
        ("AVRO", "not json at all", "not JSON"),
        ("JSON", '{"type": 12}', "type"),
        ("JSON", "[1, 2]", "object or a boolean"),
        ("PROTOBUF", "syntax = 'proto3'; message X {}", "not .proto text"),
        ("PROTOBUF", "AAAA", "Invalid schema"),
        ("XML", "<x/>", "Unknown schema type"),
    ],
)
def test_invalid_schemas_say_why(schema_type: str, text: str, why: str) -> None:
    with pytest.raises(InvalidSchema, match=why):
        parse_schema(schema_type, text)


def test_the_same_schema_written_differently_has_one_canonical_text() -> None:
    compact = parse_schema("AVRO", json.dumps({"type": "record", "name": "A", "fields": []}))
    spaced = parse_schema("AVRO", '{ "type" : "record",\n "name": "A", "fields": [ ] }')
    assert compact.canonical == spaced.canonical


def test_avro_references_resolve_named_types() -> None:
    money = json.dumps(
        {"type": "record", "name": "Money", "namespace": "m", "fields": [AMOUNT_LONG]}
    )
    order = json.dumps(
        {"type": "record", "name": "Order", "fields": [{"name": "p", "type": "m.Money"}]}
    )
    with pytest.raises(InvalidSchema):
        parse_schema("AVRO", order)
    assert parse_schema("AVRO", order, {"m.Money": money}).schema_type == "AVRO"
