import { describe, expect, it } from "vitest";

import { parseChannelFile } from "./io";

describe("parseChannelFile", () => {
  it("reads an exported channel", () => {
    const file = parseChannelFile(
      JSON.stringify({
        name: "a",
        description: "d",
        spec: { source: { type: "generator", config: {} }, sink: { type: "preview", config: {} } },
      }),
    );
    expect(file.name).toBe("a");
    expect(file.spec.transforms).toEqual([]);
  });

  it("reads a bare spec", () => {
    const file = parseChannelFile(
      JSON.stringify({ source: { type: "generator", config: {} }, transforms: [], sink: { type: "preview", config: {} } }),
    );
    expect(file.name).toBe("");
    expect(file.spec.source.type).toBe("generator");
  });

  it("keeps the runtime options of an exported channel", () => {
    const runtime = { isolation: "dedicated", mode: "available-now", interval_seconds: null };
    const file = parseChannelFile(
      JSON.stringify({
        name: "backfill",
        spec: { source: { type: "kafka", config: {} }, sink: { type: "preview", config: {} }, runtime },
      }),
    );
    expect(file.spec.runtime).toEqual(runtime);
  });

  it("reads an exported bus", () => {
    const rules = [
      { name: "big", pattern: { data: { amount: [{ numeric: [">", 100] }] } }, sinks: [{ type: "kafka", config: {} }] },
      { name: "all", enabled: false, transforms: [{ type: "mask", config: {} }], sinks: [{ type: "files", config: {} }] },
    ];
    const file = parseChannelFile(JSON.stringify({ name: "bus", spec: { source: { type: "kafka", config: {} }, rules } }));
    expect(file.spec.sink).toBeUndefined();
    expect(file.spec.rules?.map((r) => [r.name, r.transforms?.length, r.sinks.length])).toEqual([
      ["big", 0, 1],
      ["all", 1, 1],
    ]);
  });

  it("explains what is wrong with a bus", () => {
    const file = (spec: unknown) => JSON.stringify({ spec: { source: { type: "kafka", config: {} }, ...(spec as object) } });
    expect(() => parseChannelFile(file({ rules: [] }))).toThrow(/at least one rule/);
    expect(() => parseChannelFile(file({ rules: [{ sinks: [] }] }))).toThrow(/rules\[0\] needs a name/);
    expect(() => parseChannelFile(file({ rules: [{ name: "a", sinks: [] }] }))).toThrow(/list of sinks/);
    expect(() => parseChannelFile(file({ rules: [{ name: "a", sinks: [{}] }], sink: {} }))).toThrow(/not both/);
  });

  it("explains what is wrong", () => {
    expect(() => parseChannelFile("{")).toThrow(/Not JSON/);
    expect(() => parseChannelFile("[]")).toThrow(/object/);
    expect(() => parseChannelFile('{"source": {}}')).toThrow(/source and a sink/);
  });
});

describe("splitList", () => {
  it("reads a comma-separated line", async () => {
    const { splitList } = await import("./StringListField");
    expect(splitList(" orders, ,payments ")).toEqual(["orders", "payments"]);
    expect(splitList("")).toEqual([]);
  });
});
