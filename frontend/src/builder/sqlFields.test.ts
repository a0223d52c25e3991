import { describe, expect, it } from "vitest";

import { fieldPaths, unknownFields } from "./shape";
import { sqlFieldPaths, tokenize } from "./sqlFields";
import { fieldsRead } from "./stageFields";

describe("the SQL tokenizer", () => {
  it("reads strings, raw strings, quoted names, numbers, comments and :: as Spark does", () => {
    const tokens = tokenize("r'a\\d' || 'it''s \\'x\\'' -- data:gone\n`odd ``name``` /* data:no */ 1.5e3BD::double");
    expect(tokens).toEqual([
      { kind: "string", text: "a\\d" },
      { kind: "op", text: "||" },
      { kind: "string", text: "it's 'x'" },
      { kind: "quoted-name", text: "odd `name`" },
      { kind: "number", text: "1.5e3BD" },
      { kind: "op", text: "::" },
      { kind: "name", text: "double" },
    ]);
  });
});

describe("the fields a SQL transform reads", () => {
  it("takes VARIANT paths on data, indexes matched through, casts and operators after them", () => {
    expect(
      sqlFieldPaths([
        "data:order.id::string AS order_id",
        "data:amount::double * 1.2 AS total",
        "data:items[0].sku AS first_sku",
        "DATA:['odd key'].`x y` AS odd",
        "coalesce(data:region, 'none') AS region",
      ]),
    ).toEqual(["data.order.id", "data.amount", "data.items.sku", "data.odd key.x y", "data.region"]);
  });

  it("reads variant_get's literal JSONPath and ignores strings, comments and other values' paths", () => {
    expect(sqlFieldPaths(["try_variant_get(data, '$.customer.tier', 'string') AS tier"])).toEqual([
      "data.customer.tier",
    ]);
    expect(
      sqlFieldPaths([
        "'data:fake' AS a",
        "s.data:fake AS b",
        "transform(data:lines::array<variant>, x -> x:sku) AS skus",
        "subject AS s",
      ]),
    ).toEqual(["data.lines"]);
  });

  it("flags a misspelled field against the shape", () => {
    const known = fieldPaths({
      type: "object",
      properties: { data: { type: "object", properties: { amount: { type: "number" } } } },
    });
    const read = fieldsRead("sql", { expressions: ["data:amout::double AS a", "data:amount AS b"] });
    expect(unknownFields(read, known)).toEqual(["data.amout"]);
  });
});
