import { describe, expect, it } from "vitest";

import type { SourceOffset } from "../api/types";
import { buildOffsetsBody, errorsByPartition } from "./offsets";

const at = (topic: string, partition: number, offset: number): SourceOffset => ({
  partition: { topic, partition },
  offset: { offset },
});
const current = [at("orders", 0, 42), at("orders", 1, 17)];

describe("buildOffsetsBody", () => {
  it("sends only the partitions given a new offset", () => {
    expect(buildOffsetsBody(current, { "orders/1": " 5 " })).toEqual({
      ok: true,
      body: { offsets: [at("orders", 1, 5)] },
    });
  });

  it("leaves out a draft equal to the current offset", () => {
    expect(buildOffsetsBody(current, { "orders/0": "42", "orders/1": "0" })).toEqual({
      ok: true,
      body: { offsets: [at("orders", 1, 0)] },
    });
  });

  it("refuses what is not a whole number, next to its partition", () => {
    const result = buildOffsetsBody(current, { "orders/0": "-1", "orders/1": "1.5" });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(Object.keys(result.errors).sort()).toEqual(["orders/0", "orders/1"]);
  });

  it("says so when nothing would change", () => {
    const result = buildOffsetsBody(current, { "orders/0": "", "orders/1": "17" });
    expect(result).toEqual({ ok: false, errors: { "": "Type a new offset for at least one partition." } });
  });
});

describe("errorsByPartition", () => {
  it("puts an indexed server error next to the partition it is about", () => {
    const body = { offsets: [at("orders", 1, 99999)] };
    expect(
      errorsByPartition(body, {
        "offsets[0].offset.offset": ["Past the end (42)."],
        detail: ["channel 'orders' is RUNNING"],
      }),
    ).toEqual({ "orders/1": "Past the end (42).", "": "channel 'orders' is RUNNING" });
  });
});
