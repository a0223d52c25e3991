/**
 * Reading the API's lists, the one place that knows their pagination: limit/offset pages
 * (`?limit=&offset=`, DRF's LimitOffsetPagination) of `{count, next, previous, results}`.
 *
 * The server serves at most 500 items per page whatever `limit` asks (MAX_LIMIT in
 * console/api/pagination.py), so lists are read page after page until they are complete, never
 * by trusting one big `limit` to return everything.
 */

import { api } from "./client";
import type { Page } from "./types";

/** Items asked for per request (the server's maximum): a list of up to this many items costs
 * one request. */
export const PAGE_LIMIT = 500;

/** How many entries a history panel shows (lifecycle events, revisions: newest first). */
export const RECENT_LIMIT = 100;

/** `path` with `params` added to its query string (`path` may already have one). */
export function withQuery(path: string, params: Record<string, string | number>): string {
  const [base = "", query = ""] = path.split("?", 2);
  const search = new URLSearchParams(query);
  for (const [key, value] of Object.entries(params)) search.set(key, String(value));
  return `${base}?${search.toString()}`;
}

/**
 * The items of the list at `path` (relative to /api/v1/, its own query kept), in the server's
 * order: all of them, or the first `max`. Pages are read one after the other from offset 0
 * and the reading stops at the list's `count`, at `max`, or at an empty page.
 */
export async function listItems<T>(path: string, max = Infinity): Promise<T[]> {
  const items: T[] = [];
  while (items.length < max) {
    const limit = Math.min(PAGE_LIMIT, max - items.length);
    const page = await api<Page<T>>(withQuery(path, { limit, offset: items.length }));
    items.push(...page.results.slice(0, max - items.length));
    if (page.results.length === 0 || items.length >= page.count) break;
  }
  return items;
}
