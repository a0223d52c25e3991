import { describe, expect, it } from "vitest";

import {
  ariaSort,
  bulkFilter,
  bulkMessages,
  deleteConfirmText,
  DEFAULT_PARAMS,
  listPath,
  nextOrdering,
  parseLabels,
  rangeText,
  unfiltered,
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
    expect(
      bulkFilter({ ...DEFAULT_PARAMS, states: ["RUNNING"], labels: "team=ads", ordering: "name", offset: 50 }),
    ).toEqual({
      state: ["RUNNING"],
      label: ["team=ads"],
    });
  });

  it("keeps one team's channels when a team is chosen, in the list and in a bulk action", () => {
    const params = { ...DEFAULT_PARAMS, team: "payments" };
    expect(new URLSearchParams(listPath(params).split("?")[1]).get("team")).toBe("payments");
    expect(bulkFilter(params)).toEqual({ team: ["payments"] });
    expect(unfiltered(params)).toBe(false);
    expect(unfiltered(DEFAULT_PARAMS)).toBe(true);
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
    expect(summary).toBe("1 paused, 2 failed.");
    expect(failures).toEqual(["b: channel 'b' is STOPPED", "c: No channel has this name."]);
    expect(bulkMessages({ action: "stop", count: 2, ok: 2, unchanged: 0, failed: 0, results: [] }).summary).toBe(
      "2 stopped.",
    );
    // One of the two already ran: it is not counted as started.
    expect(bulkMessages({ action: "start", count: 2, ok: 2, unchanged: 1, failed: 0, results: [] }).summary).toBe(
      "1 started, 1 already running.",
    );
    expect(bulkMessages({ action: "pause", count: 2, ok: 2, unchanged: 2, failed: 0, results: [] }).summary).toBe(
      "0 paused, 2 already paused.",
    );
    expect(bulkMessages({ action: "delete", count: 0, ok: 0, unchanged: 0, failed: 0, results: [] }).summary).toBe(
      "No channel matched: nothing was done.",
    );
  });
});

describe("the bulk delete's question", () => {
  it("names one channel", () => {
    expect(deleteConfirmText(["orders-eu"], 1)).toBe(
      'Delete channel "orders-eu"? Its connector stops; its checkpoint stays on the runtime. This cannot be undone.',
    );
  });

  it("names a few channels, then says how many more", () => {
    expect(deleteConfirmText(["a", "b", "c"], 3)).toMatch(
      /^Delete 3 channels: "a", "b" and "c"\? Their connectors stop/,
    );
    const seven = ["a", "b", "c", "d", "e", "f", "g"];
    expect(deleteConfirmText(seven, 7)).toMatch(/^Delete 7 channels: "a", "b", "c", "d", "e" and 2 more\?/);
  });

  it("says how many when the filter chooses them", () => {
    expect(deleteConfirmText(null, 1234)).toMatch(/^Delete all 1,234 channels matching the filter\?/);
  });
});
