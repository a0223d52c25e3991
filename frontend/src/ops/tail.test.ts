import { describe, expect, it } from "vitest";

import { prettyEvent, tailSummary } from "./tail";

describe("the live tail's rows", () => {
  it("summarises an event on one line, naming fields first", () => {
    const event = { amount: 120, region: "eu", id: "o-1", type: "order", items: [1, 2, 3], customer: { id: 7 } };
    expect(tailSummary(event)).toBe("id=o-1  type=order  amount=120  region=eu  items=[3 items]  customer={…}");
  });

  it("shows a CloudEvent's payload fields before its envelope", () => {
    const event = {
      specversion: "1.0",
      source: "kafka://edges-in",
      id: "edges-in/0/9",
      type: "sluice.kafka.record",
      datacontenttype: "application/json",
      time: "2026-11-27T04:29:12.269Z",
      data: { region: "eu-west", seq: 9 },
    };
    expect(tailSummary(event)).toBe(
      "id=edges-in/0/9  type=sluice.kafka.record  time=2026-11-27T04:29:12.269Z  region=eu-west  seq=9  specversion=1.0  source=kafka://edges-in  +1 more",
    );
  });

  it("cuts long values and says how many fields are left out", () => {
    const event = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`f${i}`, "x".repeat(i === 0 ? 60 : 1)]));
    const line = tailSummary(event);
    expect(line.startsWith(`f0=${"x".repeat(39)}…`)).toBe(true);
    expect(line.endsWith("+2 more")).toBe(true);
    expect(line).not.toContain("\n");
  });

  it("shows a value that is not an object as itself, and pretty-prints in full", () => {
    expect(tailSummary("plain text")).toBe("plain text");
    expect(tailSummary(null)).toBe("null");
    expect(prettyEvent({ a: { b: 1 } })).toBe('{\n  "a": {\n    "b": 1\n  }\n}');
  });
});
