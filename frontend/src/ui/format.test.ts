import { describe, expect, it } from "vitest";

import type { ChannelStatus } from "../api/types";
import { ago, fmtAge, fmtMiB, fmtSparkMemory, fmtTime, stateRank, totalLag } from "./format";

const task = (rows: number | null, lag: number | null) => ({
  id: 0,
  state: "RUNNING" as const,
  worker_id: "w",
  topic: null,
  partition: null,
  offset: null,
  end_offset: null,
  lag,
  rows_per_second: rows,
  updated: "",
});

describe("status figures", () => {
  it("sums the tasks' lag (events/s is the server's one figure: channelView.ts)", () => {
    const status = { tasks: [task(2.5, 3), task(null, null), task(1, 4)] } as unknown as ChannelStatus;
    expect(totalLag(status)).toBe(7);
    expect(totalLag({ tasks: [] } as unknown as ChannelStatus)).toBeNull();
  });

  it("puts failures first", () => {
    expect(["RUNNING", "STOPPED", "FAILED"].sort((a, b) => stateRank(a) - stateRank(b))).toEqual([
      "FAILED",
      "RUNNING",
      "STOPPED",
    ]);
  });

  it("says how long ago in words, one unit each", () => {
    const at = new Date(1_000).toISOString();
    expect(ago(at, 1_000)).toBe("just now");
    expect(ago(at, 13_000)).toBe("12 s ago");
    expect(ago(at, 66_000)).toBe("1 min ago");
    expect(ago(at, 1_000 + 2 * 3_600_000 + 5_000)).toBe("2 h ago");
    expect(ago(at, 1_000 + 4 * 86_400_000)).toBe("4 d ago");
    // An instant ahead of the browser's clock (clock skew) is not "in the future".
    expect(ago(new Date(9_000).toISOString(), 1_000)).toBe("just now");
    expect(ago(null)).toBe("—");
    expect(ago("not a date")).toBe("—");
  });

  it("shows every absolute time one way: year first, 24-hour, local time", () => {
    const local = new Date(2026, 10, 3, 7, 5, 9); // 3 Nov 2026 07:05:09 in the browser's zone
    expect(fmtTime(local.toISOString())).toBe("2026-11-03 07:05:09");
    const evening = new Date(2026, 0, 30, 19, 0, 0);
    expect(fmtTime(evening.toISOString())).toBe("2026-01-30 19:00:00");
    expect(fmtTime(undefined)).toBe("—");
    expect(fmtTime("garbage")).toBe("—");
  });
});

describe("fmtAge and fmtMiB", () => {
  it("shows ages in the largest whole unit", () => {
    expect(fmtAge(null)).toBe("—");
    expect(fmtAge(4.4)).toBe("4s");
    expect(fmtAge(185)).toBe("3m");
    expect(fmtAge(7300)).toBe("2h");
  });

  it("shows memory in MiB, GiB past 1024", () => {
    expect(fmtMiB(512)).toBe("512 MiB");
    expect(fmtMiB(7680)).toBe("7.5 GiB");
    expect(fmtMiB(undefined)).toBe("—");
  });
});

describe("fmtSparkMemory", () => {
  it("reads Spark's memory settings", () => {
    expect(fmtSparkMemory("1g")).toBe("1 GiB");
    expect(fmtSparkMemory("512m")).toBe("512 MiB");
    expect(fmtSparkMemory("1536M")).toBe("1.5 GiB");
    expect(fmtSparkMemory("2048k")).toBe("2 MiB");
    expect(fmtSparkMemory("")).toBe("—");
    expect(fmtSparkMemory("lots")).toBe("lots");
  });
});
