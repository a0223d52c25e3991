import { describe, expect, it } from "vitest";

import { auditPath, DEFAULT_AUDIT, outcomeText } from "./audit";

describe("the audit page's query", () => {
  it("asks for the first page with no filters", () => {
    expect(auditPath(DEFAULT_AUDIT)).toBe("audit/?limit=50&offset=0");
  });

  it("filters by channel, user and action, as the API names them", () => {
    const path = auditPath({
      channel: " eu-orders ",
      user: "alice",
      action: "channel.offsets.",
      limit: 50,
      offset: 100,
    });
    const params = new URLSearchParams(path.split("?")[1]);
    expect(Object.fromEntries(params)).toEqual({
      object_type: "channel",
      object_id: "eu-orders",
      actor: "alice",
      action: "channel.offsets.",
      limit: "50",
      offset: "100",
    });
  });

  it("says the outcome in words", () => {
    expect(outcomeText(202)).toEqual({ text: "OK (202)", tone: "ok" });
    expect(outcomeText(403)).toEqual({ text: "Refused (403)", tone: "warn" });
    expect(outcomeText(500)).toEqual({ text: "Failed (500)", tone: "bad" });
    expect(outcomeText(null).text).toBe("—");
  });
});
