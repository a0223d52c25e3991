/** The live tail's rows: a one-line summary of each event or Kafka record (time, partition
 * and offset, key, then the value's fields), the row expanding to the value in full; and the
 * rule that keeps an opened row from scrolling away (pure, unit-tested). */

/** Fields that name an event (CloudEvents' id, type, time, subject), shown first. */
const NAMING = ["id", "type", "time", "subject", "detail-type", "event_type", "key"];
/** CloudEvents' envelope fields, shown after the payload's (they are much the same each time). */
const ENVELOPE = ["source", "specversion", "datacontenttype", "dataschema"];

const MAX_FIELDS = 7;
const MAX_VALUE = 40;

function short(value: unknown, max = MAX_VALUE): string {
  let text: string;
  if (value === null) text = "null";
  else if (typeof value === "object") text = Array.isArray(value) ? `[${value.length} items]` : "{…}";
  else text = String(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
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

// -- records read where the events are (GET /channels/{name}/tail) ------------------------------

/** What the tail needs of a record (the API's ``TailRecord``). */
export interface TailRecordLike {
  topic: string | null;
  partition: number | null;
  offset: number | null;
  timestamp: string | null;
  key: string | null;
  key_encoding: string;
  headers: readonly { name: string; value: string | null; encoding: string }[];
  value: unknown;
  value_encoding: string;
  truncated: boolean;
  size: number;
}

/** How many rows the tail keeps on screen. */
export const TAIL_ROWS = 50;

/** A record's identity across looks: where it is in Kafka, else (a Preview sink's event, which
 * has no offset) the event itself. */
export function recordId(record: TailRecordLike): string {
  if (record.topic !== null && record.partition !== null && record.offset !== null) {
    return `${record.topic}/${record.partition}/${record.offset}`;
  }
  return `event:${JSON.stringify(record.value)}`;
}

/** The record's time as hh:mm:ss.mmm (24 h, the browser's time zone); "—" without one. */
export function recordTime(record: TailRecordLike): string {
  if (!record.timestamp) return "—";
  const at = new Date(record.timestamp);
  if (Number.isNaN(at.getTime())) return "—";
  const hms = at.toLocaleTimeString("en-GB", { hour12: false });
  return `${hms}.${String(at.getMilliseconds()).padStart(3, "0")}`;
}

/** Where the record is: "p1 #42" (partition and offset); empty for a Preview sink's event. */
export function recordWhere(record: TailRecordLike): string {
  if (record.partition === null || record.offset === null) return "";
  return `p${record.partition} #${record.offset}`;
}

/** The record's key for the one-line summary: "key=6", "key=(binary)", empty when it has none. */
export function recordKey(record: TailRecordLike): string {
  if (record.key === null || record.key_encoding === "null") return "";
  return `key=${record.key_encoding === "base64" ? "(binary)" : short(record.key)}`;
}

/** The value on one line: a JSON value as ``tailSummary`` shows an event; text as it is (cut);
 * binary and absent values said in words. */
export function recordSummary(record: TailRecordLike): string {
  switch (record.value_encoding) {
    case "null":
      return "(no value: a tombstone)";
    case "base64":
      return `(binary value, ${record.size.toLocaleString("en-US")} bytes)`;
    case "text":
      return short(String(record.value).replace(/\s+/g, " "), 120) + (record.truncated ? " (cut)" : "");
    default:
      return tailSummary(record.value);
  }
}

/** The value in full for the opened row: JSON indented, text as it is, with a line saying when
 * the value was cut. */
export function recordBody(record: TailRecordLike): string {
  const body =
    record.value_encoding === "json"
      ? prettyEvent(record.value)
      : record.value_encoding === "null"
        ? "(no value: a tombstone)"
        : String(record.value);
  if (!record.truncated) return body;
  return `${body}\n… cut: the value is ${record.size.toLocaleString("en-US")} bytes, the tail shows the first 16 KiB.`;
}

/** What the tail shows: the newest records, unless it is held (paused, or a row is open),
 * in which case the rows stay as they were (``frozen``) so nothing scrolls away, and
 * ``waiting`` counts the newer records not shown. */
export function tailView<R extends TailRecordLike>(
  latest: readonly R[],
  frozen: readonly R[] | null,
  max = TAIL_ROWS,
): { rows: readonly R[]; waiting: number; atLeast: boolean } {
  if (frozen === null) return { rows: latest.slice(0, max), waiting: 0, atLeast: false };
  const shown = new Set(frozen.map(recordId));
  const newest = frozen[0] ? recordTimeValue(frozen[0]) : -Infinity;
  const waiting = latest.filter((r) => !shown.has(recordId(r)) && recordTimeValue(r) >= newest).length;
  // Every record of a full read is new: more may have come than one read returns.
  return { rows: frozen, waiting, atLeast: waiting > 0 && waiting >= max && waiting === latest.length };
}

function recordTimeValue(record: TailRecordLike): number {
  const at = record.timestamp ? new Date(record.timestamp).getTime() : NaN;
  return Number.isNaN(at) ? -Infinity : at;
}

/** The words for what the tail is doing, said before the user reads the rows. */
export function tailStatus(paused: boolean, open: number): string {
  if (paused) return "Paused: not reading new events. Resume tail reads them again.";
  if (open > 0) return "Held while an event is open: new events are not put above it.";
  return "Reading every 2 s, newest first.";
}

/** The button that brings the held-back events in: "3 new events — show" ("50 or more" when
 * a whole read is new, so more may have come). */
export function waitingLabel(waiting: number, atLeast = false): string {
  if (atLeast) return `${waiting} or more new events — show the newest ${waiting}`;
  return `${waiting === 1 ? "1 new event" : `${waiting} new events`} — show`;
}
