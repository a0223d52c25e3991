import { describe, expect, it } from "vitest";

import { DEFAULT_RUNTIME, intervalHint, parseInterval, runtimeErrors, runtimeOf, withMode } from "./runtime";

describe("runtimeOf", () => {
  it("gives the defaults for a spec saved before runtime options existed", () => {
    expect(runtimeOf(undefined)).toEqual({ isolation: "shared", mode: "micro-batch", interval_seconds: null });
    expect(runtimeOf(null)).toEqual(DEFAULT_RUNTIME);
    expect(runtimeOf("fast")).toEqual(DEFAULT_RUNTIME);
  });

  it("keeps what the spec says and fills in the rest", () => {
    expect(runtimeOf({ isolation: "dedicated", mode: "real-time", interval_seconds: 5 })).toEqual({
      isolation: "dedicated",
      mode: "real-time",
      interval_seconds: 5,
    });
    expect(runtimeOf({ mode: "available-now" })).toEqual({ ...DEFAULT_RUNTIME, mode: "available-now" });
    expect(runtimeOf({ isolation: "solo", mode: 3, interval_seconds: "2" })).toEqual(DEFAULT_RUNTIME);
  });

  it("does not share the defaults object", () => {
    const options = runtimeOf(undefined);
    options.mode = "real-time";
    expect(DEFAULT_RUNTIME.mode).toBe("micro-batch");
  });
});

describe("withMode", () => {
  it("drops the interval for available-now, which runs without one", () => {
    const options = { isolation: "shared" as const, mode: "micro-batch" as const, interval_seconds: 2 };
    expect(withMode(options, "available-now")).toEqual({ ...options, mode: "available-now", interval_seconds: null });
    expect(withMode(options, "real-time")).toEqual({ ...options, mode: "real-time" });
  });
});

describe("parseInterval", () => {
  it("reads the field as typed", () => {
    expect(parseInterval("")).toBeNull();
    expect(parseInterval("  ")).toBeNull();
    expect(parseInterval("2.5")).toBe(2.5);
    expect(parseInterval("0")).toBe(0); // the server says it is too small
    expect(parseInterval("abc")).toBeUndefined();
  });

  it("explains the interval per mode", () => {
    expect(intervalHint("available-now")).toMatch(/without an interval/);
    expect(intervalHint("real-time")).toMatch(/checkpointed/);
    expect(intervalHint("micro-batch")).toMatch(/batch at most/);
  });
});

describe("runtimeErrors", () => {
  it("keeps the server's errors about the runtime block, by field", () => {
    expect(
      runtimeErrors({
        "spec.runtime.mode": ["unknown mode"],
        "spec.runtime.interval_seconds": ["available-now runs without an interval"],
        "spec.runtime": ["must be an object"],
        "spec.source.type": ["a generator source has no end for available-now to reach"],
        "spec.errors.dead_letter": ["real-time mode has no micro-batches"],
        name: ["taken"],
      }),
    ).toEqual({
      mode: ["unknown mode"],
      interval_seconds: ["available-now runs without an interval"],
      "": ["must be an object"],
    });
  });
});
