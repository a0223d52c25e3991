import { describe, expect, it } from "vitest";
import type { ChannelSpec, RuleCounts, StageCounts } from "../api/types";
import { specToGraph } from "../graph/spec";
import { ruleDetails, ruleLine, stageDetails, stageLine, stageNodeId } from "./stageCounts";

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
  const linear: ChannelSpec = {
    source: { type: "generator", config: {} },
    transforms: [
      { type: "filter", config: {} },
      { type: "mask", config: {} },
    ],
    sink: { type: "preview", config: {} },
  };

  it("maps stages to the canvas' node ids", () => {
    const { stages } = specToGraph(linear);
    expect(stageNodeId(counts({ stage: "source", index: null }), stages)).toBe("n1");
    expect(stageNodeId(counts({ index: 0 }), stages)).toBe("n2");
    expect(stageNodeId(counts({ index: 1 }), stages)).toBe("n3");
    expect(stageNodeId(counts({ stage: "sink", index: null }), stages)).toBe("n4");
    expect(stageNodeId(counts({ index: 2 }), stages)).toBeNull(); // a stage the spec no longer has
  });

  it("says what a filter dropped and what failed", () => {
    expect(stageLine(counts({ in: 10_000, out: 1_667, failed: 3 }))).toBe(
      "10K in · 1.7K out · 3 failed · 8.3K dropped",
    );
    expect(stageLine(counts({ stage: "source", index: null, in: 12, out: 12 }))).toBe("12 in · 12 out");
  });

  it("builds one line per reported stage", () => {
    const details = stageDetails(
      [counts({ stage: "source", index: null, in: 5, out: 5 }), counts({ stage: "sink", index: null, in: 2, out: 2 })],
      { source: "n1", "transforms[0]": "n2", sink: "n3" },
    );
    expect([...details.entries()]).toEqual([
      ["n1", "5 in · 5 out"],
      ["n3", "2 in · 2 out"],
    ]);
    expect(stageDetails(undefined, {}).size).toBe(0);
  });
});

describe("rule counts on the read-only canvas", () => {
  const bus: ChannelSpec = {
    source: { type: "kafka", config: {} },
    transforms: [],
    rules: [
      { name: "big", pattern: { data: { amount: [{ numeric: [">", 100] }] } }, sinks: [{ type: "kafka", config: {} }] },
      {
        name: "all",
        sinks: [
          { type: "kafka", config: {} },
          { type: "files", config: {} },
        ],
      },
    ],
  };
  const rule = (over: Partial<RuleCounts>): RuleCounts => ({
    rule: "big",
    matched: 0,
    delivered: 0,
    failed: 0,
    ...over,
  });

  it("puts each rule's counts on its rule node and each target's on its sink", () => {
    const { stages } = specToGraph(bus); // n1 source, n2 big, n3 its sink, n4 all, n5 n6 its sinks
    const details = ruleDetails(
      [
        rule({ matched: 1500, delivered: 1490, failed: 10, matched_per_second: 12.34 }),
        rule({
          rule: "all",
          matched: 9,
          delivered: 9,
          targets: [
            { sink: "rules[1].sinks[0]", type: "kafka", delivered: 9, failed: 0 },
            { sink: "rules[1].sinks[1]", type: "files", delivered: 8, failed: 1 },
          ],
        }),
        rule({ rule: "gone", matched: 1 }), // a rule the spec no longer has
      ],
      bus,
      stages,
    );
    expect([...details.entries()]).toEqual([
      ["n2", "1.5K matched · 1.5K delivered · 10 failed · 12.3/s"],
      ["n4", "9 matched · 9 delivered"],
      ["n5", "9 delivered"],
      ["n6", "8 delivered · 1 failed"],
    ]);
  });

  it("leaves out failures and rates it does not have", () => {
    expect(ruleLine(rule({ matched: 3, delivered: 3 }))).toBe("3 matched · 3 delivered");
  });
});
