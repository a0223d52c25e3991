import { describe, expect, it } from "vitest";

import { acceptsText, readTyped, shownText } from "./jsonText";

const startingOffsets = {
  anyOf: [{ enum: ["earliest", "latest"], type: "string" }, { $ref: "#/$defs/TimestampStart" }],
};

describe("a JSON field that also takes text", () => {
  it("knows which schemas take a string", () => {
    expect(acceptsText(startingOffsets)).toBe(true);
    expect(acceptsText({ type: ["object", "string"] })).toBe(true);
    expect(acceptsText({ type: "object" })).toBe(false);
    expect(acceptsText(undefined)).toBe(false);
    expect(acceptsText({ "x-text-too": true })).toBe(true);
  });

  it("reads earliest as the text it is, and JSON as JSON", () => {
    expect(readTyped("earliest", startingOffsets)).toEqual({ value: "earliest" });
    expect(readTyped(' "latest" ', startingOffsets)).toEqual({ value: "latest" });
    expect(readTyped('{"timestamp": 1}', startingOffsets)).toEqual({ value: { timestamp: 1 } });
  });

  it("still says when JSON is broken, or text is not allowed", () => {
    expect(readTyped('{"timestamp": ', startingOffsets)).toHaveProperty("error");
    expect(readTyped("earliest", { type: "object" })).toHaveProperty("error");
  });

  it("shows a text value without quotes where the schema takes text", () => {
    expect(shownText("earliest", startingOffsets)).toBe("earliest");
    expect(shownText("earliest", { type: "object" })).toBe('"earliest"');
    expect(shownText({ a: 1 }, startingOffsets)).toBe('{\n  "a": 1\n}');
    expect(shownText(undefined, startingOffsets)).toBe("");
  });
});

describe("a Kafka stage's security settings", () => {
  it("fold away while the connection is plain", async () => {
    const { securityInUse } = await import("./SecurityField");
    const defaults = { protocol: "PLAINTEXT", username: null, ssl_endpoint_identification: true };
    expect(securityInUse(undefined, defaults)).toBe(false);
    const plain = { protocol: "PLAINTEXT", username: null, password: "", ssl_endpoint_identification: true };
    expect(securityInUse(plain, defaults)).toBe(false);
    expect(securityInUse({ ...plain, protocol: "SASL_SSL" }, defaults)).toBe(true);
    expect(securityInUse({ ...plain, username: "svc" }, defaults)).toBe(true);
    expect(securityInUse({ ...plain, ssl_endpoint_identification: false }, defaults)).toBe(true);
  });
});
