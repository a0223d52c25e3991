import { describe, expect, it } from "vitest";

import {
  ariaSort,
  bulkFilter,
  bulkMessages,
  DEFAULT_PARAMS,
  listPath,
  nextOrdering,
  parseLabels,
  rangeText,
} from "./fleet";

describe("the fleet list's requests", () => {
  it("asks the server for one page with status and nothing else by default", () => {
    expect(listPath(DEFAULT_PARAMS)).toBe("channels/?expand=status&limit=50&offset=0");
  });

  it("sends search, repeated filters, labels and the ordering", () => {
    const path = listPath({
      ...DEFAULT_PARAMS,
      search: "  orders ",
      states: ["FAILED", "PAUSED"],
      healths: ["critical"],
      labels: "team=payments, tier",
      ordering: "-updated",
      limit: 100,
      offset: 200,
    });
    const query = new URLSearchParams(path.split("?")[1]);
    expect(query.get("search")).toBe("orders");
    expect(query.getAll("state")).toEqual(["FAILED", "PAUSED"]);
    expect(query.getAll("health")).toEqual(["critical"]);
    expect(query.getAll("label")).toEqual(["team=payments", "tier"]);
    expect(query.get("ordering")).toBe("-updated");
    expect([query.get("limit"), query.get("offset")]).toEqual(["100", "200"]);
  });

  it("turns the filters into the bulk endpoint's filter (no paging, no ordering)", () => {
    expect(bulkFilter(DEFAULT_PARAMS)).toEqual({ all: true });
    expect(bulkFilter({ ...DEFAULT_PARAMS, states: ["RUNNING"], labels: "team=ads", ordering: "name", offset: 50 })).toEqual({
      state: ["RUNNING"],
      label: ["team=ads"],
    });
  });

  it("splits labels on commas and spaces", () => {
    expect(parseLabels(" a=b,c  d=e ,")).toEqual(["a=b", "c", "d=e"]);
    expect(parseLabels("")).toEqual([]);
  });
});

describe("sort headers and paging", () => {
  it("cycles ascending, descending, then the server's default", () => {
    expect(nextOrdering("", "name")).toBe("name");
    expect(nextOrdering("name", "name")).toBe("-name");
    expect(nextOrdering("-name", "name")).toBe("");
    expect(nextOrdering("-name", "health")).toBe("health");
    expect([ariaSort("health", "health"), ariaSort("-health", "health"), ariaSort("name", "health")]).toEqual([
      "ascending",
      "descending",
      "none",
    ]);
  });

  it("says which channels of how many are shown", () => {
    expect(rangeText(0, 50, 10000)).toBe("1–50 of 10,000");
    expect(rangeText(9950, 50, 10000)).toBe("9,951–10,000 of 10,000");
    expect(rangeText(0, 0, 0)).toBe("0 of 0");
  });
});

describe("bulk answers", () => {
  it("summarise and list each channel that failed with its reason", () => {
    const { summary, failures } = bulkMessages({
      action: "pause",
      count: 3,
      ok: 1,
      unchanged: 0,
      failed: 2,
      results: [
        { name: "a", ok: true, status: 202, error: "", target_state: "PAUSED", changed: true },
        { name: "b", ok: false, status: 409, error: "channel 'b' is STOPPED", target_state: null, changed: true },
        { name: "c", ok: false, status: 404, error: "No channel has this name.", target_state: null, changed: true },
      ],
    });
    expect(summary).toBe("pause: 1 of 3 done, 2 failed.");
    expect(failures).toEqual(["b: channel 'b' is STOPPED", "c: No channel has this name."]);
    expect(bulkMessages({ action: "stop", count: 2, ok: 2, unchanged: 0, failed: 0, results: [] }).summary).toBe(
      "stop: 2 of 2 done.",
    );
    // One of the two already ran: it is not counted as done.
    expect(bulkMessages({ action: "start", count: 2, ok: 2, unchanged: 1, failed: 0, results: [] }).summary).toBe(
      "start: 1 of 2 done, 1 already running.",
    );
  });
});
