import { describe, expect, it } from "vitest";

import {
  asEventSchema,
  fieldPaths,
  jsonPathToField,
  patternPaths,
  sampleFromSchema,
  stageFieldPaths,
  suggest,
  unknownFields,
  wordAt,
} from "./shape";

// As the console discovers it (pipelines/discovery.py): types widened, arrays' items merged.
const DISCOVERED = {
  type: "object",
  properties: {
    id: { type: "string" },
    source: { type: "string" },
    specversion: { type: "string" },
    type: { type: "string" },
    time: { type: "string" },
    data: {
      type: "object",
      properties: {
        amount: { type: "number" },
        region: { type: ["null", "string"] },
        lines: { type: "array", items: { type: "object", properties: { sku: { type: "string" } } } },
        meta: { type: "object", properties: {} },
      },
    },
  },
};

describe("field paths", () => {
  it("lists every field with its types, array elements under the array", () => {
    const paths = fieldPaths(DISCOVERED);
    expect(paths.map((f) => f.path)).toEqual([
      "data",
      "data.amount",
      "data.lines",
      "data.lines.sku",
      "data.meta",
      "data.region",
      "id",
      "source",
      "specversion",
      "time",
      "type",
    ]);
    expect(paths.find((f) => f.path === "data.region")?.types).toEqual(["null", "string"]);
  });

  it("puts a payload-only subject schema under data", () => {
    const event = asEventSchema({ type: "object", properties: { sku: { type: "string" } } });
    expect(fieldPaths(event).map((f) => f.path)).toContain("data.sku");
    expect(asEventSchema(DISCOVERED)).toBe(DISCOVERED);
  });
});

describe("fields a stage names", () => {
  it("reads a pattern's keys down to its leaves, through $or", () => {
    expect(
      patternPaths({
        source: ["shop"],
        data: { amount: [{ numeric: [">", 10] }], $or: [{ region: ["eu"] }, { amout: [{ exists: true }] }] },
      }),
    ).toEqual(["source", "data.amount", "data.region", "data.amout"]);
  });

  it("reads input paths, field ops and routes", () => {
    expect(jsonPathToField("$.data.lines[0].sku")).toBe("data.lines.sku");
    expect(jsonPathToField("$")).toBeNull();
    expect(stageFieldPaths("input_transformer", { input_paths: { a: "$.data.amount", b: "$.source" } })).toEqual([
      "data.amount",
      "source",
    ]);
    expect(stageFieldPaths("rename", { fields: { "data.cust": "data.customer" } })).toEqual(["data.cust"]);
    expect(stageFieldPaths("drop", { fields: ["data.secret"] })).toEqual(["data.secret"]);
    expect(stageFieldPaths("route", { field: "data.region" })).toEqual(["data.region"]);
    expect(stageFieldPaths("insert", { field: "data.new" })).toEqual([]); // written, not read
    expect(stageFieldPaths("kafka", { topic: "t", key_field: "data.customer", topic_field: "data.region" })).toEqual([
      "data.customer",
      "data.region",
    ]);
    expect(
      stageFieldPaths("cloudevents", {
        action: "set",
        attributes: { subject: { field: "data.order_id" }, type: "order.placed" },
      }),
    ).toEqual(["data.order_id"]);
    expect(stageFieldPaths("cloudevents", { action: "wrap", subject_field: "data.id" })).toEqual(["data.id"]);
    expect(stageFieldPaths("enrich", { input: "$.data.customer_id" })).toEqual(["data.customer_id"]);
    expect(stageFieldPaths("enrich", { input: "$" })).toEqual([]); // the whole event
  });
});

describe("an Avro subject's shape (as GET schemas/{name}/shape gives it)", () => {
  // console/schemas/shape.py: a record with a map, a nullable union and a two-type union.
  const avro = asEventSchema({
    type: "object",
    properties: {
      id: { type: "string" },
      tags: { type: "object", additionalProperties: { type: "string" } },
      tier: { type: ["string", "null"] },
      either: { type: ["object", "null"], properties: { member0: { type: "string" }, member1: { type: "integer" } } },
      status: { type: "string", enum: ["NEW", "PAID"] },
    },
  });
  const known = fieldPaths(avro);
  it("lists its fields under data, a union's members under it", () => {
    expect(known.map((f) => f.path)).toEqual(
      expect.arrayContaining(["data.id", "data.tags", "data.tier", "data.either.member0", "data.status", "type"]),
    );
  });
  it("leaves a map's keys open and flags the others", () => {
    expect(unknownFields(["data.tags.anything", "data.idd", "data.either.member2"], known)).toEqual([
      "data.idd",
      "data.either.member2",
    ]);
  });
  it("samples an enum by its first symbol", () => {
    const sample = sampleFromSchema(avro) as { data: { status: string } };
    expect(sample.data.status).toBe("NEW");
  });
});

describe("unknown fields", () => {
  const known = fieldPaths(DISCOVERED);
  it("reports the paths the schema does not have", () => {
    expect(unknownFields(["data.amount", "data.amout", "data.lines.sku", "subjekt"], known)).toEqual([
      "data.amout",
      "subjekt",
    ]);
  });
  it("does not guess under an object of unknown structure", () => {
    expect(unknownFields(["data.meta.anything"], known)).toEqual([]);
    expect(unknownFields(["data.amount.deeper"], known)).toEqual(["data.amount.deeper"]);
  });
});

describe("autocompletion", () => {
  const known = fieldPaths(DISCOVERED);
  it("takes the word at the caret and suggests matching paths, prefixes first", () => {
    const text = '{"data": {"amo';
    expect(wordAt(text, text.length)).toEqual({ word: "amo", start: 11 });
    expect(suggest(known, "amo").map((f) => f.path)).toEqual(["data.amount"]);
    expect(suggest(known, "$.data.l").map((f) => f.path)).toEqual(["data.lines", "data.lines.sku"]);
    expect(suggest(known, "")).toEqual([]);
  });
});

describe("a sample event from the schema", () => {
  it("gives every field a value of its type", () => {
    const event = sampleFromSchema(DISCOVERED) as Record<string, unknown>;
    expect(event.time).toBe("2026-11-27T12:00:00Z");
    const data = event.data as Record<string, unknown>;
    expect(typeof data.amount).toBe("number");
    expect(typeof data.region).toBe("string"); // the first non-null type
    expect(data.lines).toEqual([{ sku: "sample sku" }]);
    expect(unknownFields(patternPaths({ data: { amount: [1] } }), fieldPaths(DISCOVERED))).toEqual([]);
  });
});
