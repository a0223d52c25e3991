import { describe, expect, it } from "vitest";

import {
  confirmButton,
  confirmLead,
  liveTargets,
  redrivenAgainWarning,
  redrivenText,
  runPercent,
  runProgressText,
  type Redriven,
  type RunTarget,
} from "./runs";

const kafka: RunTarget = {
  rule: null,
  type: "kafka",
  where: "topic orders-out",
  live: true,
  marked: "record headers sluicereplay (the run id) and sluicerun (replay or redrive)",
  name: "kafka topic orders-out",
};
const tail: RunTarget = { ...kafka, type: "preview", where: "the console's live tail", live: false, name: "preview" };
const run = { state: "RUNNING", expected: 300, events_read: 0, events_written: 0, events_failed: 0 };

describe("replay and redrive logic", () => {
  it("names the live targets before writing into them", () => {
    expect(liveTargets([kafka, tail])).toEqual([kafka]);
    expect(confirmLead("replay", [kafka, tail])).toMatch(
      /^This replay writes the window's events again into 1 live target\./,
    );
    expect(confirmLead("redrive", [kafka, { ...kafka, name: "b" }])).toContain("into 2 live targets");
    expect(confirmLead("replay", [tail])).toBe(
      "This replay writes the window's events only into the console's live tail.",
    );
    expect(confirmButton("replay", [kafka])).toBe("Replay into 1 live target");
    expect(confirmButton("redrive", [kafka, kafka])).toBe("Redrive into 2 live targets");
    expect(confirmButton("replay", [tail])).toBe("Replay now");
  });

  it("computes the progress line and its percentage from the same counts", () => {
    // Before: "0 / 300 · 168 written · 0 %" from a percentage and a count of different sources.
    expect(runProgressText({ ...run, events_read: 200, events_written: 168 }, "replay")).toBe(
      "200 of 300 read · 168 written · 66 %",
    );
    expect(runPercent({ ...run, events_read: 299 })).toBe(99); // never 100 % before the end
    expect(runPercent({ ...run, state: "SUCCEEDED", events_read: 300 })).toBe(100);
    expect(runPercent({ ...run, expected: null })).toBe(0);
    expect(runProgressText({ ...run, expected: null }, "replay")).toBe("0 of … read · 0 written · 0 %");
  });

  it("says when a redrive's letters failed again", () => {
    const failed = { ...run, state: "FAILED", expected: 1, events_read: 1, events_failed: 1 };
    expect(runProgressText(failed, "redrive")).toBe("1 of 1 read · 0 written · 1 failed again · 100 %");
    expect(runProgressText(failed, "replay")).toContain("1 failed ·");
  });

  it("marks a letter already redriven, and warns before a second redrive", () => {
    const mark: Redriven = {
      run: "1a2b3c4d-0000-0000-0000-000000000000",
      at: "2026-11-30T07:40:00Z",
      by: "user:alice",
      state: "FAILED",
      outcome: "1 failed again, 0 written",
    };
    expect(redrivenText(mark)).toMatch(/^Redriven .* by user:alice \(run 1a2b3c4d\): 1 failed again, 0 written$/);
    expect(redrivenAgainWarning([null, undefined])).toBe("");
    expect(redrivenAgainWarning([mark, null])).toBe(
      "1 of them was redriven already: redriving again writes their events again into the targets.",
    );
    expect(redrivenAgainWarning([mark, { ...mark, state: "RUNNING" }])).toMatch(
      /^2 of them were redriven already \(a redrive of them is still running\)/,
    );
  });
});
