/**
 * What the channels list's bulk actions apply to: channels ticked on the page shown, or every
 * channel the list's filter matches, on every page ("Select all N matching").
 *
 * A selection belongs to the list it was made on (`list`: the filters, sort and page size,
 * not the page). Once the list changes it is empty, whichever control changed it, so an action
 * never applies to a choice made under filters no longer shown. Turning pages keeps it; only
 * the ticked channels of the page shown count.
 */

import { useReducer } from "react";

import { TARGET_STATES } from "../api/enums";
import type { Channel, TargetState } from "../api/types";

export interface Selection {
  /** The list the selection was made on (see listKey in ./fleet). */
  list: string;
  ticked: ReadonlySet<string>;
  allMatching: boolean;
}

export type SelectionEvent =
  | { type: "tick"; name: string }
  | { type: "tickPage"; names: string[]; checked: boolean }
  | { type: "allMatching" }
  | { type: "clear" };

/** What the bulk actions get: the names (null: every channel the filter matches), the target
 * states they judge which actions make sense by, and how many channels. */
export interface BulkTarget {
  names: string[] | null;
  targets: TargetState[];
  size: number;
  /** The teams of the ticked channels, each once; `null` for "all matching" (any of the user's). */
  teams: string[] | null;
}

export function emptySelection(list: string): Selection {
  return { list, ticked: new Set(), allMatching: false };
}

/** `selection` if it was made on `list`, else nothing selected. */
export function onList(selection: Selection, list: string): Selection {
  return selection.list === list ? selection : emptySelection(list);
}

/** The selection after `event` on `list`. Ticking or unticking one channel, or the whole page,
 * leaves "all matching". */
export function selectionAfter(selection: Selection, list: string, event: SelectionEvent): Selection {
  const current = onList(selection, list);
  switch (event.type) {
    case "tick": {
      const ticked = new Set(current.ticked);
      if (ticked.has(event.name)) ticked.delete(event.name);
      else ticked.add(event.name);
      return { list, ticked, allMatching: false };
    }
    case "tickPage":
      return { list, ticked: new Set(event.checked ? event.names : []), allMatching: false };
    case "allMatching":
      return { ...current, allMatching: true };
    case "clear":
      return emptySelection(list);
  }
}

/** The page's channels that are ticked. */
export function chosen(selection: Selection, rows: Channel[]): Channel[] {
  return rows.filter((channel) => selection.ticked.has(channel.name));
}

export function bulkTarget(selection: Selection, rows: Channel[], count: number): BulkTarget {
  if (selection.allMatching) return { names: null, targets: TARGET_STATES, size: count, teams: null };
  const picked = chosen(selection, rows);
  return {
    names: picked.map((c) => c.name),
    targets: picked.map((c) => c.target_state),
    size: picked.length,
    teams: [...new Set(picked.flatMap((c) => (c.team ? [c.team] : [])))],
  };
}

/** Whether the page's header box is ticked: every channel of a non-empty page is. */
export function pageTicked(selection: Selection, rows: Channel[]): boolean {
  return rows.length > 0 && chosen(selection, rows).length === rows.length;
}

/** "Select all N matching" is offered once the whole page is ticked and more channels match. */
export function offersAllMatching(selection: Selection, rows: Channel[], count: number): boolean {
  return !selection.allMatching && pageTicked(selection, rows) && count > rows.length;
}

/** "3 selected", or "All 10,000 matching selected". */
export function selectionText(selection: Selection, rows: Channel[], count: number): string {
  if (selection.allMatching) return `All ${count.toLocaleString("en")} matching selected`;
  return `${chosen(selection, rows).length} selected`;
}

/** The selection of the channels list `list` (a key of its filters), over its page `rows` of
 * `count` matching channels: what is ticked, what the bulk actions get, and the ways to change it. */
export function useSelection(list: string, rows: Channel[], count: number) {
  const [stored, dispatch] = useReducer(
    (selection: Selection, event: SelectionEvent & { list: string }) => selectionAfter(selection, event.list, event),
    list,
    emptySelection,
  );
  const selection = onList(stored, list);
  return {
    isTicked: (name: string) => selection.allMatching || selection.ticked.has(name),
    pageTicked: pageTicked(selection, rows),
    offersAllMatching: offersAllMatching(selection, rows, count),
    text: selectionText(selection, rows, count),
    bulk: bulkTarget(selection, rows, count),
    tick: (name: string) => dispatch({ type: "tick", name, list }),
    tickPage: (checked: boolean) => dispatch({ type: "tickPage", names: rows.map((c) => c.name), checked, list }),
    selectAllMatching: () => dispatch({ type: "allMatching", list }),
    clear: () => dispatch({ type: "clear", list }),
  };
}

/** What useSelection gives the list's components. */
export type SelectionHandle = ReturnType<typeof useSelection>;
