import { describe, expect, it } from "vitest";

import { workersPath } from "../api/workerHooks";
import {
  actionMessage,
  capacityCells,
  confirmation,
  SERVICE_FILTERS,
  serviceLabel,
  takersFor,
  workerButtons,
} from "./workers";

const alive = { worker_id: "w1", state: "ALIVE", service: "IN_SERVICE" };

describe("a runtime worker's row", () => {
  it("offers Drain in service, and Forget only once dead", () => {
    const buttons = workerButtons(alive, "");
    expect(buttons.map((b) => [b.label, b.enabled])).toEqual([
      ["Drain", true],
      ["Forget", false],
    ]);
    expect(buttons[1]?.title).toContain("Only a dead worker can be forgotten");
    const dead = workerButtons({ ...alive, state: "DEAD", service: "DRAINED" }, "");
    expect(dead.map((b) => [b.label, b.enabled])).toEqual([
      ["Back in service", true],
      ["Forget", true],
    ]);
  });

  it("disables everything, with the reason, without the operator role", () => {
    const buttons = workerButtons({ ...alive, state: "DEAD" }, "Needs the operator role");
    expect(buttons.every((b) => !b.enabled && b.title === "Needs the operator role")).toBe(true);
  });

  it("names the service in words", () => {
    expect(serviceLabel("DRAINING")).toBe("draining");
    expect(serviceLabel("IN_SERVICE")).toBe("in service");
  });

  it("asks before draining or forgetting, not before putting back", () => {
    expect(confirmation(alive, "drain", 20, ["w2", "w3"])).toBe(
      "Drain w1? Its 20 channels move to w2, w3, each resuming from its checkpoint. It gets no new channels until it is back in service.",
    );
    // The only worker: nothing moves, and it says so.
    expect(confirmation(alive, "drain", 1)).toBe(
      "Drain w1? No other live worker is in service: its 1 channel keeps running on it until one is, then moves there. It gets no new channels until it is back in service.",
    );
    expect(confirmation(alive, "drain", 0)).toContain("It hosts no channel.");
    expect(confirmation(alive, "forget", 0)).toContain("Forget w1?");
    expect(confirmation(alive, "undrain", 3)).toBeNull();
  });

  it("counts as takers only the other live workers in service", () => {
    const all = [
      { worker_id: "w1", state: "ALIVE", service: "IN_SERVICE" },
      { worker_id: "w2", state: "ALIVE", service: "IN_SERVICE" },
      { worker_id: "w3", state: "DEAD", service: "IN_SERVICE" },
      { worker_id: "w4", state: "ALIVE", service: "DRAINING" },
    ];
    expect(takersFor("w1", all)).toEqual(["w2"]);
    expect(takersFor("w2", all)).toEqual(["w1"]);
  });

  it("says where a drain sends the channels", () => {
    const worker = { ...alive, service: "DRAINING" } as never;
    const result = { worker, changed: true, channels: ["a", "b"], takers: ["w2"] };
    expect(actionMessage("w1", "drain", result)).toBe("Draining w1: its 2 channels move to w2.");
    expect(actionMessage("w1", "drain", { ...result, takers: [] })).toBe(
      "Draining w1: no other worker in service, its 2 channels stay until one is alive.",
    );
    expect(actionMessage("w1", "drain", { ...result, changed: false })).toBe("w1 is already draining.");
    expect(actionMessage("w1", "forget", null)).toBe("Forgot w1.");
  });
});

describe("the workers list's service filter", () => {
  it("asks the server for one service state, or for every worker", () => {
    expect(workersPath("")).toBe("workers/");
    expect(workersPath("DRAINING")).toBe("workers/?service=DRAINING");
    expect(SERVICE_FILTERS.map((f) => f.value)).toEqual(["", "IN_SERVICE", "DRAINING", "DRAINED"]);
  });
});

describe("a worker's capacity cells", () => {
  it("shows the real-time cores held of those it has and its slots, or a dash until it says", () => {
    expect(capacityCells({ cores: 4, cores_held: 3, slots: [1, 5, 9] })).toEqual({ cores: "3 / 4", slots: "3" });
    expect(capacityCells({ cores: 2 })).toEqual({ cores: "0 / 2", slots: "—" });
    expect(capacityCells({})).toEqual({ cores: "—", slots: "—" });
    expect(capacityCells(null)).toEqual({ cores: "—", slots: "—" });
  });
});
