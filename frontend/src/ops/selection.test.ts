import { describe, expect, it } from "vitest";

import { HEALTH_LEVELS, SHOWN_STATES, TARGET_STATES } from "../api/enums";
import type { Channel, TargetState } from "../api/types";
import { DEFAULT_PARAMS, listKey } from "./fleet";
import {
  bulkTarget,
  emptySelection,
  offersAllMatching,
  pageTicked,
  type Selection,
  type SelectionEvent,
  selectionAfter,
  selectionText,
} from "./selection";

const LIST = listKey(DEFAULT_PARAMS);

function channel(name: string, target_state: TargetState = "STOPPED", team = "pay"): Channel {
  return { name, target_state, team } as Channel;
}

const PAGE = [channel("a", "RUNNING"), channel("b", "PAUSED", "ads"), channel("c")];

/** The selection after `events`, one after the other, on `list`. */
function after(events: SelectionEvent[], list = LIST, from: Selection = emptySelection(LIST)): Selection {
  return events.reduce((selection, event) => selectionAfter(selection, list, event), from);
}

describe("ticking channels", () => {
  it("ticks and unticks one channel at a time; the bulk actions get the ticked ones", () => {
    const selection = after([
      { type: "tick", name: "a" },
      { type: "tick", name: "c" },
      { type: "tick", name: "b" },
      { type: "tick", name: "b" },
    ]);
    expect(bulkTarget(selection, PAGE, 120)).toEqual({
      names: ["a", "c"],
      targets: ["RUNNING", "STOPPED"],
      size: 2,
      teams: ["pay"], // each team once: what the actions' permissions are asked for
    });
    expect(selectionText(selection, PAGE, 120)).toBe("2 selected");
    expect(pageTicked(selection, PAGE)).toBe(false);
  });

  it("counts only the ticked channels of the page shown", () => {
    const selection = after([
      { type: "tick", name: "a" },
      { type: "tick", name: "elsewhere" },
    ]);
    expect(bulkTarget(selection, PAGE, 120).names).toEqual(["a"]);
    expect(selectionText(selection, PAGE, 120)).toBe("1 selected");
  });

  it("ticks the whole page, and unticks it", () => {
    const page = after([{ type: "tickPage", names: PAGE.map((c) => c.name), checked: true }]);
    expect(pageTicked(page, PAGE)).toBe(true);
    expect(bulkTarget(page, PAGE, 3).size).toBe(3);
    expect(bulkTarget(page, PAGE, 3).teams).toEqual(["pay", "ads"]);

    const none = after([{ type: "tickPage", names: [], checked: false }], LIST, page);
    expect(bulkTarget(none, PAGE, 3)).toEqual({ names: [], targets: [], size: 0, teams: [] });
    expect(pageTicked(emptySelection(LIST), [])).toBe(false); // an empty page is never "all ticked"
  });
});

describe("all matching channels", () => {
  const page = after([{ type: "tickPage", names: PAGE.map((c) => c.name), checked: true }]);

  it("is offered once the whole page is ticked and more channels match than it shows", () => {
    expect(offersAllMatching(page, PAGE, 120)).toBe(true);
    expect(offersAllMatching(page, PAGE, 3)).toBe(false);
    expect(offersAllMatching(after([{ type: "tick", name: "a" }]), PAGE, 120)).toBe(false);
  });

  it("sends no names (the filter chooses), every target state, and the count", () => {
    const all = after([{ type: "allMatching" }], LIST, page);
    expect(bulkTarget(all, PAGE, 10_000)).toEqual({ names: null, targets: TARGET_STATES, size: 10_000, teams: null });
    expect(selectionText(all, PAGE, 10_000)).toBe("All 10,000 matching selected");
    expect(offersAllMatching(all, PAGE, 10_000)).toBe(false);
  });

  it("ends when one channel is unticked: the rest of the page stays ticked", () => {
    const all = after([{ type: "allMatching" }], LIST, page);
    const less = after([{ type: "tick", name: "b" }], LIST, all);
    expect(bulkTarget(less, PAGE, 10_000)).toEqual({
      names: ["a", "c"],
      targets: ["RUNNING", "STOPPED"],
      size: 2,
      teams: ["pay"],
    });
  });
});

describe("a selection belongs to its list", () => {
  const ticked = after([{ type: "tick", name: "a" }, { type: "allMatching" }]);

  it("is empty once a filter, the search, the sort or the page size changes", () => {
    for (const change of [
      { states: ["FAILED" as const] },
      { healths: ["critical" as const] },
      { search: "orders" },
      { labels: "team=ads" },
      { ordering: "name" },
      { limit: 100 },
    ]) {
      const list = listKey({ ...DEFAULT_PARAMS, ...change });
      const now = after([], list, ticked);
      expect(bulkTarget(selectionAfter(now, list, { type: "tick", name: "b" }), PAGE, 120)).toEqual({
        names: ["b"],
        targets: ["PAUSED"],
        size: 1,
        teams: ["ads"],
      });
      expect(selectionAfter(ticked, list, { type: "allMatching" }).ticked.size).toBe(0);
    }
  });

  it("is kept when the page turns", () => {
    expect(listKey({ ...DEFAULT_PARAMS, offset: 50 })).toBe(LIST);
  });

  it("is emptied after a bulk action", () => {
    expect(bulkTarget(after([{ type: "clear" }], LIST, ticked), PAGE, 120).size).toBe(0);
  });
});

describe("the API's enums as the filters' options", () => {
  it("lists every shown state, most in need of attention first", () => {
    expect(SHOWN_STATES).toEqual([
      "FAILED",
      "NOT_REPORTING",
      "RESTARTING",
      "UNASSIGNED",
      "PAUSED",
      "RUNNING",
      "STOPPED",
    ]);
  });

  it("lists health levels worst first and the target states in lifecycle order", () => {
    expect(HEALTH_LEVELS).toEqual(["critical", "warning", "ok", "idle"]);
    expect(TARGET_STATES).toEqual(["RUNNING", "PAUSED", "STOPPED"]);
  });
});
