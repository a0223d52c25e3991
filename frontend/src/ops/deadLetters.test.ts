import { describe, expect, it } from "vitest";

import { deadLettersPath, filterParams, NO_FILTERS, opensDeadLetters, pretty, redriveBody } from "./deadLetters";

describe("dead-letter view logic", () => {
  it("sends only the filters that are set, times in UTC", () => {
    const filters = { ...NO_FILTERS, error_class: "CastError", q: "  n/a ", since: "2026-11-26T10:00" };
    const params = filterParams(filters);
    expect(params.error_class).toBe("CastError");
    expect(params.q).toBe("n/a");
    expect(params.since).toBe(new Date("2026-11-26T10:00").toISOString());
    expect(params).not.toHaveProperty("stage");
    expect(params).not.toHaveProperty("until");
  });

  it("pages the list 25 at a time", () => {
    expect(deadLettersPath("a b", { ...NO_FILTERS, stage: "source" }, 2)).toBe(
      "channels/a%20b/dead-letters/?stage=source&limit=25&offset=50",
    );
  });

  it("redrives the selected ids, or all matching the filters", () => {
    expect(redriveBody(["kafka:dl:0:1"], { ...NO_FILTERS, stage: "x" })).toEqual({
      ids: ["kafka:dl:0:1"],
      confirm: true,
    });
    expect(redriveBody("all", { ...NO_FILTERS, stage: "source" })).toEqual({
      all: true,
      stage: "source",
      confirm: true,
    });
  });

  it("knows the deep link to the dead letters", () => {
    expect(opensDeadLetters("#/channels/orders/dead-letters")).toBe(true);
    expect(opensDeadLetters("#/channels/orders")).toBe(false);
  });

  it("pretty-prints JSON values and JSON text, leaves other text alone", () => {
    expect(pretty('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(pretty('{"seq": 3, ')).toBe('{"seq": 3, ');
    expect(pretty(null)).toBe("—");
  });
});
