/** The offsets panel's logic: from what the user typed to a PATCH body, and back from errors. */

import type { OffsetsBody, SourceOffset } from "../api/types";

/** What a user typed for each partition, keyed by ``topic/partition``; blank means unchanged. */
export type OffsetDrafts = Record<string, string>;

export function partitionKey(offset: SourceOffset): string {
  return `${offset.partition.topic}/${offset.partition.partition}`;
}

export type BuildResult = { ok: true; body: OffsetsBody } | { ok: false; errors: Record<string, string> };

/**
 * The PATCH body for the partitions whose draft is set and differs from the current offset:
 * only those move (the server keeps the others). Each draft must be a whole number >= 0.
 */
export function buildOffsetsBody(current: SourceOffset[], drafts: OffsetDrafts): BuildResult {
  const errors: Record<string, string> = {};
  const offsets: SourceOffset[] = [];
  for (const row of current) {
    const key = partitionKey(row);
    const text = (drafts[key] ?? "").trim();
    if (text === "") continue;
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
      errors[key] = "A whole number, 0 or more: the next offset to read.";
      continue;
    }
    const value = Number(text);
    if (value === row.offset.offset) continue;
    offsets.push({ partition: { ...row.partition }, offset: { offset: value } });
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  if (offsets.length === 0) return { ok: false, errors: { "": "Type a new offset for at least one partition." } };
  return { ok: true, body: { offsets } };
}

/**
 * Server field errors (``offsets[0].offset.offset``) placed next to the partition they are
 * about; anything else (``detail``, ``offsets``) under the empty key.
 */
export function errorsByPartition(body: OffsetsBody, fieldErrors: Record<string, string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [path, messages] of Object.entries(fieldErrors)) {
    const match = /^offsets\[(\d+)\]/.exec(path);
    const row = match ? body.offsets[Number(match[1])] : undefined;
    const key = row ? partitionKey(row) : "";
    out[key] = [out[key], ...messages].filter(Boolean).join(" ");
  }
  return out;
}
