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
