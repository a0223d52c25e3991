/**
 * A channel's labels as the channel page edits them: rows of key=value, checked by the
 * server's rules (console/labels.py, Kubernetes') before saving, the server's 400 paths
 * (`labels.<key>`, `labels`) put back on their rows, and the change said before it is saved.
 */

export const MAX_LABELS = 64;
const NAME_MAX = 63;
const PREFIX_MAX = 253;
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAME_RULE = "at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit";

export interface LabelRow {
  key: string;
  value: string;
}

/** The rows of saved labels, by key. */
export function rowsOf(labels: Record<string, string> | undefined): LabelRow[] {
  return Object.entries(labels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => ({ key, value }));
}

/** Why ``key`` is not a label key (the server's words), or null. */
export function keyError(key: string): string | null {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : "";
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (
    slash >= 0 &&
    (!prefix ||
      prefix.length > PREFIX_MAX ||
      !prefix.split(".").every((part) => DNS_LABEL.test(part) && part.length <= 63))
  )
    return "The prefix before '/' must be a DNS subdomain: lower-case letters, digits, '-' and '.', at most 253 characters.";
  if (!name || name.length > NAME_MAX || !NAME.test(name)) return `A label key's name must be ${NAME_RULE}.`;
  return null;
}

/** Why ``value`` is not a label value, or null. */
export function valueError(value: string): string | null {
  if (value && (value.length > NAME_MAX || !NAME.test(value))) return `A label value must be empty or ${NAME_RULE}.`;
  return null;
}

export interface Checked {
  labels: Record<string, string>;
  /** Problems by row index; "" for the labels as a whole. */
  errors: Record<string, string[]>;
}

/** The labels the rows make, with each row's problems (a blank row is left out). */
export function checkRows(rows: LabelRow[]): Checked {
  const labels: Record<string, string> = {};
  const errors: Record<string, string[]> = {};
  const add = (at: string, message: string) => (errors[at] ??= []).push(message);
  rows.forEach((row, i) => {
    const key = row.key.trim();
    const value = row.value.trim();
    if (key === "" && value === "") return;
    if (key === "") return add(String(i), "A label needs a key.");
    const problems = [keyError(key), valueError(value)].filter((p): p is string => p !== null);
    problems.forEach((p) => add(String(i), p));
    if (key in labels) add(String(i), `The key ${key} is already used above: a key has one value.`);
    else if (problems.length === 0) labels[key] = value;
  });
  const count = rows.filter((r) => r.key.trim() !== "").length;
  if (count > MAX_LABELS) add("", `At most ${MAX_LABELS} labels (got ${count}).`);
  return { labels, errors };
}

/** The server's 400 (`labels.<key>`, `labels`) as problems by row index, "" for the whole. */
export function serverErrorsByRow(rows: LabelRow[], fieldErrors: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(fieldErrors)) {
    if (path === "labels") {
      (out[""] ??= []).push(...messages);
      continue;
    }
    if (!path.startsWith("labels.")) continue;
    const key = path.slice("labels.".length);
    const index = rows.findIndex((r) => r.key.trim() === key);
    (out[index >= 0 ? String(index) : ""] ??= []).push(
      ...(index >= 0 ? messages : messages.map((m) => `${key}: ${m}`)),
    );
  }
  return out;
}

/** What saving will change, in words; "" when nothing. */
export function describeChange(before: Record<string, string>, after: Record<string, string>): string {
  const shown = (key: string, value: string) => (value === "" ? key : `${key}=${value}`);
  const added = Object.keys(after)
    .filter((k) => !(k in before))
    .sort()
    .map((k) => shown(k, after[k]!));
  const removed = Object.keys(before)
    .filter((k) => !(k in after))
    .sort()
    .map((k) => shown(k, before[k]!));
  const changed = Object.keys(after)
    .filter((k) => k in before && before[k] !== after[k])
    .sort()
    .map((k) => `${k} from ${before[k] === "" ? "(empty)" : before[k]} to ${after[k] === "" ? "(empty)" : after[k]}`);
  const parts = [
    added.length ? `adds ${added.join(", ")}` : "",
    removed.length ? `removes ${removed.join(", ")}` : "",
    changed.length ? `changes ${changed.join(", ")}` : "",
  ].filter(Boolean);
  if (parts.length === 0) return "";
  const text = parts.join("; ");
  return `Saving ${text}.`;
}
