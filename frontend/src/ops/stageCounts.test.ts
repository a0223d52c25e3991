import { describe, expect, it } from "vitest";
import type { StageCounts } from "../api/types";
import { stageDetails, stageLine, stageNodeId } from "./stageCounts";

const counts = (over: Partial<StageCounts>): StageCounts => ({
  stage: "transform",
  index: 0,
  type: "filter",
  in: 0,
  out: 0,
  failed: 0,
  ...over,
});

describe("stage counts on the read-only canvas", () => {
  it("maps stages to the canvas' node ids", () => {
    expect(stageNodeId(counts({ stage: "source", index: null }), 2)).toBe("n1");
    expect(stageNodeId(counts({ index: 0 }), 2)).toBe("n2");
    expect(stageNodeId(counts({ index: 1 }), 2)).toBe("n3");
    expect(stageNodeId(counts({ stage: "sink", index: null }), 2)).toBe("n4");
    expect(stageNodeId(counts({ index: 2 }), 2)).toBeNull(); // a stage the spec no longer has
  });

  it("says what a filter dropped and what failed", () => {
    expect(stageLine(counts({ in: 10_000, out: 1_667, failed: 3 }))).toBe("10K in · 1.7K out · 3 failed · 8.3K dropped");
    expect(stageLine(counts({ stage: "source", index: null, in: 12, out: 12 }))).toBe("12 in · 12 out");
  });

  it("builds one line per reported stage", () => {
    const details = stageDetails(
      [counts({ stage: "source", index: null, in: 5, out: 5 }), counts({ stage: "sink", index: null, in: 2, out: 2 })],
      1,
    );
    expect([...details.entries()]).toEqual([
      ["n1", "5 in · 5 out"],
      ["n3", "2 in · 2 out"],
    ]);
    expect(stageDetails(undefined, 1).size).toBe(0);
  });
});
