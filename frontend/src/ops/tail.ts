/** The live tail's rows: a one-line summary of each event (pure, unit-tested); the row
 * expands to the event pretty-printed. */

/** Fields that name an event, shown first in its summary when present. */
const NAMING = ["id", "type", "source", "time", "subject", "detail-type", "event_type", "key"];

const MAX_FIELDS = 6;
const MAX_VALUE = 40;

function short(value: unknown): string {
  let text: string;
  if (value === null) text = "null";
  else if (typeof value === "object") text = Array.isArray(value) ? `[${value.length} items]` : "{…}";
  else text = String(value);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}

/** ``key=value`` pairs of the event's top-level fields, naming fields first, at most six,
 * long values cut; a value that is not an object as itself. */
export function tailSummary(event: unknown): string {
  if (event === null || typeof event !== "object" || Array.isArray(event)) return short(event);
  const record = event as Record<string, unknown>;
  const keys = Object.keys(record);
  const ordered = [...NAMING.filter((k) => k in record), ...keys.filter((k) => !NAMING.includes(k))];
  const shown = ordered.slice(0, MAX_FIELDS).map((k) => `${k}=${short(record[k])}`);
  const more = keys.length - shown.length;
  return shown.join("  ") + (more > 0 ? `  +${more} more` : "");
}

/** The event as indented JSON. */
export function prettyEvent(event: unknown): string {
  return JSON.stringify(event, null, 2);
}
