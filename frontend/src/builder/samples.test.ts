import { describe, expect, it } from "vitest";

import { BUILT_IN_SAMPLES, tailSamples } from "./samples";

describe("sample events", () => {
  it("are CloudEvents with their payload under data", () => {
    for (const { event } of BUILT_IN_SAMPLES) {
      expect(event.specversion).toBe("1.0");
      expect(typeof event.id).toBe("string");
      expect(typeof event.source).toBe("string");
      expect(typeof event.type).toBe("string");
      expect(event.data).toBeTypeOf("object");
    }
  });

  it("label the tail's newest events by id, keeping at most the limit", () => {
    const events = [{ id: "c" }, { id: "b" }, { foo: 1 }, { id: "a" }];
    expect(tailSamples(events, 3).map((s) => s.label)).toEqual([
      "Latest event 1 (c)",
      "Latest event 2 (b)",
      "Latest event 3",
    ]);
    expect(tailSamples([])).toEqual([]);
  });
});
