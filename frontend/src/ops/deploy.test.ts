import { describe, expect, it } from "vitest";

import type { ChannelStatus, DeployPlan } from "../api/types";
import { deployQuestion, deployWanted, failureLine, revisionCard, revisionLine } from "./deploy";

const plan = (over: Partial<DeployPlan>): DeployPlan => ({
  name: "orders",
  running_revision: 1,
  saved_revision: 2,
  target_state: "RUNNING",
  state: "RUNNING",
  effect: "restart",
  summary: "The query stops and starts again with it.",
  changed: [],
  ...over,
});
const status = (over: Partial<ChannelStatus>) => ({ drift: false, state: "RUNNING", ...over }) as ChannelStatus;

describe("the deploy path", () => {
  it("is offered for a saved revision that does not run, or a failure", () => {
    expect(deployWanted(undefined)).toBe(false);
    expect(deployWanted(status({}))).toBe(false);
    expect(deployWanted(status({ drift: true }))).toBe(true);
    expect(deployWanted(status({ state: "FAILED" }))).toBe(true);
  });

  it("says which revision runs and which is saved", () => {
    expect(revisionLine(plan({}))).toBe("Runs revision 1; revision 2 is saved and not deployed yet.");
    expect(revisionLine(plan({ state: "FAILED" }))).toBe(
      "Failed on revision 1; revision 2 is saved and not deployed yet.",
    );
    expect(revisionLine(plan({ target_state: "STOPPED", state: "STOPPED" }))).toMatch(/^Last ran revision 1;/);
    expect(revisionLine(plan({ running_revision: 2, state: "FAILED" }))).toBe("Revision 2 failed.");
    expect(revisionLine(plan({ running_revision: null }))).toBe("Revision 2 saved; never deployed.");
  });

  it("asks before deploying, naming the revision and what it does", () => {
    expect(deployQuestion("orders", plan({}))).toBe(
      "Deploy revision 2 of orders?\n\nThe query stops and starts again with it.",
    );
  });

  it("shows the running and the saved revision on the card", () => {
    expect(revisionCard(status({ revision: 1, latest_revision: 2 }))).toBe("1 deployed · 2 saved");
    expect(revisionCard(status({ revision: 2, latest_revision: 2 }))).toBe("2");
    expect(revisionCard(status({ revision: null, latest_revision: 1 }))).toBe("1 saved");
    expect(revisionCard(undefined)).toBe("—");
  });

  it("puts the failure's first line in the header", () => {
    expect(failureLine("\n  java.lang.RuntimeException: boom\n\tat x\n")).toBe("java.lang.RuntimeException: boom");
    expect(failureLine(null)).toBe("");
  });
});
