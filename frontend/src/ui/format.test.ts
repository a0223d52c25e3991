import { describe, expect, it } from "vitest";

import type { ChannelStatus } from "../api/types";
import { ago, fmtAge, fmtMiB, fmtSparkMemory, stateRank, totalLag } from "./format";

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

  it("says how long ago", () => {
    expect(ago(new Date(1_000).toISOString(), 66_000)).toBe("1m ago");
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
