import { describe, expect, it, vi } from "vitest";

import { copyNames } from "./channelName";
import { chooseImportName, parseChannelFile } from "./io";

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
      JSON.stringify({
        source: { type: "generator", config: {} },
        transforms: [],
        sink: { type: "preview", config: {} },
      }),
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
      {
        name: "all",
        enabled: false,
        transforms: [{ type: "mask", config: {} }],
        sinks: [{ type: "files", config: {} }],
      },
    ];
    const file = parseChannelFile(
      JSON.stringify({ name: "bus", spec: { source: { type: "kafka", config: {} }, rules } }),
    );
    expect(file.spec.sink).toBeUndefined();
    expect(file.spec.rules?.map((r) => [r.name, r.transforms?.length, r.sinks.length])).toEqual([
      ["big", 0, 1],
      ["all", 1, 1],
    ]);
  });

  it("explains what is wrong with a bus", () => {
    const file = (spec: unknown) =>
      JSON.stringify({ spec: { source: { type: "kafka", config: {} }, ...(spec as object) } });
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

describe("chooseImportName", () => {
  const existing =
    (...names: string[]) =>
    (name: string) =>
      Promise.resolve(names.includes(name));

  it("keeps a name no channel has, without asking", async () => {
    const ask = vi.fn();
    expect(await chooseImportName("fresh", existing("orders"), ask)).toEqual({ name: "fresh", exists: false });
    expect(await chooseImportName("", existing("orders"), ask)).toEqual({ name: "", exists: false });
    expect(ask).not.toHaveBeenCalled();
  });

  it("offers the first free copy name for a channel that exists: a new channel", async () => {
    const ask = vi.fn((_question: string, proposal: string) => proposal);
    const target = await chooseImportName("orders", existing("orders", "orders-copy"), ask);
    expect(target).toEqual({ name: "orders-copy-2", exists: false });
    expect(ask.mock.calls[0]![0]).toMatch(/A channel named “orders” exists\. Import as a copy/);
  });

  it("replaces the channel when its own name is kept, and cancels on null", async () => {
    expect(await chooseImportName("orders", existing("orders"), () => "orders")).toEqual({
      name: "orders",
      exists: true,
    });
    expect(await chooseImportName("orders", existing("orders"), () => null)).toBeNull();
  });

  it("asks again, saying why, for a name taken or not allowed", async () => {
    const answers = ["payments", "Orders Copy", "orders-eu"];
    const ask = vi.fn<(question: string, proposal: string) => string | null>(() => answers.shift() ?? null);
    const target = await chooseImportName("orders", existing("orders", "payments"), ask);
    expect(target).toEqual({ name: "orders-eu", exists: false });
    expect(ask.mock.calls.map((call) => call[0].split(" ")[0])).toEqual(["A", "“payments”", "Lower-case"]);
  });
});

describe("copyNames", () => {
  it("counts up and keeps within 63 characters", () => {
    const names = copyNames("orders");
    expect([names.next().value, names.next().value, names.next().value]).toEqual([
      "orders-copy",
      "orders-copy-2",
      "orders-copy-3",
    ]);
    const long = copyNames("a".repeat(63)).next().value!;
    expect(long).toHaveLength(63);
    expect(long.endsWith("-copy")).toBe(true);
  });
});
