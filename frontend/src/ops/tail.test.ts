import { describe, expect, it } from "vitest";

import {
  prettyEvent,
  recordBody,
  recordId,
  recordKey,
  recordSummary,
  recordTime,
  recordWhere,
  tailStatus,
  tailSummary,
  tailView,
  waitingLabel,
} from "./tail";

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

describe("Kafka records in the tail", () => {
  const base = {
    topic: "orders-eu",
    partition: 1,
    offset: 42,
    timestamp: "2026-11-30T08:15:02.045Z",
    key: "6",
    key_encoding: "text",
    headers: [],
    value: { region: "eu-west", seq: 9 },
    value_encoding: "json",
    truncated: false,
    size: 30,
  };
  const at = (offset: number, second: number) => ({
    ...base,
    offset,
    timestamp: `2026-11-30T08:15:${String(second).padStart(2, "0")}.000Z`,
  });

  it("says when, where and which key, then the value's fields", () => {
    expect(recordTime(base)).toMatch(/^\d\d:\d\d:02\.045$/);
    expect(recordWhere(base)).toBe("p1 #42");
    expect(recordKey(base)).toBe("key=6");
    expect(recordSummary(base)).toBe("region=eu-west  seq=9");
    expect(recordId(base)).toBe("orders-eu/1/42");
  });

  it("says what a record without a key, time, offset or value is", () => {
    const bare = {
      ...base,
      topic: null,
      partition: null,
      offset: null,
      timestamp: null,
      key: null,
      key_encoding: "null",
    };
    expect([recordTime(bare), recordWhere(bare), recordKey(bare)]).toEqual(["—", "", ""]);
    expect(recordId(bare)).toBe('event:{"region":"eu-west","seq":9}');
    expect(recordKey({ ...base, key: "//4=", key_encoding: "base64" })).toBe("key=(binary)");
    expect(recordSummary({ ...base, value: null, value_encoding: "null" })).toBe("(no value: a tombstone)");
    expect(recordSummary({ ...base, value: "/wAB", value_encoding: "base64", size: 3 })).toBe(
      "(binary value, 3 bytes)",
    );
  });

  it("shows a text value on one line and in full once opened, saying when it was cut", () => {
    const text = {
      ...base,
      value: `first line\nsecond ${"y".repeat(200)}`,
      value_encoding: "text",
      truncated: true,
      size: 20_000,
    };
    const line = recordSummary(text);
    expect(line).not.toContain("\n");
    expect(line.startsWith("first line second yyy")).toBe(true);
    expect(line.endsWith("… (cut)")).toBe(true);
    expect(recordBody(text)).toBe(
      `first line\nsecond ${"y".repeat(200)}\n… cut: the value is 20,000 bytes, the tail shows the first 16 KiB.`,
    );
    expect(recordBody(base)).toBe('{\n  "region": "eu-west",\n  "seq": 9\n}');
  });

  it("shows the newest rows while nothing holds them", () => {
    const latest = [at(3, 3), at(2, 2), at(1, 1)];
    expect(tailView(latest, null, 2)).toEqual({ rows: [at(3, 3), at(2, 2)], waiting: 0, atLeast: false });
  });

  it("keeps the rows in place while held and counts the newer ones waiting", () => {
    const frozen = [at(2, 2), at(1, 1)];
    const latest = [at(5, 5), at(4, 4), at(3, 3), at(2, 2)];
    const view = tailView(latest, frozen);
    expect(view.rows).toBe(frozen);
    expect(view.waiting).toBe(3);
    expect(view.atLeast).toBe(false);
    // Older records that left the server's window are not "new".
    expect(tailView([at(2, 2), at(0, 0)], frozen).waiting).toBe(0);
    // A whole read of new records: more may have come than one read returns.
    expect(tailView([at(5, 5), at(4, 4)], frozen, 2)).toEqual({ rows: frozen, waiting: 2, atLeast: true });
  });

  it("says what the tail is doing and what the button will do", () => {
    expect(tailStatus(false, 0)).toBe("Reading every 2 s, newest first.");
    expect(tailStatus(false, 1)).toBe("Held while an event is open: new events are not put above it.");
    expect(tailStatus(true, 1)).toBe("Paused: not reading new events. Resume tail reads them again.");
    expect(waitingLabel(1)).toBe("1 new event — show");
    expect(waitingLabel(12)).toBe("12 new events — show");
    expect(waitingLabel(50, true)).toBe("50 or more new events — show the newest 50");
  });
});
