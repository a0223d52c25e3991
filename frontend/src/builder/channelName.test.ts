import { describe, expect, it } from "vitest";

import { channelNameProblem, saveProblemsText } from "./channelName";

// The server's rule (console/models.py CHANNEL_NAME_PATTERN).
const SERVER = /^[a-z0-9][a-z0-9_-]{0,62}$/;

describe("the channel name, checked as typed", () => {
  it("agrees with the server's pattern", () => {
    const names = [
      "eu-orders",
      "a",
      "0x",
      "orders_2",
      "-x",
      "_x",
      "Orders",
      "eu orders",
      "eu.orders",
      "é",
      "a".repeat(63),
      "a".repeat(64),
      "x/y",
    ];
    for (const name of names) expect(channelNameProblem(name) === "", name).toBe(SERVER.test(name));
  });

  it("says what is wrong in words", () => {
    expect(channelNameProblem("EU-orders")).toBe('Lower-case only: use "eu-orders".');
    expect(channelNameProblem("eu orders")).toMatch(/No spaces/);
    expect(channelNameProblem("eu.orders/x")).toBe(
      `Not allowed: ".", "/". Use lower-case letters, digits, '-' and '_'.`,
    );
    expect(channelNameProblem("-orders")).toBe("Start with a lower-case letter or a digit.");
    expect(channelNameProblem("a".repeat(70))).toBe("At most 63 characters (this one has 70).");
    expect(channelNameProblem("")).toBe("");
    expect(channelNameProblem("", true)).toBe("Give the channel a name.");
  });

  it("says where a refused save's problems are", () => {
    expect(saveProblemsText({ name: true, stages: 0, settings: 0, other: 0 })).toBe(
      "Not saved: check the name (see beside it).",
    );
    expect(saveProblemsText({ name: false, stages: 2, settings: 1, other: 0 })).toBe(
      "Not saved: check 2 stages (marked in red on the canvas), the channel settings (in the side panel).",
    );
  });
});
