/** The live tail's rows: a one-line summary of each event (pure, unit-tested); the row
 * expands to the event pretty-printed. */

/** Fields that name an event (CloudEvents' id, type, time, subject), shown first. */
const NAMING = ["id", "type", "time", "subject", "detail-type", "event_type", "key"];
/** CloudEvents' envelope fields, shown after the payload's (they are much the same each time). */
const ENVELOPE = ["source", "specversion", "datacontenttype", "dataschema"];

const MAX_FIELDS = 7;
const MAX_VALUE = 40;

function short(value: unknown): string {
  let text: string;
  if (value === null) text = "null";
  else if (typeof value === "object") text = Array.isArray(value) ? `[${value.length} items]` : "{…}";
  else text = String(value);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** ``key=value`` pairs: the naming fields, then the payload's (a CloudEvent's ``data``, its
 * fields shown as they are), then the rest; at most seven, long values cut, "+N more". */
export function tailSummary(event: unknown): string {
  if (!isRecord(event)) return short(event);
  const pairs: [string, unknown][] = NAMING.filter((k) => k in event).map((k) => [k, event[k]]);
  const data = event.data;
  if (isRecord(data)) pairs.push(...Object.entries(data));
  else if ("data" in event) pairs.push(["data", data]);
  const rest = Object.keys(event).filter((k) => !NAMING.includes(k) && k !== "data");
  rest.sort((a, b) => Number(ENVELOPE.includes(a)) - Number(ENVELOPE.includes(b)));
  pairs.push(...rest.map((k): [string, unknown] => [k, event[k]]));
  const shown = pairs.slice(0, MAX_FIELDS).map(([k, v]) => `${k}=${short(v)}`);
  const more = pairs.length - shown.length;
  return shown.join("  ") + (more > 0 ? `  +${more} more` : "");
}

/** The event as indented JSON. */
export function prettyEvent(event: unknown): string {
  return JSON.stringify(event, null, 2);
}
