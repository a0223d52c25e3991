/**
 * The channels list of a fleet, read one page at a time from the server: search, filters
 * (state, health, labels), sorting and paging are the API's (`GET /channels/?expand=status
 * &search=&state=&health=&label=&ordering=&limit=&offset=`), and actions on a selection go
 * in one request (`POST /channels/bulk`), answered per channel.
 */

import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, post } from "../api/client";
import type { ChannelWithStatus, HealthLevel, Page, ShownState } from "../api/types";

export const POLL_MS = 2000;
export const PAGE_SIZES = [50, 100, 200] as const;

export type SortKey = "name" | "state" | "health" | "target_state" | "worker" | "updated";
export type BulkAction = "start" | "stop" | "pause" | "resume" | "restart" | "delete";

export interface FleetParams {
  search: string;
  states: ShownState[];
  healths: HealthLevel[];
  /** `key=value` or `key` selectors, as typed (see parseLabels). */
  labels: string;
  /** One team's channels by its name; empty: every team the user sees. */
  team: string;
  /** `name`, `-name`, … ; empty: the server's order (failures first, then by name). */
  ordering: string;
  limit: number;
  offset: number;
}

export const DEFAULT_PARAMS: FleetParams = {
  search: "",
  states: [],
  healths: [],
  labels: "",
  team: "",
  ordering: "",
  limit: 50,
  offset: 0,
};

/** `team=payments, tier` → `["team=payments", "tier"]` (commas or spaces between). */
export function parseLabels(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((part) => part.trim())
    .filter((part) => part !== "");
}

/** The list's query string (`channels/?…`) for `params`, with the status expanded. */
export function listPath(params: FleetParams): string {
  const query = new URLSearchParams({ expand: "status" });
  if (params.search.trim()) query.set("search", params.search.trim());
  for (const state of params.states) query.append("state", state);
  for (const health of params.healths) query.append("health", health);
  for (const label of parseLabels(params.labels)) query.append("label", label);
  if (params.team) query.set("team", params.team);
  if (params.ordering) query.set("ordering", params.ordering);
  query.set("limit", String(params.limit));
  query.set("offset", String(params.offset));
  return `channels/?${query.toString()}`;
}

/** Which list `params` shows, whatever its page: a selection belongs to one (./selection). */
export function listKey(params: FleetParams): string {
  return listPath({ ...params, offset: 0 });
}

/** Whether `params` filters nothing out (the empty list then means no channel at all). */
export function unfiltered(params: FleetParams): boolean {
  return !params.search && !params.states.length && !params.healths.length && !params.labels && !params.team;
}

/** The filter part of `params` as the bulk endpoint's `filter` (every matching channel). With
 * nothing to narrow it, it says `all: true`, as the endpoint requires of a filter that keeps
 * every channel (the user chose "all matching" on an unfiltered list). */
export function bulkFilter(params: FleetParams): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  if (params.search.trim()) filter.search = params.search.trim();
  if (params.states.length) filter.state = params.states;
  if (params.healths.length) filter.health = params.healths;
  const labels = parseLabels(params.labels);
  if (labels.length) filter.label = labels;
  if (params.team) filter.team = [params.team];
  if (Object.keys(filter).length === 0) filter.all = true;
  return filter;
}

/** Clicking a sort header: ascending, then descending, then the server's default order. */
export function nextOrdering(current: string, key: SortKey): string {
  if (current === key) return `-${key}`;
  if (current === `-${key}`) return "";
  return key;
}

/** `aria-sort` of a header for the current ordering. */
export function ariaSort(current: string, key: SortKey): "ascending" | "descending" | "none" {
  if (current === key) return "ascending";
  if (current === `-${key}`) return "descending";
  return "none";
}

/** "1–50 of 10,000" (or "0 of 0"). */
export function rangeText(offset: number, shown: number, count: number): string {
  if (count === 0 || shown === 0) return `0 of ${count.toLocaleString("en")}`;
  return `${(offset + 1).toLocaleString("en")}–${(offset + shown).toLocaleString("en")} of ${count.toLocaleString("en")}`;
}

export interface BulkResult {
  name: string;
  ok: boolean;
  status: number;
  error: string;
  target_state: string | null;
  /** False when it already was where the action takes it: nothing was done. */
  changed: boolean;
}

export interface BulkAnswer {
  action: BulkAction;
  count: number;
  ok: number;
  /** Of the ok ones, those that already were where the action takes them. */
  unchanged: number;
  failed: number;
  results: BulkResult[];
}

const ALREADY: Partial<Record<BulkAction, string>> = {
  start: "running",
  resume: "running",
  pause: "paused",
  stop: "stopped",
};

const DONE: Record<BulkAction, string> = {
  start: "started",
  stop: "stopped",
  pause: "paused",
  resume: "resumed",
  restart: "restarted",
  delete: "deleted",
};

/** One line for the whole answer and one per failed channel, in the answer's own terms: how many
 * the action changed ("1 started"), how many already were so and were left alone ("1 already
 * running"), how many failed. A channel left alone is never counted as done. */
export function bulkMessages(answer: BulkAnswer): { summary: string; failures: string[] } {
  const unchanged = answer.unchanged ?? 0;
  const failures = answer.results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.error}`);
  if (answer.count === 0) return { summary: "No channel matched: nothing was done.", failures };
  const parts = [`${answer.ok - unchanged} ${DONE[answer.action]}`];
  if (unchanged > 0) parts.push(`${unchanged} already ${ALREADY[answer.action] ?? "so"}`);
  if (answer.failed > 0) parts.push(`${answer.failed} failed`);
  return { summary: `${parts.join(", ")}.`, failures };
}

/** How many names a confirmation spells out before "and N more". */
export const NAMED_IN_CONFIRM = 5;

/** The question asked before deleting: the channels by name (up to NAMED_IN_CONFIRM, then
 * "and N more"), or, for "all matching", how many and that the list's filter chooses them. */
export function deleteConfirmText(names: string[] | null, size: number): string {
  const many = "Their connectors stop; their checkpoints stay on the runtime. This cannot be undone.";
  if (names === null) return `Delete all ${size.toLocaleString("en")} channels matching the filter? ${many}`;
  if (names.length === 1) {
    return `Delete channel "${names[0]}"? Its connector stops; its checkpoint stays on the runtime. This cannot be undone.`;
  }
  const quoted = names.slice(0, NAMED_IN_CONFIRM).map((n) => `"${n}"`);
  const more = names.length - quoted.length;
  const list = more > 0 ? `${quoted.join(", ")} and ${more} more` : joinAnd(quoted);
  return `Delete ${names.length} channels: ${list}? ${many}`;
}

function joinAnd(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

/** The query of one page of the list (its key and how it is read). */
export function pageQuery(params: FleetParams) {
  return {
    queryKey: ["channels", "page", params],
    queryFn: () => api<Page<ChannelWithStatus>>(listPath(params)),
  };
}

/** One page of the list, polled; the previous page stays on screen while the next loads. */
export function useChannelsPage(params: FleetParams) {
  return useQuery({
    ...pageQuery(params),
    placeholderData: keepPreviousData,
    refetchInterval: POLL_MS,
    // The page prefetched at start-up (src/prefetch.ts) is shown, not asked for again.
    staleTime: POLL_MS / 2,
  });
}

/** `POST /channels/bulk` by names or by the current filter. */
export function useBulkAction() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { action: BulkAction; names?: string[]; filter?: Record<string, unknown> }) =>
      post<BulkAnswer>("channels/bulk", body),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: ["channels"] });
      void client.invalidateQueries({ queryKey: ["status"] });
      void client.invalidateQueries({ queryKey: ["teams"] });
    },
  });
}
