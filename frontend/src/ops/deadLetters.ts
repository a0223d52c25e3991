/** Pure logic of the dead-letter view: the list's query, the redrive body, the deep link. */

export interface DeadLetterFilters {
  error_class: string;
  stage: string;
  rule: string;
  /** `datetime-local` values (the browser's local time), empty when unset. */
  since: string;
  until: string;
  q: string;
}

export const NO_FILTERS: DeadLetterFilters = { error_class: "", stage: "", rule: "", since: "", until: "", q: "" };

export const DEAD_LETTERS_PAGE = 25;

/** A `datetime-local` value (local time) as an RFC 3339 UTC instant; "" when unset or invalid. */
export function localToIso(value: string): string {
  if (!value) return "";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString();
}

/** The set filters as API parameters (times in UTC). */
export function filterParams(filters: DeadLetterFilters): Record<string, string> {
  const params: Record<string, string> = {};
  for (const key of ["error_class", "stage", "rule", "q"] as const) {
    const value = filters[key].trim();
    if (value) params[key] = value;
  }
  const since = localToIso(filters.since);
  const until = localToIso(filters.until);
  if (since) params.since = since;
  if (until) params.until = until;
  return params;
}

/** The list's path under /api/v1/ for `page` (0-based) with the filters. */
export function deadLettersPath(name: string, filters: DeadLetterFilters, page: number): string {
  const search = new URLSearchParams({
    ...filterParams(filters),
    limit: String(DEAD_LETTERS_PAGE),
    offset: String(page * DEAD_LETTERS_PAGE),
  });
  return `channels/${encodeURIComponent(name)}/dead-letters/?${search.toString()}`;
}

export type RedriveBody =
  { ids: string[]; confirm: true } | ({ all: true; confirm: true } & Record<string, string | boolean>);

/** What to send back: the selected ids, or every dead letter matching the filters. Sent only
 * from the confirmation that named the live targets: `confirm: true` says the user saw them. */
export function redriveBody(selection: "all" | string[], filters: DeadLetterFilters): RedriveBody {
  if (selection === "all") return { all: true, ...filterParams(filters), confirm: true };
  return { ids: [...selection], confirm: true };
}

/** Whether the page was opened on its dead letters (`#/channels/<name>/dead-letters`). */
export function opensDeadLetters(hash: string): boolean {
  return /^#\/channels\/[^/]+\/dead-letters\/?$/.test(hash);
}

/** A JSON value pretty-printed; text that is JSON is parsed first (a payload as read). */
export function pretty(value: unknown): string {
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}
