import { describe, expect, it } from "vitest";

import type { ChannelAction, TargetState } from "../api/types";
import { actionTitle, allowed, unavailableReason } from "./actions";

const ACTIONS: ChannelAction[] = ["start", "pause", "resume", "restart", "stop"];
const enabled = (target: TargetState) => ACTIONS.filter((a) => allowed(a, target));

describe("the actions a desired state allows", () => {
  it("offers Resume, not Start, on a paused channel", () => {
    expect(enabled("PAUSED")).toEqual(["resume", "restart", "stop"]);
    expect(unavailableReason("start", "PAUSED")).toMatch(/^It is paused: Resume runs it again/);
  });

  it("offers Start alone on a stopped one", () => {
    expect(enabled("STOPPED")).toEqual(["start"]);
  });

  it("offers Pause, Restart and Stop on a running one", () => {
    expect(enabled("RUNNING")).toEqual(["pause", "restart", "stop"]);
  });

  it("says why every disabled action is disabled", () => {
    for (const target of ["RUNNING", "PAUSED", "STOPPED"] as TargetState[]) {
      for (const action of ACTIONS) {
        expect(unavailableReason(action, target) === "").toBe(allowed(action, target));
      }
    }
  });

  it("puts the reason in the tooltip when the action fits none of the selection", () => {
    expect(actionTitle("start", "Start it", ["PAUSED"])).toMatch(/Resume/);
    expect(actionTitle("start", "Start it", ["PAUSED", "STOPPED"])).toBe("Start it");
    expect(actionTitle("resume", "Resume it", [])).toBe("Resume it");
  });
});
