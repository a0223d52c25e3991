/**
 * The MirrorMaker 2 wizard's logic (offsets panel): the form → request, server field errors →
 * the form's fields, and the preview's rows (MM2's last copied offset next to the channel's next).
 */

import type { components } from "../api/schema";

type Schemas = components["schemas"];
export type MirrorPreview = Schemas["MirrorPreview"];
export type HandBack = Schemas["HandBack"];
export type MirrorMaker2Request = Schemas["MirrorMaker2Request"];

export type Direction = "takeover" | "handback";
export type MirrorForm = { source_alias: string; offsets_topic: string; bootstrap_servers: string };
export type MirrorField = keyof MirrorForm;
export const MIRROR_FIELDS: MirrorField[] = ["source_alias", "offsets_topic", "bootstrap_servers"];

/** As the server's allow-list: letters, digits, '_' and '-' (a '.' makes MM2's topic names ambiguous). */
const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/;
const BROKERS = /^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*$/;

export type BuiltRequest =
  { ok: true; body: MirrorMaker2Request } | { ok: false; errors: Partial<Record<MirrorField | "", string>> };

/** The request for what was typed (blank optional fields left out: the server's defaults). */
export function buildMirrorRequest(form: MirrorForm): BuiltRequest {
  const alias = form.source_alias.trim();
  const topic = form.offsets_topic.trim();
  const brokers = form.bootstrap_servers.replace(/\s+/g, "");
  const errors: Partial<Record<MirrorField, string>> = {};
  if (!ALIAS.test(alias)) errors.source_alias = "A cluster alias: 1-64 letters, digits, '_' or '-'.";
  if (topic && (!TOPIC.test(topic) || topic.startsWith("__") || topic === "." || topic === ".."))
    errors.offsets_topic = "A Kafka topic name (letters, digits, '.', '_' or '-'), not an internal one.";
  if (brokers && !BROKERS.test(brokers)) errors.bootstrap_servers = "host:port, comma-separated.";
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const body: MirrorMaker2Request = { source_alias: alias };
  if (topic) body.offsets_topic = topic;
  if (brokers) body.bootstrap_servers = brokers;
  return { ok: true, body };
}

/** The default offsets topic MM2's dedicated driver uses for a source alias. */
export function defaultOffsetsTopic(alias: string): string {
  return `mm2-offsets.${alias.trim() || "<source alias>"}.internal`;
}

/**
 * Server field errors (``source_alias``, or ``from_mirrormaker2.source_alias`` for a take-over)
 * placed on the form's fields; anything else (``detail``) under the empty key.
 */
export function mirrorErrors(fieldErrors: Record<string, string[]>): Partial<Record<MirrorField | "", string>> {
  const out: Partial<Record<MirrorField | "", string>> = {};
  for (const [path, messages] of Object.entries(fieldErrors)) {
    const name = path.replace(/^from_mirrormaker2\./, "");
    const key: MirrorField | "" = (MIRROR_FIELDS as string[]).includes(name) ? (name as MirrorField) : "";
    out[key] = [out[key], ...messages].filter(Boolean).join(" ");
  }
  return out;
}

export type PreviewRow = {
  key: string;
  topic: string;
  partition: number;
  /** MM2's last copied offset (null: MM2 has none for this partition). */
  mirror: number | null;
  /** The channel's next offset now (null: none yet). */
  channel: number | null;
  /** After the move: the channel's next offset (take-over) or MM2's last copied (hand-back). */
  after: number | null;
};

/** One row per partition either side knows, sorted by topic and partition. */
export function previewRows(preview: MirrorPreview, direction: Direction): PreviewRow[] {
  const rows = new Map<string, PreviewRow>();
  const row = (topic: string, partition: number): PreviewRow => {
    const key = `${topic}/${partition}`;
    let found = rows.get(key);
    if (!found) {
      found = { key, topic, partition, mirror: null, channel: null, after: null };
      rows.set(key, found);
    }
    return found;
  };
  for (const item of preview.mirrormaker2)
    row(item.partition.topic, item.partition.partition).mirror = item.offset.offset;
  for (const item of preview.channel) row(item.partition.topic, item.partition.partition).channel = item.offset.offset;
  for (const found of rows.values()) {
    if (direction === "takeover") found.after = found.mirror !== null ? found.mirror + 1 : found.channel;
    else found.after = found.channel !== null ? found.channel - 1 : found.mirror;
  }
  return [...rows.values()].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
}
